package kimage

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"hash/crc32"
	"hash/crc64"
)

// The .xz container is parsed here rather than by github.com/ulikunitz/xz because
// kernels compress their payload with a filter chain of x86 BCJ + LZMA2, and that
// library only implements LZMA2 (and keeps a separate window, 32 MiB for the
// kernel). decodeLZMA2 decodes straight into the output and the BCJ step is
// undone by unBCJX86 over the whole output afterwards.

var xzMagic = []byte{0xFD, '7', 'z', 'X', 'Z', 0x00}

// xz filter IDs (the .xz file format specification).
const (
	xzFilterX86   = 0x04
	xzFilterLZMA2 = 0x21
)

// maxDecompressed bounds any single decompressed image (a sanity limit against
// corrupt size fields, well above any real kernel).
const maxDecompressed = 1 << 30

// xzCheckSize maps the stream's check type to its size in bytes.
func xzCheckSize(t byte) int {
	switch {
	case t == 0:
		return 0
	case t <= 3:
		return 4
	case t <= 6:
		return 8
	case t <= 9:
		return 16
	case t <= 12:
		return 32
	}
	return 64
}

// readVarint reads the xz multibyte integer at b[*p].
func readVarint(b []byte, p *int) (uint64, bool) {
	var v uint64
	for i := 0; i < 9; i++ {
		if *p >= len(b) {
			return 0, false
		}
		c := b[*p]
		*p++
		v |= uint64(c&0x7F) << (7 * i)
		if c&0x80 == 0 {
			if c == 0 && i > 0 {
				return 0, false // non-minimal encoding
			}
			return v, true
		}
	}
	return 0, false
}

// decodeXZ decompresses the first .xz stream in src into one buffer (sized from
// sizeHint when > 0) and returns it. Trailing bytes after the stream's index are
// ignored. Supported filter chains: LZMA2, and x86 BCJ followed by LZMA2.
func decodeXZ(src []byte, sizeHint int) ([]byte, error) {
	const what = "xz stream"
	if len(src) < 12 || !bytes.Equal(src[:6], xzMagic) {
		return nil, &FormatError{What: what, Off: 0, Why: "no xz magic", Err: ErrFormat}
	}
	if src[6] != 0 || src[7] > 0x0F {
		return nil, corrupt(what, 6, "bad stream flags %#x %#x", src[6], src[7])
	}
	if crc32.ChecksumIEEE(src[6:8]) != binary.LittleEndian.Uint32(src[8:12]) {
		return nil, corrupt(what, 8, "stream header CRC32 mismatch")
	}
	checkType := src[7]
	checkSize := xzCheckSize(checkType)
	if sizeHint <= 0 {
		sizeHint = 4 * len(src)
	}
	sizeHint = boundHint(sizeHint, len(src))
	out := make([]byte, 0, sizeHint+1) // +1: EOF is seen without growing
	p := 12
	for {
		if p >= len(src) {
			return nil, corrupt(what, int64(p), "missing index")
		}
		if src[p] == 0 {
			break // index indicator: no more blocks
		}
		blockStart := p
		var err error
		out, p, err = decodeXZBlock(src, p, out, checkType, checkSize)
		if err != nil {
			return nil, err
		}
		_ = blockStart
	}
	return out, nil
}

// decodeXZBlock decodes one block starting at src[p], appending to out.
func decodeXZBlock(src []byte, p int, out []byte, checkType byte, checkSize int) ([]byte, int, error) {
	const what = "xz block header"
	start := p
	hsize := (int(src[p]) + 1) * 4
	if p+hsize > len(src) {
		return nil, 0, corrupt(what, int64(p), "header runs past end of input")
	}
	hdr := src[p : p+hsize]
	if crc32.ChecksumIEEE(hdr[:hsize-4]) != binary.LittleEndian.Uint32(hdr[hsize-4:]) {
		return nil, 0, corrupt(what, int64(p), "header CRC32 mismatch")
	}
	flags := hdr[1]
	if flags&0x3C != 0 {
		return nil, 0, corrupt(what, int64(p+1), "reserved block flags set (%#x)", flags)
	}
	q := 2
	body := hdr[:hsize-4]
	var compSize, uncompSize uint64
	hasComp, hasUncomp := flags&0x40 != 0, flags&0x80 != 0
	var ok bool
	if hasComp {
		if compSize, ok = readVarint(body, &q); !ok {
			return nil, 0, corrupt(what, int64(p+q), "bad compressed size")
		}
	}
	if hasUncomp {
		if uncompSize, ok = readVarint(body, &q); !ok {
			return nil, 0, corrupt(what, int64(p+q), "bad uncompressed size")
		}
	}
	nfilters := int(flags&3) + 1
	var bcj, bcjARM, lzma2 bool
	var bcjStart uint32
	var dictProp byte
	for i := 0; i < nfilters; i++ {
		id, ok1 := readVarint(body, &q)
		psize, ok2 := readVarint(body, &q)
		if !ok1 || !ok2 || uint64(q)+psize > uint64(len(body)) {
			return nil, 0, corrupt(what, int64(p+q), "bad filter flags")
		}
		props := body[q : q+int(psize)]
		q += int(psize)
		last := i == nfilters-1
		switch {
		case id == xzFilterLZMA2 && last && psize == 1:
			lzma2, dictProp = true, props[0]
		case (id == xzFilterX86 || id == xzFilterARM) && !last && !bcj && (psize == 0 || psize == 4):
			bcj, bcjARM = true, id == xzFilterARM // ARM BCJ: armhf zImage (zimage_armhf.go)
			if psize == 4 {
				bcjStart = binary.LittleEndian.Uint32(props)
			}
		default:
			return nil, 0, &FormatError{What: what, Off: int64(p), Err: ErrUnsupportedCompression,
				Why: "filter chain is not [x86 BCJ +] LZMA2 (filter id " + hexByte(id) + ")"}
		}
	}
	if !lzma2 {
		return nil, 0, &FormatError{What: what, Off: int64(p), Err: ErrUnsupportedCompression, Why: "no LZMA2 filter"}
	}
	for _, c := range body[q:] {
		if c != 0 {
			return nil, 0, corrupt(what, int64(p+q), "non-zero header padding")
		}
	}
	p += hsize
	if dictProp > 40 {
		return nil, 0, corrupt(what, int64(p), "bad LZMA2 dictionary size %d", dictProp)
	}
	// The dictionary size is not needed: the whole output is the dictionary.
	blockOut := len(out)
	if hasUncomp && uint64(cap(out)-len(out)) < uncompSize && uncompSize < maxDecompressed {
		grown := make([]byte, len(out), len(out)+boundHint(int(uncompSize), len(src))+1)
		copy(grown, out)
		out = grown
	}
	out, consumed, err := decodeLZMA2(src[p:], out, outputLimit(len(src)))
	if err != nil {
		return nil, 0, corrupt("xz LZMA2 data", int64(p+consumed), "%v", err)
	}
	if hasComp && uint64(consumed) != compSize {
		return nil, 0, corrupt("xz LZMA2 data", int64(p), "compressed size %d, header says %d", consumed, compSize)
	}
	data := out[blockOut:]
	if hasUncomp && uint64(len(data)) != uncompSize {
		return nil, 0, corrupt("xz LZMA2 data", int64(p), "uncompressed size %d, header says %d", len(data), uncompSize)
	}
	p += consumed
	for (p-start)%4 != 0 {
		if p >= len(src) || src[p] != 0 {
			return nil, 0, corrupt("xz block padding", int64(p), "bad padding")
		}
		p++
	}
	if p+checkSize > len(src) {
		return nil, 0, corrupt("xz block check", int64(p), "truncated")
	}
	var h hash.Hash
	switch checkType {
	case 1:
		h = crc32.NewIEEE()
	case 4:
		h = crc64.New(crc64.MakeTable(crc64.ECMA))
	case 10:
		h = sha256.New()
	}
	if bcjARM {
		unBCJARM(data, bcjStart)
	} else if bcj {
		unBCJX86(data, bcjStart)
	}
	if h != nil {
		h.Write(data)
		sum := h.Sum(nil)
		want := src[p : p+checkSize]
		if checkType == 1 || checkType == 4 {
			// CRC32 and CRC64 are stored little-endian; Sum gives big-endian.
			for i, j := 0, len(sum)-1; i < j; i, j = i+1, j-1 {
				sum[i], sum[j] = sum[j], sum[i]
			}
		}
		if !bytes.Equal(sum, want) {
			return nil, 0, corrupt("xz block check", int64(p), "integrity check mismatch")
		}
	}
	p += checkSize
	return out, p, nil
}

func hexByte(v uint64) string {
	const digits = "0123456789abcdef"
	if v < 256 {
		return "0x" + string([]byte{digits[v>>4], digits[v&15]})
	}
	return "large"
}

// unBCJX86 reverses the x86 branch-call-jump filter in place. The encoder turned
// the rel32 operand of every plausible E8 (call) / E9 (jmp) into an absolute
// target (operand + position of the next instruction) so that repeated calls to
// one function compress well; here the position is subtracted again.
//
// Which E8/E9 bytes were converted is decided exactly as the encoder decided it:
//   - the operand's top byte must be 0x00 or 0xFF (a small forward/backward
//     displacement);
//   - a 3-bit history records which of the previous three byte positions held an
//     E8/E9 that was NOT converted; some history patterns veto the conversion
//     (when the byte that would be the operand's top byte of a recent candidate
//     also looks like 0x00/0xFF), and an unconverted candidate is pushed into the
//     history.
//   - for a converted operand, the stored value is undone iteratively: while the
//     history is non-empty and the byte at the history-selected position of the
//     result is again 0x00/0xFF, the result is XOR-folded and converted once more.
//   - the result is sign-extended from bit 24, so displacements stay within
//     +-16 MiB as the encoder guaranteed.
//
// The last four bytes of the buffer are never converted. start is the filter's
// start offset (the position of buf[0] in the uncompressed stream).
func unBCJX86(buf []byte, start uint32) {
	if len(buf) < 5 {
		return
	}
	// Allowed history patterns and, for each, which operand byte is examined.
	allowed := [8]bool{0: true, 1: true, 2: true, 4: true}
	bitNum := [8]uint32{0, 1, 2, 2, 3, 3, 3, 3}
	isMSB := func(b byte) bool { return b == 0 || b == 0xFF }

	var hist uint32 // 3-bit history of unconverted candidates, bit 0 = newest
	last := -1      // position of the previous candidate; -1 = none
	end := len(buf) - 4
	for i := 0; i < end; i++ {
		if buf[i]&0xFE != 0xE8 {
			continue
		}
		dist := i - last
		if last < 0 || dist > 3 {
			hist = 0
		} else {
			hist = (hist << uint(dist-1)) & 7
			if hist != 0 {
				probe := buf[i+4-int(bitNum[hist])]
				if !allowed[hist] || isMSB(probe) {
					last = i
					hist = hist<<1 | 1
					continue
				}
			}
		}
		last = i
		if !isMSB(buf[i+4]) {
			hist = hist<<1 | 1
			continue
		}
		v := binary.LittleEndian.Uint32(buf[i+1:])
		var rel uint32
		for {
			rel = v - (start + uint32(i) + 5)
			if hist == 0 {
				break
			}
			shift := bitNum[hist] * 8
			if !isMSB(byte(rel >> (24 - shift))) {
				break
			}
			v = rel ^ (1<<(32-shift) - 1)
		}
		rel &= 0x01FFFFFF
		if rel&0x01000000 != 0 {
			rel |= 0xFF000000
		}
		binary.LittleEndian.PutUint32(buf[i+1:], rel)
		i += 4
	}
}
