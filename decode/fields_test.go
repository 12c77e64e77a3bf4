package decode

import (
	"math/rand/v2"
	"testing"
)

// TestFieldsTile: for every instruction that decodes, the fields with bytes
// cover the instruction exactly, in order (no gap, no overlap, nothing past
// its end), and every field with bytes but the unnamed prefix span says
// something. Random bytes in every arch.
func TestFieldsTile(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var b [16]byte
	for _, a := range Arches {
		n := 0
		for try := 0; try < 200000 && n < 20000; try++ {
			for k := range b {
				b[k] = byte(rng.Uint32())
			}
			var in Inst
			if a.Decode(&in, b[:], 0x1000) != nil {
				continue
			}
			n++
			at := 0
			for _, f := range in.Fields() {
				if f.Len == 0 {
					continue
				}
				if f.Off != at || f.Len < 0 {
					t.Fatalf("%s % x: field %s at +%d len %d, want +%d (fields %+v)", a.Name, in.Bytes(), f.Name, f.Off, f.Len, at, in.Fields())
				}
				if f.Text == "" && f.Name != "prefixes" {
					t.Fatalf("%s % x: field %s has no text", a.Name, in.Bytes(), f.Name)
				}
				at += f.Len
			}
			if at != in.Len {
				t.Fatalf("%s % x: fields cover %d of %d bytes (fields %+v)", a.Name, in.Bytes(), at, in.Len, in.Fields())
			}
		}
		if n < 1000 {
			t.Errorf("%s: only %d instructions decoded", a.Name, n)
		}
	}
}
