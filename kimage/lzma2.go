package kimage

import "fmt"

// A raw LZMA2 decoder that writes straight into the output buffer and uses it
// as the dictionary: the whole image is kept anyway, so no separate window (the
// kernel's stream asks for a 32 MiB one) is allocated or copied through.
// Written from the LZMA/LZMA2 format description (range coder with 11-bit
// probabilities, 12-state model, literal/match/rep coding, LZMA2 chunking).

const (
	lzProbBits   = 11
	lzProbInit   = 1 << (lzProbBits - 1)
	lzMoveBits   = 5
	lzTop        = 1 << 24
	lzStates     = 12
	lzPosMax     = 16 // 1 << max pb
	lzLenStates  = 4
	lzEndPosSlot = 14
	lzAlignBits  = 4
	lzFullDist   = 128
)

type lzProb = uint16

// lzRange is the range decoder over one chunk's compressed bytes.
type lzRange struct {
	in    []byte
	p     int
	rng   uint32
	code  uint32
	short bool // ran out of input
}

func (r *lzRange) init(in []byte) error {
	if len(in) < 5 || in[0] != 0 {
		return fmt.Errorf("bad range coder start")
	}
	r.in, r.p, r.rng, r.short = in, 5, 0xFFFFFFFF, false
	r.code = uint32(in[1])<<24 | uint32(in[2])<<16 | uint32(in[3])<<8 | uint32(in[4])
	return nil
}

func (r *lzRange) norm() {
	if r.rng < lzTop {
		r.rng <<= 8
		var c byte
		if r.p < len(r.in) {
			c = r.in[r.p]
			r.p++
		} else {
			r.short = true
		}
		r.code = r.code<<8 | uint32(c)
	}
}

func (r *lzRange) bit(p *lzProb) uint32 {
	r.norm()
	bound := (r.rng >> lzProbBits) * uint32(*p)
	if r.code < bound {
		r.rng = bound
		*p += (1<<lzProbBits - *p) >> lzMoveBits
		return 0
	}
	r.rng -= bound
	r.code -= bound
	*p -= *p >> lzMoveBits
	return 1
}

// tree decodes an n-bit symbol, most significant bit first.
func (r *lzRange) tree(probs []lzProb, n uint) uint32 {
	m := uint32(1)
	for i := uint(0); i < n; i++ {
		m = m<<1 | r.bit(&probs[m])
	}
	return m - 1<<n
}

// reverse decodes an n-bit symbol, least significant bit first.
func (r *lzRange) reverse(probs []lzProb, n uint) uint32 {
	m, sym := uint32(1), uint32(0)
	for i := uint(0); i < n; i++ {
		b := r.bit(&probs[m])
		m = m<<1 | b
		sym |= b << i
	}
	return sym
}

func (r *lzRange) direct(n uint) uint32 {
	var v uint32
	for i := uint(0); i < n; i++ {
		r.norm()
		r.rng >>= 1
		v <<= 1
		if r.code >= r.rng {
			r.code -= r.rng
			v |= 1
		}
	}
	return v
}

type lzLen struct {
	choice, choice2 lzProb
	low, mid        [lzPosMax][1 << 3]lzProb
	high            [1 << 8]lzProb
}

func (l *lzLen) reset() {
	l.choice, l.choice2 = lzProbInit, lzProbInit
	for i := range l.low {
		for j := range l.low[i] {
			l.low[i][j], l.mid[i][j] = lzProbInit, lzProbInit
		}
	}
	for i := range l.high {
		l.high[i] = lzProbInit
	}
}

// decode returns the match length minus 2.
func (l *lzLen) decode(r *lzRange, posState uint32) uint32 {
	if r.bit(&l.choice) == 0 {
		return r.tree(l.low[posState][:], 3)
	}
	if r.bit(&l.choice2) == 0 {
		return 8 + r.tree(l.mid[posState][:], 3)
	}
	return 16 + r.tree(l.high[:], 8)
}

type lzState struct {
	lc, lp, pb uint
	state      uint32
	rep        [4]uint32
	isMatch    [lzStates][lzPosMax]lzProb
	isRep      [lzStates]lzProb
	isRepG0    [lzStates]lzProb
	isRepG1    [lzStates]lzProb
	isRepG2    [lzStates]lzProb
	isRep0Long [lzStates][lzPosMax]lzProb
	posSlot    [lzLenStates][1 << 6]lzProb
	posSpecial [1 + lzFullDist - lzEndPosSlot]lzProb // index 0 unused: reverse() counts from 1
	align      [1 << lzAlignBits]lzProb
	matchLen   lzLen
	repLen     lzLen
	literal    []lzProb
}

func (s *lzState) reset() {
	s.state = 0
	s.rep = [4]uint32{}
	fill := func(p []lzProb) {
		for i := range p {
			p[i] = lzProbInit
		}
	}
	for i := 0; i < lzStates; i++ {
		fill(s.isMatch[i][:])
		fill(s.isRep0Long[i][:])
	}
	fill(s.isRep[:])
	fill(s.isRepG0[:])
	fill(s.isRepG1[:])
	fill(s.isRepG2[:])
	for i := range s.posSlot {
		fill(s.posSlot[i][:])
	}
	fill(s.posSpecial[:])
	fill(s.align[:])
	s.matchLen.reset()
	s.repLen.reset()
	n := 0x300 << (s.lc + s.lp)
	if cap(s.literal) < n {
		s.literal = make([]lzProb, n)
	}
	s.literal = s.literal[:n]
	fill(s.literal)
}

func (s *lzState) setProps(p byte) error {
	if p >= 9*5*5 {
		return fmt.Errorf("bad LZMA properties byte %#x", p)
	}
	lc, lp, pb := uint(p%9), uint(p/9%5), uint(p/45)
	if lc+lp > 4 {
		return fmt.Errorf("LZMA2 properties lc+lp > 4")
	}
	s.lc, s.lp, s.pb = lc, lp, pb
	return nil
}

// decodeLZMA2 decodes a raw LZMA2 stream starting at in[0], appending to out
// (whose existing bytes are not part of the dictionary). It returns the output
// and the number of input bytes consumed (through the end marker).
func decodeLZMA2(in []byte, out []byte, limit int) ([]byte, int, error) {
	var s lzState
	var r lzRange
	base := len(out) // first byte of this stream
	dictStart := base
	p := 0
	needDict, needProps := true, true
	for {
		if p >= len(in) {
			return nil, p, fmt.Errorf("LZMA2 stream truncated")
		}
		c := in[p]
		p++
		if c == 0 {
			return out, p, nil
		}
		if c < 0x80 {
			if c > 2 {
				return nil, p - 1, fmt.Errorf("bad LZMA2 control byte %#x", c)
			}
			if p+2 > len(in) {
				return nil, p, fmt.Errorf("LZMA2 chunk header truncated")
			}
			n := int(in[p])<<8 | int(in[p+1]) + 1
			p += 2
			if c == 1 {
				dictStart, needDict = len(out), false
			} else if needDict {
				return nil, p, fmt.Errorf("LZMA2 stream does not start with a dictionary reset")
			}
			if p+n > len(in) {
				return nil, p, fmt.Errorf("LZMA2 uncompressed chunk truncated")
			}
			if len(out)+n > limit {
				return nil, p, fmt.Errorf("output exceeds %d bytes", limit)
			}
			out = append(out, in[p:p+n]...)
			p += n
			continue
		}
		if p+4 > len(in) {
			return nil, p, fmt.Errorf("LZMA2 chunk header truncated")
		}
		unpacked := int(c&0x1F)<<16 | int(in[p])<<8 | int(in[p+1]) + 1
		packed := int(in[p+2])<<8 | int(in[p+3]) + 1
		p += 4
		reset := (c >> 5) & 3
		if reset == 3 {
			dictStart, needDict = len(out), false
		} else if needDict {
			return nil, p, fmt.Errorf("LZMA2 stream does not start with a dictionary reset")
		}
		if reset >= 2 {
			if p >= len(in) {
				return nil, p, fmt.Errorf("LZMA2 properties truncated")
			}
			if err := s.setProps(in[p]); err != nil {
				return nil, p, err
			}
			p++
			needProps = false
		} else if needProps {
			return nil, p, fmt.Errorf("LZMA2 chunk without properties")
		}
		if reset >= 1 {
			s.reset()
		}
		if p+packed > len(in) {
			return nil, p, fmt.Errorf("LZMA2 compressed chunk truncated")
		}
		if len(out)+unpacked > limit {
			return nil, p, fmt.Errorf("output exceeds %d bytes", limit)
		}
		if err := r.init(in[p : p+packed]); err != nil {
			return nil, p, err
		}
		var err error
		out, err = s.decodeChunk(&r, out, dictStart, unpacked)
		if err != nil {
			return nil, p, err
		}
		if r.short {
			return nil, p, fmt.Errorf("LZMA2 chunk needs more than its %d compressed bytes", packed)
		}
		p += packed
	}
}

// decodeChunk decodes exactly n bytes onto out.
func (s *lzState) decodeChunk(r *lzRange, out []byte, dictStart, n int) ([]byte, error) {
	pos := len(out)
	end := pos + n
	if cap(out) < end {
		grown := make([]byte, pos, max(end, 2*cap(out)))
		copy(grown, out)
		out = grown
	}
	out = out[:end]
	pbMask := uint32(1)<<s.pb - 1
	lpMask := uint32(1)<<s.lp - 1
	lc := s.lc
	state := s.state
	rep0, rep1, rep2, rep3 := s.rep[0], s.rep[1], s.rep[2], s.rep[3]
	for pos < end {
		posState := uint32(pos-dictStart) & pbMask
		if r.bit(&s.isMatch[state][posState]) == 0 {
			// Literal.
			var prev uint32
			if pos > dictStart {
				prev = uint32(out[pos-1])
			}
			ls := (uint32(pos-dictStart)&lpMask)<<lc + prev>>(8-lc)
			probs := s.literal[0x300*ls : 0x300*ls+0x300]
			sym := uint32(1)
			if state >= 7 {
				if int(rep0) >= pos-dictStart {
					return nil, fmt.Errorf("LZMA distance %d beyond the dictionary", rep0+1)
				}
				mb := uint32(out[pos-int(rep0)-1])
				for sym < 0x100 {
					mbit := (mb >> 7) & 1
					mb <<= 1
					b := r.bit(&probs[0x100+mbit<<8+sym])
					sym = sym<<1 | b
					if b != mbit {
						break
					}
				}
			}
			for sym < 0x100 {
				sym = sym<<1 | r.bit(&probs[sym])
			}
			out[pos] = byte(sym)
			pos++
			switch {
			case state < 4:
				state = 0
			case state < 10:
				state -= 3
			default:
				state -= 6
			}
			continue
		}
		var length uint32
		if r.bit(&s.isRep[state]) == 0 {
			// Match with a new distance.
			rep3, rep2, rep1 = rep2, rep1, rep0
			length = s.matchLen.decode(r, posState)
			if state < 7 {
				state = 7
			} else {
				state = 10
			}
			ls := length
			if ls > lzLenStates-1 {
				ls = lzLenStates - 1
			}
			slot := r.tree(s.posSlot[ls][:], 6)
			if slot < 4 {
				rep0 = slot
			} else {
				nb := uint(slot>>1) - 1
				dist := (2 | slot&1) << nb
				if slot < lzEndPosSlot {
					dist += r.reverse(s.posSpecial[dist-slot:], nb)
				} else {
					dist += r.direct(nb-lzAlignBits) << lzAlignBits
					dist += r.reverse(s.align[:], lzAlignBits)
				}
				rep0 = dist
			}
			if rep0 == 0xFFFFFFFF {
				return nil, fmt.Errorf("LZMA end marker inside an LZMA2 chunk")
			}
		} else {
			if r.bit(&s.isRepG0[state]) == 0 {
				if r.bit(&s.isRep0Long[state][posState]) == 0 {
					// Short rep: one byte at distance rep0.
					if int(rep0) >= pos-dictStart {
						return nil, fmt.Errorf("LZMA distance %d beyond the dictionary", rep0+1)
					}
					out[pos] = out[pos-int(rep0)-1]
					pos++
					if state < 7 {
						state = 9
					} else {
						state = 11
					}
					continue
				}
			} else {
				var d uint32
				if r.bit(&s.isRepG1[state]) == 0 {
					d = rep1
				} else {
					if r.bit(&s.isRepG2[state]) == 0 {
						d = rep2
					} else {
						d = rep3
						rep3 = rep2
					}
					rep2 = rep1
				}
				rep1 = rep0
				rep0 = d
			}
			length = s.repLen.decode(r, posState)
			if state < 7 {
				state = 8
			} else {
				state = 11
			}
		}
		// Copy length+2 bytes from distance rep0+1.
		n := int(length) + 2
		d := int(rep0) + 1
		if d > pos-dictStart {
			return nil, fmt.Errorf("LZMA distance %d beyond the dictionary", d)
		}
		if pos+n > end {
			return nil, fmt.Errorf("LZMA match runs past the chunk end")
		}
		src := pos - d
		if d >= n {
			copy(out[pos:pos+n], out[src:src+n])
		} else {
			for i := 0; i < n; i++ {
				out[pos+i] = out[src+i]
			}
		}
		pos += n
	}
	s.state = state
	s.rep = [4]uint32{rep0, rep1, rep2, rep3}
	return out, nil
}
