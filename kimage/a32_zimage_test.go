package kimage

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"testing"
)

// bcjARMEncode is the xz ARM filter's encoder (the .xz format
// specification): a BL's word offset becomes the absolute target.
func bcjARMEncode(b []byte, start uint32) {
	for i := 0; i+4 <= len(b); i += 4 {
		if b[i+3] != 0xEB {
			continue
		}
		src := (uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16) << 2
		dest := (src + start + uint32(i) + 8) >> 2
		b[i], b[i+1], b[i+2] = byte(dest), byte(dest>>8), byte(dest>>16)
	}
}

func TestUnBCJARMRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	orig := make([]byte, 1<<16)
	for i := 0; i < len(orig); i += 4 {
		w := rng.Uint32()
		if i%8 == 0 {
			w = w&0x00FFFFFF | 0xEB000000 // a BL
		}
		binary.LittleEndian.PutUint32(orig[i:], w)
	}
	for _, start := range []uint32{0, 0x8000} {
		b := append([]byte(nil), orig...)
		bcjARMEncode(b, start)
		unBCJARM(b, start)
		for i := range b {
			if b[i] != orig[i] {
				t.Fatalf("start %#x: byte %d differs after a round trip", start, i)
			}
		}
	}
}

func TestExtractARMZImageRejects(t *testing.T) {
	if _, err := ExtractARMZImage(make([]byte, 64)); !errors.Is(err, ErrFormat) {
		t.Errorf("no magic: %v, want ErrFormat", err)
	}
	b := make([]byte, 256)
	binary.LittleEndian.PutUint32(b[armZImageMagicOff:], armZImageMagic)
	if _, err := ExtractARMZImage(b); !errors.Is(err, ErrFormat) {
		t.Errorf("no payload: %v, want ErrFormat", err)
	}
}

func FuzzExtractARMZImage(f *testing.F) {
	b := make([]byte, 128)
	binary.LittleEndian.PutUint32(b[armZImageMagicOff:], armZImageMagic)
	f.Add(append(b, xzMagic...))
	f.Add(append(b, 0x1F, 0x8B, 0x08, 0, 0, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ExtractARMZImage(b)
	})
}
