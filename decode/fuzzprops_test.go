package decode_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kboost/kboost/decode"
)

// decodeSentinels are the errors a *decode.DecodeError may wrap.
var decodeSentinels = []error{decode.ErrInvalid, decode.ErrTruncated, decode.ErrTooLong, decode.ErrMode}

// checkTypedDecodeError fails unless err is a *decode.DecodeError wrapping a
// sentinel, with a length of at least 1 for non-empty input.
func checkTypedDecodeError(t *testing.T, where string, b []byte, err error) {
	t.Helper()
	var de *decode.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%s [% x]: error %T %v is not a *decode.DecodeError", where, b, err, err)
	}
	for _, s := range decodeSentinels {
		if errors.Is(err, s) {
			if len(b) > 0 && de.Len < 1 {
				t.Fatalf("%s [% x]: error %v with Len %d", where, b, err, de.Len)
			}
			return
		}
	}
	t.Fatalf("%s [% x]: error %v wraps no sentinel", where, b, err)
}

// canonical clears the bytes past the instruction, which a decoder may copy
// from the input but which are not part of it.
func canonical(in decode.Inst) decode.Inst {
	for i := max(in.Len, 0); i < len(in.Raw); i++ {
		in.Raw[i] = 0
	}
	return in
}

// FuzzDecodeStable, for every architecture: decoding into a used Inst gives
// what a fresh Decode gives (no state leaks from the previous instruction);
// the length is 1..MaxInsnLen and within the input; an instruction decodes
// the same from exactly its own bytes (its length never depends on the bytes
// after it) and formats the same; errors are typed.
func FuzzDecodeStable(f *testing.F) {
	for _, s := range [][]byte{{0x90}, {0x48, 0x8b, 0x05, 1, 2, 3, 4}, {0x66, 0xe8, 1, 2, 3, 4}, {0xc4, 0xe2, 0x79, 0x18, 0x05, 0, 0, 0, 0},
		{0x62, 0xf1, 0x7c, 0x48, 0x28, 0xc1}, {0x0f, 0x0f, 0xc1, 0xb4}, {0x1f, 0x20, 0x03, 0xd5}, {0xfe, 0xff, 0xff, 0xea}, {0x2d, 0xe9, 0xf0, 0x4f}} {
		f.Add(s, []byte{0xc4, 0xe3, 0x7d, 0x18, 0xc1, 1, 0xc3}, uint8(0))
	}
	f.Fuzz(func(t *testing.T, b, prev []byte, sel uint8) {
		a := decode.Arches[int(sel)%len(decode.Arches)]
		addr := uint64(0x1000_0000) + uint64(sel>>3)*uint64(a.InsnAlign)
		var used decode.Inst
		_ = a.Decode(&used, prev, addr+0x100)
		err := a.Decode(&used, b, addr)
		fresh, ferr := decode.Decode(b, a.Mode, addr)
		if (err == nil) != (ferr == nil) || !reflect.DeepEqual(canonical(used), canonical(fresh)) {
			t.Fatalf("%s [% x]: after [% x] got %+v (%v), fresh %+v (%v)", a.Name, b, prev, used, err, fresh, ferr)
		}
		if ferr != nil {
			checkTypedDecodeError(t, a.Name, b, ferr)
			return
		}
		if fresh.Len < 1 || fresh.Len > a.MaxInsnLen || fresh.Len > len(b) {
			t.Fatalf("%s [% x]: Len %d", a.Name, b, fresh.Len)
		}
		own, oerr := decode.Decode(b[:fresh.Len], a.Mode, addr)
		if oerr != nil || !reflect.DeepEqual(canonical(own), canonical(fresh)) {
			t.Fatalf("%s [% x]: from its own %d bytes %+v (%v), from the input %+v", a.Name, b, fresh.Len, own, oerr, fresh)
		}
		if x, y := decode.Format(&own, nil), decode.Format(&fresh, nil); x != y {
			t.Fatalf("%s [% x]: formats as %q from its own bytes, %q from the input", a.Name, b, x, y)
		}
	})
}

// FuzzSweep: a linear sweep in any architecture, with any symbol starts,
// visits contiguous instructions (restarting only at a start), each one what
// Decode gives at its address, and ends at the end of the code.
func FuzzSweep(f *testing.F) {
	f.Add([]byte{0x55, 0x48, 0x89, 0xe5, 0xe8, 0, 0, 0, 0, 0x5d, 0xc3, 0x0f}, uint8(0), uint16(0x0010))
	f.Add([]byte{0x1f, 0x20, 0x03, 0xd5, 0xc0, 0x03, 0x5f, 0xd6, 0x00}, uint8(2), uint16(0))
	f.Add([]byte{0x10, 0xb5, 0x2d, 0xe9, 0xf0, 0x4f, 0x08, 0xbf, 0x70, 0x47}, uint8(4), uint16(0x0104))
	f.Fuzz(func(t *testing.T, code []byte, sel uint8, startBits uint16) {
		if len(code) > 256 {
			code = code[:256]
		}
		a := decode.Arches[int(sel)%len(decode.Arches)]
		const base = 0x40_0000
		var starts []uint64
		for i := 0; i < 16; i++ {
			if startBits&(1<<i) != 0 {
				starts = append(starts, base+uint64(i*len(code)/16))
			}
		}
		isStart := map[uint64]bool{}
		for _, s := range starts {
			isStart[s] = true
		}
		next := uint64(base)
		decode.Sweep(a.Mode, code, base, starts, func(in *decode.Inst, err error) bool {
			if in.Addr != next && !isStart[in.Addr] {
				t.Fatalf("%s [% x] starts %x: instruction at %#x, previous ended at %#x", a.Name, code, starts, in.Addr, next)
			}
			off := in.Addr - base
			if off >= uint64(len(code)) {
				t.Fatalf("%s: instruction at %#x past the end", a.Name, in.Addr)
			}
			want, werr := decode.Decode(code[off:], a.Mode, in.Addr)
			if (err == nil) != (werr == nil) || want.Len != in.Len || want.Op != in.Op || want.ArmOp != in.ArmOp {
				t.Fatalf("%s [% x] at %#x: sweep gave %d bytes (%v), Decode %d (%v)", a.Name, code, in.Addr, in.Len, err, want.Len, werr)
			}
			if err != nil {
				checkTypedDecodeError(t, a.Name, code[off:], err)
			}
			next = in.Addr + uint64(max(in.Len, 1))
			return true
		})
		if len(code) > 0 && next < base+uint64(len(code)) {
			t.Fatalf("%s [% x]: sweep stopped at %#x", a.Name, code, next)
		}
	})
}

// FuzzLookupArch: any name either names an architecture, found again by its
// own Name and mode string, or is refused with an error wrapping ErrMode.
func FuzzLookupArch(f *testing.F) {
	for _, s := range []string{"x86-64", "amd64", "i386", "32", "arm64", "armhf", "thumb", "", "mips"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := decode.LookupArch(s)
		m, merr := decode.ParseMode(s)
		if (err == nil) != (merr == nil) {
			t.Fatalf("%q: LookupArch %v, ParseMode %v", s, err, merr)
		}
		if err != nil {
			if !errors.Is(err, decode.ErrMode) || !errors.Is(merr, decode.ErrMode) {
				t.Fatalf("%q: untyped errors %v, %v", s, err, merr)
			}
			return
		}
		if a.Mode != m {
			t.Fatalf("%q: arch %s has mode %v, ParseMode %v", s, a.Name, a.Mode, m)
		}
		for _, name := range []string{a.Name, m.String()} {
			if b, err := decode.LookupArch(name); err != nil || b != a {
				t.Fatalf("%q: %s found again by %q as %v (%v)", s, a.Name, name, b, err)
			}
		}
	})
}

// FuzzSweepSpans: SweepSpans covers the code exactly once, piece after
// piece, never reads past the next symbol start or the end, decodes each
// piece in its span's instruction set and cuts data as objdump does.
func FuzzSweepSpans(f *testing.F) {
	f.Add([]byte{0x10, 0xb5, 0x2d, 0xe9, 0xf0, 0x4f, 0, 0, 0, 0, 0x1e, 0xff, 0x2f, 0xe1, 0x70, 0x47}, uint16(0x0102), uint32(0x00020106))
	f.Fuzz(func(t *testing.T, code []byte, startBits uint16, spanBits uint32) {
		if len(code) > 256 {
			code = code[:256]
		}
		const base = 0x40_0000
		var starts []uint64
		for i := 1; i < 16; i++ {
			if startBits&(1<<i) != 0 {
				if s := base + uint64(i*len(code)/16); len(starts) == 0 || starts[len(starts)-1] != s {
					starts = append(starts, s)
				}
			}
		}
		arches := []*decode.Arch{nil, decode.ARM, decode.Thumb, decode.ARM}
		var spans []decode.Span
		for i := 0; i < 16; i++ {
			s := base + uint64(i*len(code)/16)
			if a := arches[spanBits>>(2*i)&3]; len(spans) == 0 || spans[len(spans)-1].Start < s {
				spans = append(spans, decode.Span{Start: s, Arch: a})
			}
		}
		next := uint64(base)
		decode.SweepSpans(code, base, starts, spans, func(in *decode.Inst, arch *decode.Arch, err error) bool {
			if in.Addr != next {
				t.Fatalf("piece at %#x, previous ended at %#x", in.Addr, next)
			}
			end := in.Addr + uint64(max(in.Len, 1))
			for _, s := range starts {
				if s > in.Addr && s < end {
					t.Fatalf("piece %#x+%d crosses the symbol start %#x", in.Addr, in.Len, s)
				}
			}
			if end > base+uint64(len(code)) {
				t.Fatalf("piece %#x+%d past the end", in.Addr, in.Len)
			}
			if arch == nil {
				if !errors.Is(err, decode.ErrData) || in.Len < 1 || in.Len > 4 || in.Len == 3 {
					t.Fatalf("data piece %#x+%d err %v", in.Addr, in.Len, err)
				}
			} else if in.Mode != arch.Mode {
				t.Fatalf("%#x decoded as %s in a %s span", in.Addr, in.Mode, arch.Name)
			}
			next = end
			return true
		})
		if len(code) > 0 && next != base+uint64(len(code)) {
			t.Fatalf("sweep ended at %#x, code ends at %#x", next, base+len(code))
		}
	})
}
