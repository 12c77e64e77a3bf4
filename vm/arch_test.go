package vm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

// fakePhys is physical memory for page-table walks.
type fakePhys map[uint64]uint32

func (m fakePhys) read(pa uint64, n int) ([]byte, error) {
	if n != 4 || pa%4 != 0 {
		return nil, fmt.Errorf("read of %d bytes at %#x", n, pa)
	}
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, m[pa])
	return b, nil
}

func TestARMShortWalk(t *testing.T) {
	const ttb = 0x40204000
	m := fakePhys{
		ttb + 0xBF0*4:       0x4F001000 | 1,         // 0xbf000000: a second-level table at 0x4f001000
		0x4F001000 + 0x00*4: 0x4E123000 | 2 | 1,     // small page (XN bit set)
		0x4F001000 + 0x01*4: 0x4E450000 | 1,         // large page
		ttb + 0xC02*4:       0x40200000 | 2,         // 0xc0200000: a section
		ttb + 0xD0A*4:       0x7F000000 | 2 | 1<<18, // 0xd0a00000: in a supersection
	}
	for va, want := range map[uint64]uint64{
		0xBF000123: 0x4E123123,
		0xBF001ABC: 0x4E451ABC,
		0xC0208000: 0x40208000,
		0xD0ABCDEF: 0x7FABCDEF,
	} {
		if got, err := ARMShortWalk(m.read, ttb, va); err != nil || got != want {
			t.Errorf("%#x -> %#x, %v; want %#x", va, got, err, want)
		}
	}
	var te *TranslationError
	for _, va := range []uint64{0xBF002000, 0x10000000, 0x100000000} {
		if _, err := ARMShortWalk(m.read, ttb, va); !errors.As(err, &te) {
			t.Errorf("%#x: %v, want a TranslationError", va, err)
		}
	}
}

func FuzzARMShortWalk(f *testing.F) {
	f.Add(uint32(0x4F001001), uint32(0x4E123003), uint64(0xBF000123))
	f.Fuzz(func(t *testing.T, l1, l2 uint32, va uint64) {
		read := func(pa uint64, n int) ([]byte, error) {
			b := make([]byte, n)
			if pa >= 0x40204000 && pa < 0x40208000 {
				binary.LittleEndian.PutUint32(b, l1)
			} else {
				binary.LittleEndian.PutUint32(b, l2)
			}
			return b, nil
		}
		if pa, err := ARMShortWalk(read, 0x40204000, va); err == nil && (pa > 0xFFFFFFFF || pa&0xFFF != va&0xFFF) {
			t.Fatalf("%#x -> %#x", va, pa)
		}
	})
}
