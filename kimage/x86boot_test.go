package kimage

import (
	"bytes"
	"testing"
)

// optimize_nops over a site: a run of 0x90 becomes add_nops of its length,
// a single 0x90 stays, other instructions are stepped over whole.
func TestX86OptimizeNops(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte{0x90, 0x90, 0x90}, []byte{0x0f, 0x1f, 0x00}},
		{[]byte{0x90}, []byte{0x90}},
		{[]byte{0x48, 0x89, 0xe5, 0x90, 0x90}, []byte{0x48, 0x89, 0xe5, 0x66, 0x90}},
		// a 0x90 inside an instruction's immediate is not a NOP
		{[]byte{0xb8, 0x90, 0x90, 0x90, 0x90, 0x90}, []byte{0xb8, 0x90, 0x90, 0x90, 0x90, 0x90}},
		{bytes.Repeat([]byte{0x90}, 10), append(append([]byte{}, x86Nops[8]...), 0x66, 0x90)},
	} {
		got := append([]byte(nil), c.in...)
		optimizeNops(got)
		if !bytes.Equal(got, c.want) {
			t.Errorf("optimizeNops(% x) = % x, want % x", c.in, got, c.want)
		}
	}
}

func TestX86FeaturesSet(t *testing.T) {
	c := QEMU64()
	if !c.Features.Has(X86FeatureAlways) || c.Features.Has(X86FeatureXenPV) || c.CPUs != 1 {
		t.Errorf("qemu64: %+v", c)
	}
}
