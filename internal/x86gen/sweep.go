package x86gen

// Sweep enumerates the opcode space systematically, in a fixed order: every
// opcode byte of the one-byte, 0F, 0F 38 and 0F 3A maps under each
// mandatory-prefix choice (none, 66, F3, F2); every 3DNow! suffix; every VEX
// map 1-3 opcode under each pp, L, W and with vvvv unused (1111) or used;
// every EVEX map 1, 2, 3, 5, 6 opcode under each pp, W and L'L; every XOP map
// 8, 9, A opcode under each L and W. Each is followed by a ModRM byte in
// register form (mod=11) and memory form (mod=00, rm=000: no SIB or
// displacement) for each ModRM.reg, then tailBytes (immediate material).
// The VEX/EVEX/XOP forms use R=X=B=1 (inverted 0) so that they are VEX in
// 32-bit mode too.
type Sweep struct {
	fams  []family
	total int
	i     int
}

type family struct {
	n   int
	gen func(dst []byte, k int) []byte
}

// tailBytes follow the ModRM byte: immediate and suffix material.
var tailBytes = []byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}

// modrmForm returns the k-th of the 16 ModRM forms: reg form for k < 8,
// memory form otherwise, ModRM.reg = k%8.
func modrmForm(k int) byte {
	if k < 8 {
		return 0xc0 | byte(k)<<3 | 1
	}
	return byte(k-8) << 3
}

// NewSweep returns a Sweep for 32- or 64-bit code (the byte strings are the
// same; bits is kept for symmetry with New and future mode-specific forms).
func NewSweep(bits int) *Sweep {
	s := &Sweep{}
	legacyPfx := [][]byte{nil, {0x66}, {0xf3}, {0xf2}}
	escapes := [][]byte{nil, {0x0f}, {0x0f, 0x38}, {0x0f, 0x3a}}
	s.add(4*4*256*16, func(dst []byte, k int) []byte {
		m := k % 16
		k /= 16
		op := k % 256
		k /= 256
		esc := k % 4
		p := k / 4
		dst = append(dst, legacyPfx[p]...)
		dst = append(dst, escapes[esc]...)
		dst = append(dst, byte(op), modrmForm(m))
		return append(dst, tailBytes...)
	})
	s.add(2*256, func(dst []byte, k int) []byte {
		suffix := byte(k % 256)
		if k/256 == 0 {
			return append(dst, 0x0f, 0x0f, 0xc1, suffix)
		}
		return append(dst, 0x0f, 0x0f, 0x00, suffix)
	})
	// VEX3: map(3) pp(4) L(2) W(2) vvvv(2) op(256) modrm(16).
	s.add(3*4*2*2*2*256*16, func(dst []byte, k int) []byte {
		m := k % 16
		k /= 16
		op := k % 256
		k /= 256
		vv := k % 2
		k /= 2
		w := k % 2
		k /= 2
		l := k % 2
		k /= 2
		pp := k % 4
		mp := k/4 + 1
		vvvv := byte(15)
		if vv == 1 {
			vvvv = 14
		}
		b2 := byte(w)<<7 | vvvv<<3 | byte(l)<<2 | byte(pp)
		dst = append(dst, 0xc4, 0xe0|byte(mp), b2, byte(op), modrmForm(m))
		return append(dst, tailBytes...)
	})
	// EVEX: map(5) pp(4) W(2) L'L(3) op(256) modrm(16); vvvv unused, V'=1,
	// aaa=0, z=0, b=0.
	evexMaps := []byte{1, 2, 3, 5, 6}
	s.add(5*4*2*3*256*16, func(dst []byte, k int) []byte {
		m := k % 16
		k /= 16
		op := k % 256
		k /= 256
		ll := k % 3
		k /= 3
		w := k % 2
		k /= 2
		pp := k % 4
		mp := evexMaps[k/4]
		p0 := 0xf0 | mp // R X B R' = 1111 (inverted: none)
		p1 := byte(w)<<7 | 15<<3 | 1<<2 | byte(pp)
		p2 := byte(ll)<<5 | 1<<3 // V' = 1 (inverted)
		dst = append(dst, 0x62, p0, p1, p2, byte(op), modrmForm(m))
		return append(dst, tailBytes...)
	})
	// XOP: map(3) L(2) W(2) op(256) modrm(16); vvvv unused, pp=0.
	s.add(3*2*2*256*16, func(dst []byte, k int) []byte {
		m := k % 16
		k /= 16
		op := k % 256
		k /= 256
		w := k % 2
		k /= 2
		l := k % 2
		mp := byte(k/2) + 8
		b2 := byte(w)<<7 | 15<<3 | byte(l)<<2
		dst = append(dst, 0x8f, 0xe0|mp, b2, byte(op), modrmForm(m))
		return append(dst, tailBytes...)
	})
	_ = bits
	return s
}

func (s *Sweep) add(n int, gen func([]byte, int) []byte) {
	s.fams = append(s.fams, family{n, gen})
	s.total += n
}

// Len returns the number of candidates the sweep yields.
func (s *Sweep) Len() int { return s.total }

// Next appends the next candidate (at most 15 bytes) to dst; ok is false
// when the sweep is exhausted.
func (s *Sweep) Next(dst []byte) (out []byte, ok bool) {
	if s.i >= s.total {
		return dst, false
	}
	k := s.i
	s.i++
	for _, f := range s.fams {
		if k < f.n {
			start := len(dst)
			dst = f.gen(dst, k)
			if len(dst)-start > 15 {
				dst = dst[:start+15]
			}
			return dst, true
		}
		k -= f.n
	}
	panic("unreachable")
}
