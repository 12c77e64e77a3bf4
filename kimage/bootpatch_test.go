package kimage

import (
	"encoding/binary"
	"testing"
)

// The arm64 boot patcher rewrites the NOP before each ftrace record, and
// nothing else: not a word that is no longer a NOP, not a word outside the
// bytes given.
func TestFtraceInitPatcherWords(t *testing.T) {
	const base = 0xffff800008010000
	p := &Patcher{words: []uint64{base, base + 0x40, base + 0x80, base + 0x100}, from: a64NOP, to: a64MovX9LR}
	b := make([]byte, 0xC0)
	for i := 0; i < len(b); i += 4 {
		binary.LittleEndian.PutUint32(b[i:], a64NOP)
	}
	binary.LittleEndian.PutUint32(b[0x80:], 0xD503233F) // paciasp: left alone
	if n := p.Patch(base, b); n != 2 {
		t.Fatalf("patched %d words, want 2", n)
	}
	for off := 0; off < len(b); off += 4 {
		w := binary.LittleEndian.Uint32(b[off:])
		want := uint32(a64NOP)
		switch off {
		case 0, 0x40:
			want = a64MovX9LR
		case 0x80:
			want = 0xD503233F
		}
		if w != want {
			t.Errorf("+%#x: %08x, want %08x", off, w, want)
		}
	}
	// A window starting inside the list.
	c := make([]byte, 8)
	binary.LittleEndian.PutUint32(c[4:], a64NOP)
	if n := p.Patch(base+0x3c, c); n != 1 || binary.LittleEndian.Uint32(c[4:]) != a64MovX9LR {
		t.Errorf("window at +0x3c: %d patched, % x", n, c)
	}
}
