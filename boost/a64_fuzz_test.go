package boost

import (
	"testing"

	"github.com/kboost/kboost/decode"
)

// FuzzClassifyA64: no panic and well-formed decisions on any bytes under the
// arm64 policies, via ClassifyBytes, Explain, Classify and the function audit
// (every offset, aligned or not); Explain agrees with Classify.
func FuzzClassifyA64(f *testing.F) {
	for _, s := range [][]byte{
		a64Bytes(0xD503201F), a64Bytes(0xC85F7C20, 0xD503201F), a64Bytes(0xD503245F, 0xAA1E03E9, 0xD503201F, 0xD65F03C0),
		a64Bytes(0x54000010), a64Bytes(0x1C000040), {0x1f, 0x20, 0x03}, a64Bytes(0xD42000A0, 0xD53B4220)} {
		f.Add(s, uint8(0))
	}
	pols := []*Policy{linux61ARM64, uprobesARM64, boostARM64}
	f.Fuzz(func(t *testing.T, b []byte, sel uint8) {
		if len(b) > 256 {
			b = b[:256]
		}
		for _, p := range pols {
			env := p.DefaultEnv()
			env.Config.Preemption = sel&1 != 0
			env.Config.PostHandler = sel&2 != 0
			env.InferNotrace = sel&4 != 0
			env.SlotAddr = uint64(sel>>3) << 27
			addr := uint64(0xffff800008000000) + uint64(sel&3)
			d := p.ClassifyBytesEnv(b, decode.ModeA64, addr, env)
			checkDecision(t, p.Name+" bytes", &d)
			steps, d2 := p.ExplainBytes(b, decode.ModeA64, addr, env)
			if d2.Verdict != d.Verdict || d2.Errno != d.Errno || len(steps) == 0 {
				t.Fatalf("%s: Explain %v/%v differs from Classify %v/%v", p.Name, d2.Verdict, d2.Errno, d.Verdict, d.Errno)
			}
			in, _ := decode.Decode(b, decode.ModeA64, addr)
			d = p.Classify(&in, env)
			checkDecision(t, p.Name+" inst", &d)
			if len(b) == 0 {
				continue
			}
			a, err := auditA64Test(p, env, Func{Name: "fz", Addr: 0xffff800008000000, Bytes: b})
			if err != nil {
				t.Fatalf("%s: audit: %v", p.Name, err)
			}
			for off := uint64(0); off < uint64(len(b)); off++ {
				d, err := a.At(off)
				if err != nil {
					t.Fatalf("%s: At(%d): %v", p.Name, off, err)
				}
				checkDecision(t, p.Name+" At", &d)
				_, d2, err := explainAtA64(a, off)
				if err != nil || d2.Verdict != d.Verdict || d2.Errno != d.Errno {
					t.Fatalf("%s: ExplainAt(%d) %v/%v, At %v/%v (%v)", p.Name, off, d2.Verdict, d2.Errno, d.Verdict, d.Errno, err)
				}
			}
		}
	})
}
