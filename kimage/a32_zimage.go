package kimage

import (
	"bytes"
	"encoding/binary"
)

// 32-bit ARM kernels (Debian armmp) boot from a zImage: a small
// position-independent decompressor followed by the compressed kernel image
// ("piggy" data). The zImage header has the magic 0x016f2818 at offset 0x24,
// then the start and end of the image.

const (
	armZImageMagicOff = 0x24
	armZImageMagic    = 0x016F2818
	// xzFilterARM is the .xz filter ID of the ARM (A32 BL) branch converter,
	// which the kernel's xz_wrap.sh uses for arm.
	xzFilterARM = 0x07
)

// IsARMZImage reports whether b starts like a 32-bit ARM zImage.
func IsARMZImage(b []byte) bool {
	return len(b) >= 0x30 && binary.LittleEndian.Uint32(b[armZImageMagicOff:]) == armZImageMagic
}

// ExtractARMZImage returns the decompressed kernel Image of a 32-bit ARM
// zImage: the raw bytes that are loaded at PAGE_OFFSET + TEXT_OFFSET (for
// Debian armmp 0xc0008000), starting with the kernel's entry code. The zImage
// header does not say where the payload is, so the compressed stream is found
// by its magic (xz with the ARM branch filter, gzip); a candidate that does
// not decompress (the decompressor's own copy of a magic, in its strings) is
// skipped. The error wraps ErrFormat when there is no payload.
func ExtractARMZImage(b []byte) ([]byte, error) {
	if !IsARMZImage(b) {
		return nil, &FormatError{What: "ARM zImage", Off: armZImageMagicOff, Why: "no zImage magic 0x016f2818 at offset 0x24", Err: ErrFormat}
	}
	var firstErr error
	for _, m := range [][]byte{xzMagic, {0x1F, 0x8B, 0x08}} {
		for off := 0; ; {
			i := bytes.Index(b[off:], m)
			if i < 0 {
				break
			}
			p := b[off+i:]
			off += i + 1
			out, err := decompress(p, sniffCompression(p), 4*len(b))
			if err == nil && len(out) > 0 {
				return out, nil
			}
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		return nil, &FormatError{What: "ARM zImage", Off: -1, Why: "no compressed payload decompresses: " + firstErr.Error(), Err: ErrFormat}
	}
	return nil, &FormatError{What: "ARM zImage", Off: -1, Why: "no xz or gzip payload found", Err: ErrFormat}
}

// unBCJARM reverses the xz ARM branch converter in place: the encoder turned
// the 24-bit word offset of every BL (a word whose top byte is 0xEB, at a
// 4-aligned position) into an absolute target, counting positions from start.
func unBCJARM(b []byte, start uint32) {
	for i := 0; i+4 <= len(b); i += 4 {
		if b[i+3] != 0xEB {
			continue
		}
		src := uint32(b[i]) | uint32(b[i+1])<<8 | uint32(b[i+2])<<16
		src <<= 2
		dest := (src - (start + uint32(i) + 8)) >> 2
		b[i] = byte(dest)
		b[i+1] = byte(dest >> 8)
		b[i+2] = byte(dest >> 16)
	}
}
