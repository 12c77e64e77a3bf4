package kernelsim

import (
	"encoding/binary"
	"testing"
)

// FuzzT32Value checks the Thumb instruction reader on any bytes: no panic,
// a length of 2 or 4 that fits the input, a value that reads back as the
// same bytes, and the system-call scan staying inside the image.
func FuzzT32Value(f *testing.F) {
	for _, s := range [][]byte{{0x88, 0x18}, {0x01, 0xeb, 0x02, 0x00}, {0xdf, 0xf8}, {0x00, 0xdf}, {0xdf, 0xf8, 0x04, 0xf0, 0x00, 0xbf}, {}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, ok := T32Value(b)
		if !ok {
			if len(b) >= 4 || (len(b) >= 2 && binary.LittleEndian.Uint16(b)>>11 < 0x1D) {
				t.Fatalf("% x: refused", b)
			}
			return
		}
		if n != 2 && n != 4 || n > len(b) {
			t.Fatalf("% x: length %d", b, n)
		}
		if got := T32Bytes(v); string(got) != string(b[:n]) {
			t.Fatalf("% x: value %#x reads back as % x", b, v, got)
		}
		if j := T32SysCallAt(b); j >= len(b) || j < -1 || j >= 0 && binary.LittleEndian.Uint16(b[j:])&0xFF00 != 0xDF00 {
			t.Fatalf("% x: system call at %d", b, j)
		}
	})
}

// TestT32JumpTo checks the Thumb jump at both halfword alignments: the
// literal lies where ldr.w pc, [pc, #imm] reads it (Align(PC, 4) + imm,
// PC = at + 4, as the architecture defines the Thumb PC) and holds the
// target.
func TestT32JumpTo(t *testing.T) {
	for _, at := range []uint64{0x1000, 0x1002} {
		b := T32JumpTo(at, 0x12345679)
		if h := binary.LittleEndian.Uint16(b); h != 0xF8DF {
			t.Fatalf("at %#x: first halfword %#x", at, h)
		}
		imm := uint64(binary.LittleEndian.Uint16(b[2:]) & 0xFFF)
		lit := (at+4)&^3 + imm - at
		if lit+4 != uint64(len(b)) || binary.LittleEndian.Uint32(b[lit:]) != 0x12345679 || (at+lit)%4 != 0 {
			t.Errorf("at %#x: % x: literal at +%d", at, b, lit)
		}
		if T32SysCallAt(append(b[:len(b):len(b)], 0x00, 0xDF)) != -1 {
			t.Errorf("at %#x: the scan went past the jump", at)
		}
	}
}
