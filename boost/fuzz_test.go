package boost

import (
	"testing"

	"github.com/kboost/kboost/decode"
)

func checkDecision(t *testing.T, where string, d *Decision) {
	t.Helper()
	if d.Verdict >= numVerdicts {
		t.Fatalf("%s: verdict %d", where, d.Verdict)
	}
	if (d.Verdict == Reject) != (d.Errno != 0) {
		t.Fatalf("%s: verdict %v with errno %v", where, d.Verdict, d.Errno)
	}
	if len(d.Reasons) == 0 {
		t.Fatalf("%s: no reasons for %v", where, d.Verdict)
	}
	for _, r := range append(append([]Reason{}, d.Reasons...), d.OptReasons...) {
		if _, ok := RuleByID(r.Rule); !ok {
			t.Fatalf("%s: unregistered rule %q", where, r.Rule)
		}
	}
	if d.SlotLen < 0 || d.SlotLen > SlotMax || d.Len < 0 || d.Len > 20 {
		t.Fatalf("%s: slot %d len %d", where, d.SlotLen, d.Len)
	}
	if d.Optimizable && (d.OptLen < 5 || d.OptLen > 19) {
		t.Fatalf("%s: optimizable with %d bytes", where, d.OptLen)
	}
}

// FuzzClassify: no panic and well-formed decisions on any bytes, in both modes,
// under every policy, via Classify, ClassifyBytes, Explain and AuditFunc/At.
func FuzzClassify(f *testing.F) {
	for _, s := range [][]byte{{0x90}, {0xc3}, {0x0f, 0x0b, 0x78, 0x65, 0x6e, 0x0f, 0xa2}, {0xc5, 0xf8, 0x77},
		{0x48, 0x8b, 0x05, 1, 2, 3, 4}, {0xff, 0x24, 0xc5, 0, 0, 0, 0}, {0x40, 0x45}, {0x26, 0x2e, 0x36, 0x3e, 0x64, 0x90},
		{0xf3, 0x0f, 0x1e, 0xfa, 0x0f, 0x1f, 0x44, 0, 0, 0x74, 0xfe, 0xc3}, testFuncBytes} {
		f.Add(s, uint8(0))
	}
	pols := Policies()
	f.Fuzz(func(t *testing.T, b []byte, sel uint8) {
		if len(b) > 64 {
			b = b[:64]
		}
		for _, m := range []decode.Mode{decode.Mode64, decode.Mode32} {
			for _, p := range pols {
				env := p.DefaultEnv()
				env.Config.Preemption = sel&1 != 0
				env.Config.PostHandler = sel&2 != 0
				env.Config.IBT = sel&4 != 0
				env.InferNotrace = sel&8 != 0
				env.SlotAddr = uint64(sel) << 36
				env.Mode = m
				d := p.ClassifyBytesEnv(b, m, 0xffffffff81000000, env)
				checkDecision(t, p.Name+" bytes", &d)
				steps, d2 := p.ExplainBytes(b, m, 0xffffffff81000000, env)
				if d2.Verdict != d.Verdict || d2.Errno != d.Errno || len(steps) == 0 {
					t.Fatalf("%s: Explain %v/%v differs from Classify %v/%v", p.Name, d2.Verdict, d2.Errno, d.Verdict, d.Errno)
				}
				in, _ := decode.Decode(b, m, 0x401000)
				d = p.Classify(&in, env)
				checkDecision(t, p.Name+" inst", &d)
				a, err := p.AuditFunc(Func{Name: "fz", Addr: 0xffffffff81000000, Bytes: b}, env)
				if err != nil {
					if p.Supports(m) && len(b) > 0 {
						t.Fatalf("%s: AuditFunc: %v", p.Name, err)
					}
					continue
				}
				for off := uint64(0); off < uint64(len(b)); off++ {
					d, err := a.At(off)
					if err != nil {
						t.Fatalf("%s: At(%d): %v", p.Name, off, err)
					}
					checkDecision(t, p.Name+" At", &d)
				}
				if _, err := a.At(uint64(len(b))); err == nil {
					t.Fatal("At(size) accepted")
				}
			}
		}
	})
}
