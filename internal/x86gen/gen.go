package x86gen

import (
	"fmt"
	"math/rand/v2"
)

// Kind is the recipe a candidate was built from.
type Kind uint8

const (
	KindOneByte   Kind = iota // legacy prefixes, REX, one-byte opcode
	Kind0F                    // ... 0F xx
	Kind0F38                  // ... 0F 38 xx
	Kind0F3A                  // ... 0F 3A xx
	Kind3DNow                 // ... 0F 0F modrm [sib] [disp] suffix
	KindVEX2                  // C5 xx
	KindVEX3                  // C4 xx xx
	KindEVEX                  // 62 xx xx xx
	KindXOP                   // 8F xx xx
	KindRandom                // uniformly random bytes
	KindTruncated             // a structured candidate cut short
	NumKinds
)

var kindNames = [...]string{"one-byte", "0f", "0f38", "0f3a", "3dnow", "vex2", "vex3", "evex", "xop",
	"random", "truncated"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Config parameterizes a Gen.
type Config struct {
	Seed uint64
	// Bits is the processor mode the candidates target: 32 or 64. It decides
	// whether REX bytes are generated and how often C4/C5/62/8F get the
	// register form that makes them VEX/EVEX/XOP in 32-bit mode.
	Bits int
	// MaxLen caps a candidate's length; 0 means 15.
	MaxLen int
	// Weights gives the relative frequency of each Kind; nil means DefaultWeights.
	Weights *[NumKinds]int
}

// DefaultWeights favour the structured kinds; the maps with the most length
// rules (one-byte, 0F) get the most cases.
var DefaultWeights = [NumKinds]int{
	KindOneByte: 26, Kind0F: 22, Kind0F38: 6, Kind0F3A: 6, Kind3DNow: 3,
	KindVEX2: 6, KindVEX3: 8, KindEVEX: 8, KindXOP: 4, KindRandom: 6, KindTruncated: 5,
}

// Gen generates candidates; it is not safe for concurrent use.
type Gen struct {
	cfg     Config
	rng     *rand.Rand
	pcg     *rand.PCG
	cum     [NumKinds]int
	total   int
	last    Kind
	scratch []byte
}

// New returns a generator. It panics if cfg.Bits is neither 32 nor 64 or the
// weights are all zero: both are programming errors.
func New(cfg Config) *Gen {
	if cfg.Bits != 32 && cfg.Bits != 64 {
		panic(fmt.Sprintf("x86gen: Bits must be 32 or 64, got %d", cfg.Bits))
	}
	if cfg.MaxLen <= 0 || cfg.MaxLen > 15 {
		cfg.MaxLen = 15
	}
	w := DefaultWeights
	if cfg.Weights != nil {
		w = *cfg.Weights
	}
	g := &Gen{cfg: cfg, pcg: rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)}
	g.rng = rand.New(g.pcg)
	for k, v := range w {
		if v < 0 {
			v = 0
		}
		g.total += v
		g.cum[k] = g.total
	}
	if g.total == 0 {
		panic("x86gen: all weights are zero")
	}
	return g
}

// Seed restarts the generator's randomness as New(Config{Seed: s, ...})
// would.
func (g *Gen) Seed(s uint64) { g.pcg.Seed(s, s^0x9e3779b97f4a7c15) }

// Last reports the Kind of the last candidate returned by Next.
func (g *Gen) Last() Kind { return g.last }

// Next appends one candidate (1..MaxLen bytes) to dst and returns the result.
func (g *Gen) Next(dst []byte) []byte {
	n := g.rng.IntN(g.total)
	k := Kind(0)
	for n >= g.cum[k] {
		k++
	}
	g.last = k
	b := g.scratch[:0]
	switch k {
	case KindRandom:
		l := 1 + g.rng.IntN(g.cfg.MaxLen)
		for range l {
			b = append(b, byte(g.rng.Uint32()))
		}
	case KindTruncated:
		sub := Kind(g.rng.IntN(int(KindRandom)))
		b = g.structured(b, sub)
		if len(b) > 1 {
			b = b[:1+g.rng.IntN(len(b)-1)]
		}
	default:
		b = g.structured(b, k)
	}
	if len(b) > g.cfg.MaxLen {
		b = b[:g.cfg.MaxLen]
	}
	g.scratch = b
	return append(dst, b...)
}

func (g *Gen) chance(pct int) bool { return g.rng.IntN(100) < pct }

func (g *Gen) rb() byte { return byte(g.rng.Uint32()) }

var legacyPrefixes = []byte{0x26, 0x2e, 0x36, 0x3e, 0x64, 0x65, 0x66, 0x67, 0xf0, 0xf2, 0xf3}

// prefixes appends legacy prefixes: usually none or one or two, sometimes a
// long run (past the 15-byte limit), with 66/67/F2/F3 favoured because they
// change lengths and select mandatory-prefix opcodes.
func (g *Gen) prefixes(b []byte) []byte {
	var n int
	switch r := g.rng.IntN(100); {
	case r < 45:
		n = 0
	case r < 75:
		n = 1
	case r < 90:
		n = 2
	case r < 97:
		n = 3 + g.rng.IntN(3)
	default:
		n = 6 + g.rng.IntN(10)
	}
	for range n {
		if g.chance(60) {
			b = append(b, []byte{0x66, 0x67, 0xf2, 0xf3}[g.rng.IntN(4)])
		} else {
			b = append(b, legacyPrefixes[g.rng.IntN(len(legacyPrefixes))])
		}
	}
	return b
}

// rex appends REX bytes in 64-bit mode: usually one or none; sometimes a REX
// followed by a legacy prefix (then ignored by the CPU), or two REX bytes.
func (g *Gen) rex(b []byte) []byte {
	if g.cfg.Bits != 64 || !g.chance(35) {
		return b
	}
	if g.chance(8) {
		b = append(b, 0x40|g.rb()&15)
		if g.chance(50) {
			b = append(b, legacyPrefixes[g.rng.IntN(len(legacyPrefixes))])
		}
	}
	if g.chance(50) {
		return append(b, 0x48|g.rb()&7) // REX.W, the one that changes lengths
	}
	return append(b, 0x40|g.rb()&15)
}

// modrm appends a ModRM byte, a SIB byte when it calls for one, and random
// bytes enough for any displacement and immediate that may follow. The mix
// favours the length-changing forms: mod=00 rm=101 (disp32 / RIP-relative),
// rm=100 (SIB) with base=101, mod=01/10.
func (g *Gen) modrm(b []byte) []byte {
	mod := byte(g.rng.IntN(4))
	reg := byte(g.rng.IntN(8))
	rm := byte(g.rng.IntN(8))
	switch r := g.rng.IntN(100); {
	case r < 15:
		mod, rm = 0, 5
	case r < 35:
		rm = 4
	case r < 45: // 16-bit addressing forms: rm=110 with mod=00 is disp16
		rm = 6
	}
	b = append(b, mod<<6|reg<<3|rm)
	if mod != 3 && rm == 4 {
		sib := g.rb()
		if g.chance(40) {
			sib = sib&^7 | 5
		}
		b = append(b, sib)
	}
	return g.tail(b)
}

// tail appends 0..8 random bytes: displacement and immediate material.
func (g *Gen) tail(b []byte) []byte {
	n := g.rng.IntN(9)
	for range n {
		b = append(b, g.rb())
	}
	return b
}

// threeDNowSuffixes are the defined 3DNow! opcode suffixes (AMD 3DNow!
// Technology Manual, and the Geode extensions).
var threeDNowSuffixes = []byte{0x0c, 0x0d, 0x1c, 0x1d, 0x8a, 0x8e, 0x90, 0x94, 0x96, 0x97, 0x9a,
	0x9e, 0xa0, 0xa4, 0xa6, 0xa7, 0xaa, 0xae, 0xb0, 0xb4, 0xb6, 0xb7, 0xbb, 0xbf, 0x86, 0x87}

// vexTop adjusts the byte after C4/C5/62/8F: in 32-bit mode its top two bits
// decide between the VEX/EVEX form (11) and LES/LDS/BOUND (memory ModRM).
func (g *Gen) vexTop(v byte) byte {
	if g.cfg.Bits == 32 && g.chance(80) {
		return v | 0xc0
	}
	return v
}

func (g *Gen) structured(b []byte, k Kind) []byte {
	b = g.prefixes(b)
	switch k {
	case KindOneByte:
		b = g.rex(b)
		op := g.rb()
		if g.chance(30) {
			// Opcodes whose length depends on prefixes or ModRM.reg.
			op = []byte{0x68, 0x69, 0x6a, 0x6b, 0x80, 0x81, 0x83, 0xa0, 0xa1, 0xa2, 0xa3, 0xa8, 0xa9,
				0xb8, 0xbf, 0xc0, 0xc2, 0xc6, 0xc7, 0xc8, 0xca, 0xcd, 0xe8, 0xe9, 0xea, 0x9a, 0xeb,
				0xf6, 0xf7, 0xe0, 0xe3, 0x70, 0x05, 0x3d, 0xd8, 0xdf, 0xfe, 0xff, 0x8f, 0xc4, 0xc5,
				0x62, 0x9b, 0x63, 0x8e, 0x8c}[g.rng.IntN(46)]
		}
		b = append(b, op)
		if g.chance(75) {
			b = g.modrm(b)
		} else {
			b = g.tail(b)
		}
	case Kind0F, Kind0F38, Kind0F3A:
		b = g.rex(b)
		b = append(b, 0x0f)
		if k == Kind0F38 {
			b = append(b, 0x38)
		} else if k == Kind0F3A {
			b = append(b, 0x3a)
		}
		op := g.rb()
		if k == Kind0F && g.chance(20) {
			op = []byte{0x00, 0x01, 0x0d, 0x18, 0x1e, 0x1f, 0x20, 0x22, 0x78, 0x79, 0x80, 0x8f,
				0xa4, 0xac, 0xb8, 0xba, 0xc2, 0xc7, 0xae, 0xff, 0xb9, 0x0b, 0x05, 0x34, 0x35,
				0x07, 0x24, 0x26, 0x3b, 0x70, 0x71, 0x72, 0x73}[g.rng.IntN(33)]
		}
		b = append(b, op)
		b = g.modrm(b)
	case Kind3DNow:
		b = g.rex(b)
		b = append(b, 0x0f, 0x0f)
		n := len(b)
		b = g.modrm(b)
		// Put the suffix right after ModRM/SIB/disp so that it is the suffix
		// for some choice of displacement; the tail supplies the rest.
		suffix := threeDNowSuffixes[g.rng.IntN(len(threeDNowSuffixes))]
		if g.chance(15) {
			suffix = g.rb()
		}
		pos := n + 1 + g.rng.IntN(6)
		if pos < len(b) {
			b[pos] = suffix
		} else {
			b = append(b, suffix)
		}
	case KindVEX2:
		b = g.rex(b)
		b = append(b, 0xc5, g.vexTop(g.rb()))
		b = append(b, g.vexOpcode(1))
		b = g.modrm(b)
	case KindVEX3:
		b = g.rex(b)
		mm := byte(1 + g.rng.IntN(3))
		if g.chance(10) {
			mm = g.rb() & 31
		}
		b = append(b, 0xc4, g.vexTop(g.rb()&0xe0|mm), g.rb())
		b = append(b, g.vexOpcode(mm))
		b = g.modrm(b)
	case KindEVEX:
		b = g.rex(b)
		mm := []byte{1, 2, 3, 5, 6}[g.rng.IntN(5)]
		if g.chance(10) {
			mm = g.rb() & 7
		}
		p0 := g.vexTop(g.rb()&0xf0 | mm)
		p1 := g.rb() | 0x04
		if g.chance(10) {
			p1 &^= 0x04
		}
		b = append(b, 0x62, p0, p1, g.rb())
		b = append(b, g.vexOpcode(mm))
		b = g.modrm(b)
	case KindXOP:
		b = g.rex(b)
		mm := byte(8 + g.rng.IntN(3))
		if g.chance(10) {
			mm = g.rb() & 31
		}
		b = append(b, 0x8f, g.vexTop(g.rb()&0xe0|mm), g.rb())
		b = append(b, g.rb())
		b = g.modrm(b)
	}
	return b
}

// vexOpcode picks an opcode for a VEX/EVEX map, favouring defined ones.
func (g *Gen) vexOpcode(mm byte) byte {
	if g.chance(50) {
		return g.rb()
	}
	switch mm {
	case 1:
		return []byte{0x10, 0x11, 0x28, 0x58, 0x59, 0x6f, 0x7f, 0x70, 0x71, 0x72, 0x73, 0x77, 0xc2,
			0xc4, 0xc5, 0xc6, 0xae, 0x12, 0x2e, 0xe7, 0xf7, 0x90, 0x92, 0x93, 0x41, 0x4a}[g.rng.IntN(26)]
	case 2:
		return []byte{0x00, 0x18, 0x19, 0x1a, 0x2a, 0x2c, 0x45, 0x58, 0x78, 0x90, 0x92, 0x96, 0xa8,
			0xf2, 0xf3, 0xf5, 0xf6, 0xf7, 0x0f, 0x13, 0x36, 0xdc, 0xcf, 0x50}[g.rng.IntN(24)]
	case 3:
		return []byte{0x00, 0x01, 0x04, 0x0f, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x20, 0x21, 0x22,
			0x38, 0x39, 0x44, 0x46, 0x4a, 0x4b, 0x60, 0x63, 0xdf, 0xf0, 0xce, 0x1d, 0x06}[g.rng.IntN(26)]
	}
	return g.rb()
}
