package cfi

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/kboost/kboost/decode"
)

// libcPLT is the start of a C library's .eh_frame (loaded at 0x1a8f40): its
// CIE (CFA rsp+8, return address at CFA-8) and the FDE of its PLT, whose
// CFA after 0x26010 is the expression rsp+8 + 8*((rip&15) >= 11) (the
// second half of each 16-byte PLT entry has pushed one word).
const libcPLT = "1400000000000000017a5200017810011b0c070890010000240000001c000000a0d0e7ff60030000000e10460e184a0f0b770880003f1a3b2a33242200000000"

func plt(t *testing.T) *Table {
	b, _ := hex.DecodeString(libcPLT)
	tab, err := New(Section{Data: b, Addr: 0x1a8f40}, Section{}, 8)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestStepPLT steps through each row of the PLT's FDE with the values the
// DWARF instructions (decoded by hand above) give.
func TestStepPLT(t *testing.T) {
	tab := plt(t)
	a := For(decode.X86_64)
	const sp = 0x7ff0
	for _, c := range []struct {
		pc, cfa uint64
	}{
		{0x26000, sp + 16}, {0x26005, sp + 16}, {0x26006, sp + 24},
		{0x26016, sp + 8},  // 0x16&15 = 6 < 11
		{0x2601c, sp + 16}, // 0x1c&15 = 12 >= 11
		{0x2635f, sp + 16},
	} {
		var r Regs
		r.Set(a.SP, sp)
		r.Set(16, c.pc)
		r.Set(a.FP, 0x1234)
		mem := func(addr uint64) (uint64, bool) { return addr ^ 0xabc, addr == c.cfa-8 }
		pc, signal, end, err := tab.Step(a, c.pc, &r, mem)
		if err != nil || signal || end {
			t.Fatalf("0x%x: %v signal=%v end=%v", c.pc, err, signal, end)
		}
		if pc != (c.cfa-8)^0xabc {
			t.Errorf("0x%x: return address 0x%x, want the word at CFA-8 = 0x%x", c.pc, pc, c.cfa-8)
		}
		if v, _ := r.Get(a.SP); v != c.cfa {
			t.Errorf("0x%x: caller's rsp 0x%x, want the CFA 0x%x", c.pc, v, c.cfa)
		}
		if v, ok := r.Get(a.FP); !ok || v != 0x1234 {
			t.Errorf("0x%x: rbp %x %v, want unchanged", c.pc, v, ok)
		}
	}
	var r Regs
	if _, _, _, err := tab.Step(a, 0x26360, &r, nil); !errors.Is(err, ErrNoFDE) {
		t.Errorf("0x26360 (past the FDE, in one without rows): %v", err)
	}
	if _, _, _, err := tab.Step(a, 0x25fff, &r, nil); !errors.Is(err, ErrNoFDE) {
		t.Errorf("0x25fff: %v, want ErrNoFDE", err)
	}
	if _, _, _, err := tab.Step(a, 0x26000, &r, nil); !errors.Is(err, ErrStack) {
		t.Errorf("no rsp: %v, want ErrStack", err)
	}
}

// TestMalformed: truncations and corruptions of a real table are typed
// errors.
func TestMalformed(t *testing.T) {
	b, _ := hex.DecodeString(libcPLT)
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"truncated", b[:0x30]},
		{"length past the end", append([]byte{0xff, 0, 0, 0}, b[4:]...)},
		{"CIE pointer outside", func() []byte { x := append([]byte{}, b...); x[0x1c] = 0x80; return x }()},
		{"version 2", func() []byte { x := append([]byte{}, b...); x[8] = 2; return x }()},
	} {
		_, err := New(Section{Data: c.b, Addr: 0x1000}, Section{}, 8)
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want a *FormatError", c.name, err)
		}
	}
}

// FuzzTable: any .eh_frame and .eh_frame_hdr bytes index and step without
// panicking; errors are typed.
func FuzzTable(f *testing.F) {
	b, _ := hex.DecodeString(libcPLT)
	f.Add(b, []byte{}, uint64(0x26016), false)
	f.Add(b, []byte{1, 0x1b, 0x03, 0x3b, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint64(0x26000), true)
	f.Fuzz(func(t *testing.T, frame, hdr []byte, addr uint64, i386 bool) {
		a, ptr := For(decode.X86_64), 8
		if i386 {
			a, ptr = For(decode.I386), 4
		}
		tab, err := New(Section{Data: frame, Addr: 0x1a8f40}, Section{Data: hdr, Addr: 0x1a8f00}, ptr)
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var r Regs
		for i := 0; i < a.Regs; i++ {
			r.Set(i, addr+uint64(i)*8)
		}
		mem := func(x uint64) (uint64, bool) { return x * 3, x%7 != 0 }
		for _, at := range []uint64{addr, addr + 1, 0x26000, 0x26016} {
			_, _, _, err := tab.Step(a, at, &r, mem)
			if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrNoFDE) && !errors.Is(err, ErrStack) && !errors.Is(err, decode.ErrNotSupported) {
				t.Fatalf("0x%x: untyped error %v", at, err)
			}
		}
	})
}
