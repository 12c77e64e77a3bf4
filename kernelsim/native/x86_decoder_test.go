//go:build linux && amd64

package native

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
)

// randomInsn builds a structured random byte string: legacy prefixes, a REX
// prefix, an escape and random opcode, ModRM, SIB, displacement and immediate
// bytes.
func randomInsn(rng *rand.Rand) []byte {
	var b []byte
	pfx := []byte{0x66, 0x67, 0xF2, 0xF3, 0xF0, 0x2E, 0x3E, 0x26, 0x64, 0x65, 0x36}
	for range rng.IntN(3) {
		b = append(b, pfx[rng.IntN(len(pfx))])
	}
	if rng.IntN(2) == 0 {
		b = append(b, 0x40|byte(rng.IntN(16)))
	}
	switch rng.IntN(6) {
	case 0:
		b = append(b, 0x0F)
	case 1:
		b = append(b, 0x0F, 0x38)
	case 2:
		b = append(b, 0x0F, 0x3A)
	}
	for len(b) < 15 {
		b = append(b, byte(rng.Uint32()))
	}
	return b
}

// TestDecoderVsCPU compares decode's lengths with the CPU's on structured
// random bytes (KBOOST_ORACLE=1). It logs every disagreement on instructions
// the CPU accepted; set KBOOST_DECODER_STRICT=1 to make them fail the test.
func TestDecoderVsCPU(t *testing.T) {
	oracle(t)
	s, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(11, 12))
	const n = 20000
	bs := make([][]byte, n)
	for i := range bs {
		bs[i] = randomInsn(rng)
	}
	out := make([]HWLen, n)
	if err := s.HWLengths(bs, out); err != nil {
		t.Fatal(err)
	}
	// the decoder's lengths as hints must not change the answers
	hints := make([]int, n)
	for i, b := range bs {
		if inst, err := decode.Decode(b, decode.Mode64, 0); err == nil {
			hints[i] = inst.Len
		}
	}
	outH := make([]HWLen, n)
	if err := s.HWLengthsHint(bs, hints, outH); err != nil {
		t.Fatal(err)
	}
	probes, probesH := 0, 0
	for i := range bs {
		probes += out[i].Probes
		probesH += outH[i].Probes
		if out[i].N != outH[i].N || out[i].Outcome != outH[i].Outcome {
			t.Errorf("% x: %d %v without hint, %d %v with hint %d", bs[i], out[i].N, out[i].Outcome, outH[i].N, outH[i].Outcome, hints[i])
		}
	}
	t.Logf("probes: %d without hints, %d with the decoder's lengths as hints", probes, probesH)
	var agree, disagree, rejected, other int
	for i, b := range bs {
		if out[i].Outcome == LenRejected {
			rejected++
			continue
		}
		if out[i].Outcome > LenRejected {
			other++
			continue
		}
		inst, derr := decode.Decode(b, decode.Mode64, 0)
		switch {
		case derr == nil && inst.Len == out[i].N:
			agree++
		default:
			disagree++
			var de *decode.DecodeError
			why := ""
			if errors.As(derr, &de) {
				why = de.Error()
			}
			if disagree <= 30 {
				t.Logf("% x: CPU %d (%v), decoder %d %s", b[:max(out[i].N, inst.Len)], out[i].N, out[i].Outcome, inst.Len, why)
			}
		}
	}
	t.Logf("%d strings: %d agree, %d disagree, %d rejected by the CPU (#UD), %d other", n, agree, disagree, rejected, other)
	if disagree > 0 && getenv("KBOOST_DECODER_STRICT") == "1" {
		t.Errorf("%d length disagreements", disagree)
	}
}

func getenv(k string) string { return os.Getenv(k) }
