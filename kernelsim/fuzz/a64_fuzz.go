package fuzz

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/gdbserial"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// A64Fuzzer is the engine of `kboost fuzz --arch arm64`: for each generated
// word, the policy's verdict against differential execution on an ARM64
// backend (the probed word in place versus the simulated kprobe hit: the
// boosted slot [insn, B addr+4], the single-step slot [insn, BRK #6] with the
// PC fix-up, or the kernel's simulation), over random states. Findings are
// the same kinds as on x86: unsafe-boost, policy-divergence, missed-boost,
// slot-model. A divergence counts only when it reproduces from the same
// state and the in-place run is deterministic. There is no length oracle:
// every A64 instruction is 4 bytes.
type A64Fuzzer struct {
	fuzzCore
	// reused buffers
	cases   []kernelsim.Case
	results []kernelsim.Result
}

// NewA64Fuzzer prepares a fuzz run on an ARM64 backend.
func NewA64Fuzzer(cfg Config) *A64Fuzzer {
	f := &A64Fuzzer{}
	f.init(cfg, 0x61363466757a7a, "not applicable: A64 instructions are 4 bytes")
	f.env.SlotAddr = f.a.Layout.Slot + kernelsim.FuzzSlotOffset
	f.rules = judgeRules{
		key:         func(c *fuzzCase) string { return a64Key(c.m.(*kernelsim.A64Probe).Word, &c.dec) },
		hex:         func(m kernelsim.HitModel) string { return kernelsim.A64Hex(m.(*kernelsim.A64Probe).Word) },
		randomTrial: f.a.RandomTrialA64,
		excuse: func(c *fuzzCase) *int {
			if f.nondeterministic(c) {
				return &f.Stats.Nondeterministic
			}
			return nil
		},
		selfCheck: f.selfCheck,
	}
	return f
}

type a64case struct {
	fuzzCase
	w     uint32
	probe kernelsim.A64Probe
}

// Block runs n cases.
func (f *A64Fuzzer) Block(n int) error {
	a := f.a
	addr := a.Layout.Orig + kernelsim.FuzzCodeOffset
	fc := make([]a64case, 0, n)
	for range n {
		b := f.cfg.Source.Next(nil)
		f.Stats.Cases++
		if len(b) < 4 {
			f.Stats.DecodeInvalid++
			continue
		}
		var c a64case
		c.w = binary.LittleEndian.Uint32(b)
		if err := decode.ARM64.Decode(&c.inst, b[:4], addr); err != nil && !errors.Is(err, decode.ErrInvalid) {
			f.Stats.DecodeInvalid++
			continue
		} else if err != nil {
			f.Stats.DecodeInvalid++ // unallocated for package decode; the policy still judges the word
		}
		c.dec = f.cfg.Policy.ClassifyBytesEnv(b[:4], decode.ModeA64, addr, &f.env)
		c.path = kernelsim.PathOf(&c.dec)
		f.Stats.Verdicts[c.dec.Verdict.String()]++
		if c.path == kernelsim.PathNone {
			continue
		}
		c.probe = kernelsim.A64Probe{Arch: a, Word: c.w, CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
		if c.path == kernelsim.PathBoost || c.path == kernelsim.PathSingleStep {
			s, err := kernelsim.BuildSlotA64(c.w, addr, c.probe.SlotAddr(), c.path)
			probs := kernelsim.VerifySlotA64(c.w, addr, c.probe.SlotAddr(), s)
			if err != nil || len(probs) > 0 || (c.dec.SlotLen > 0 && !slices.Equal(s, c.dec.SlotBytes())) {
				f.Stats.SlotProblems++
				f.report(&Finding{Kind: "slot-model", Key: fmt.Sprintf("slot:%08x", c.w), Bytes: kernelsim.A64Hex(c.w), Verdict: c.dec.Verdict.String(),
					Diverged: append(probs, fmt.Sprintf("model % x, boost % x, %v", s, c.dec.SlotBytes(), err))})
				continue
			}
		}
		fc = append(fc, c)
	}
	for k := range f.trials {
		a.RandomTrialA64(f.rng, &f.trials[k])
	}
	f.cases = f.cases[:0]
	for i := range fc {
		c := &fc[i]
		c.refAt, c.polAt, c.boostAt = len(f.cases), -1, -1
		for k := range f.trials {
			f.cases = append(f.cases, c.probe.RefCase(&f.trials[k]))
		}
		add := func(path kernelsim.Path) int {
			at := len(f.cases)
			for k := range f.trials {
				h, err := c.probe.HitCase(path, nil, &f.trials[k])
				if err != nil {
					f.cases = f.cases[:at]
					return -1
				}
				// the in-place run sees the same slot page (not entered)
				f.cases[c.refAt+k].Slot, f.cases[c.refAt+k].SlotOffset = h.Slot, h.SlotOffset
				f.cases = append(f.cases, h)
			}
			return at
		}
		if c.path != kernelsim.PathBoost {
			if c.polAt = add(c.path); c.polAt < 0 {
				f.Stats.Inconclusive++
			}
		}
		// what if boosted: every word but the simulated ones (PC-relative by
		// construction, never candidates)
		if c.path != kernelsim.PathEmulate {
			c.boostAt = add(kernelsim.PathBoost)
		}
	}
	if cap(f.results) < len(f.cases) {
		f.results = make([]kernelsim.Result, len(f.cases)+len(f.cases)/2)
	}
	f.results = f.results[:len(f.cases)]
	if err := f.cfg.Backend.Run(f.cases, f.results); err != nil {
		return err
	}
	cs := make([]*fuzzCase, len(fc))
	for i := range fc {
		fc[i].m, cs[i] = &fc[i].probe, &fc[i].fuzzCase
	}
	return f.judgeBlock(cs, f.cases, f.results)
}

// a64Key groups findings: the deciding rules and the top 11 bits of the word
// (enough to tell the instruction groups apart).
func a64Key(w uint32, d *boost.Decision) string {
	return fmt.Sprintf("%03x/%s", w>>21, strings.Join(d.ReasonIDs(), ","))
}

// nondeterministic runs the in-place case three times from the first state.
func (f *A64Fuzzer) nondeterministic(c *fuzzCase) bool {
	return f.selfDiffers(f.selfCheck(c))
}

// selfCheck: nondeterministic's question, by word.
func (f *A64Fuzzer) selfCheck(c *fuzzCase) (string, kernelsim.Case) {
	return string(binary.LittleEndian.AppendUint32(nil, c.m.(*kernelsim.A64Probe).Word)), c.m.RefCase(&f.trials[0])
}

// A64Gen generates A64 words for the fuzzer: random words within
// instruction classes (the encoding groups of the Arm ARM's top-level
// table, and the kprobe-relevant groups: system, hints, exclusives, LSE
// atomics, literal loads, PAC, MOPS, branches with short offsets), fully
// random words, and mutations of real kernel words.
type A64Gen struct {
	genRand
	samples []uint32
}

// NewA64Gen returns a generator; samples are real instruction words to
// mutate (may be empty).
func NewA64Gen(seed uint64, samples []uint32) *A64Gen {
	return &A64Gen{genRand: newGenRand(seed, 0x613634676e), samples: samples}
}

// a64Classes are (mask, value) pairs: the generated word keeps the masked
// bits of value and randomizes the others.
var a64Classes = []struct{ mask, value uint32 }{
	{0x1C000000, 0x10000000}, // data processing, immediate
	{0x1C000000, 0x14000000}, // branches, exception generation, system
	{0x0A000000, 0x08000000}, // loads and stores
	{0x0E000000, 0x0A000000}, // data processing, register
	{0x0E000000, 0x0E000000}, // SIMD and floating point
	{0xFFC00000, 0xD5000000}, // system: MSR/MRS, hints, barriers
	{0xFFFFF01F, 0xD503201F}, // hints (NOP, PAC, BTI...)
	{0xFFF00000, 0xD5300000}, // MRS
	{0x3F000000, 0x08000000}, // exclusives and ordered
	{0x3F200C00, 0x38200000}, // LSE atomics
	{0x3F200000, 0x08200000}, // CAS/CASP
	{0x3B000000, 0x18000000}, // literal loads (LDR, LDRSW, PRFM, SIMD/FP)
	{0xFFFFF000, 0xDAC10000}, // PAC data processing
	{0xFE000000, 0xD6000000}, // BR/BLR/RET and their PAC forms, ERET
	{0x3B200C00, 0x19000400}, // MOPS
	{0xFF000000, 0x54000000}, // B.cond / BC.cond
	{0x7C000000, 0x14000000}, // B/BL
	{0x7E000000, 0x34000000}, // CBZ/CBNZ
	{0x7E000000, 0x36000000}, // TBZ/TBNZ
	{0x1F000000, 0x10000000}, // ADR/ADRP
	{0xFF000000, 0xD4000000}, // exception generation (SVC, BRK, HLT...)
	{0x3F000000, 0x39000000}, // LDR/STR unsigned offset
	{0x3B200C00, 0x38200800}, // LDR/STR register offset
}

// Next appends one 4-byte candidate to dst.
func (g *A64Gen) Next(dst []byte) []byte {
	var w uint32
	switch r := g.rng.IntN(20); {
	case r < 8 && len(g.samples) > 0:
		w = g.samples[g.rng.IntN(len(g.samples))]
		switch g.rng.IntN(6) {
		case 0, 1: // as is
		case 2: // flip a bit
			w ^= 1 << g.rng.IntN(32)
		case 3: // new register fields
			for _, sh := range []int{0, 5, 10, 16} {
				if g.rng.IntN(2) == 0 {
					w = w&^(31<<sh) | uint32(g.rng.IntN(32))<<sh
				}
			}
		case 4: // new low 22 bits (immediates and registers)
			w = w&^0x3FFFFF | g.rng.Uint32()&0x3FFFFF
		case 5: // flip two bits in the opcode part
			w ^= 1 << (22 + g.rng.IntN(10))
			w ^= 1 << (22 + g.rng.IntN(10))
		}
	case r < 10:
		w = g.rng.Uint32()
	default:
		c := a64Classes[g.rng.IntN(len(a64Classes))]
		w = c.value&c.mask | g.rng.Uint32()&^c.mask
	}
	w = g.shortBranch(w)
	return binary.LittleEndian.AppendUint32(dst, w)
}

// shortBranch gives half of the PC-relative branches a short offset, so
// their targets lie in the code page (or right next to it).
func (g *A64Gen) shortBranch(w uint32) uint32 {
	if g.rng.IntN(2) == 0 {
		return w
	}
	off := uint32(g.rng.IntN(64) - 32)
	if off == 0 {
		off = 1 // not a branch to itself (it would only time out)
	}
	switch {
	case w&0x7C000000 == 0x14000000: // B/BL imm26
		return w&^0x3FFFFFF | off&0x3FFFFFF
	case w&0xFF000000 == 0x54000000, w&0x7E000000 == 0x34000000: // B.cond, CBZ imm19
		return w&^(0x7FFFF<<5) | (off&0x7FFFF)<<5
	case w&0x7E000000 == 0x36000000: // TBZ imm14
		return w&^(0x3FFF<<5) | (off&0x3FFF)<<5
	case w&0x3B000000 == 0x18000000: // literal loads imm19
		return w&^(0x7FFFF<<5) | (off&0x7FFFF)<<5
	}
	return w
}

func init() {
	starters[decode.ARM64] = func(o *StartOptions) (Backend, Engine, string, error) {
		g, err := gdbserial.New(kernelsim.ARM64, o.Backend)
		if err != nil {
			return nil, nil, "", err
		}
		samples, from := sampleWords(elf.EM_AARCH64, 200000, o.Seed)
		gen := NewA64Gen(o.Seed, samples)
		fz := NewA64Fuzzer(Config{Backend: g, Policy: o.Policy, Trials: o.Trials, Seed: o.Seed, Source: gen, OnFinding: o.OnFinding})
		return g, fz, from, nil
	}
}
