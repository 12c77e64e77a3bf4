package fuzz

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/native"

	"github.com/kboost/kboost/decode"
)

// LengthOracle is a backend that can tell an instruction's length the way
// the CPU sees it (Sandbox on the host CPU).
type LengthOracle interface {
	HWLengthsHint(bs [][]byte, hints []int, out []native.HWLen) error
}

// Fuzzer runs the differential fuzz loop on x86-64 or i386 code.
type Fuzzer struct {
	fuzzCore
	lo LengthOracle
	// emulated: the backend runs the cases in an emulator, not on the CPU
	emulated bool
	// per-block scratch
	bufs    [][]byte
	hints   []int
	hw      []native.HWLen
	cases   []kernelsim.Case
	results []kernelsim.Result
}

// NewFuzzer prepares a fuzz run.
func NewFuzzer(cfg Config) *Fuzzer {
	f := &Fuzzer{}
	lo, ok := cfg.Backend.(LengthOracle)
	if ok {
		f.lo = lo
		f.init(cfg, 0x66757a7a, "cpu")
	} else {
		f.init(cfg, 0x66757a7a, "unavailable: the backend has no length oracle")
	}
	f.env.SlotAddr = f.a.Layout.Slot + kernelsim.FuzzSlotOffset
	if e, ok := cfg.Backend.(interface{ Emulator() string }); ok && e.Emulator() != "" {
		f.emulated = true
	}
	f.rules = judgeRules{
		key:         func(c *fuzzCase) string { return instKey(&c.inst) },
		hex:         func(m kernelsim.HitModel) string { return hex.EncodeToString(m.(*kernelsim.Probe).Inst.Bytes()) },
		randomTrial: f.a.RandomTrial,
		excuse:      f.excuse,
		vendorNote: func(c *fuzzCase) string {
			if amd66Branch(&c.inst) {
				return "AMD: a 66-prefixed near branch in 64-bit mode takes a 16-bit IP; the kernel's emulation (like Intel CPUs) ignores the prefix"
			}
			return ""
		},
		variants:  f.fewerPrefixes,
		selfCheck: func(c *fuzzCase) (string, kernelsim.Case) { return f.selfCheck(c, &f.trials[0]) },
	}
	return f
}

type fcase struct {
	fuzzCase
	probe   kernelsim.Probe
	boostOK bool // a boosted slot can be built (len <= 10, rebase fits)
}

// Block runs n cases.
func (f *Fuzzer) Block(n int) error {
	a := f.a
	addr := a.Layout.Orig + kernelsim.FuzzCodeOffset
	f.bufs = f.bufs[:0]
	fc := make([]fcase, 0, n)
	for len(f.bufs) < n {
		b := f.cfg.Source.Next(nil)
		if len(b) == 0 {
			continue
		}
		if len(b) > 15 {
			b = b[:15]
		}
		f.bufs = append(f.bufs, b)
	}
	// decode; aim RIP-relative operands at the scratch page half of the time
	f.hints = f.hints[:0]
	decoded := make([]bool, n)
	insts := make([]decode.Inst, n)
	for i, b := range f.bufs {
		err := decode.DecodeInto(&insts[i], b, a.Mode, addr)
		if err == nil && insts[i].RIPRel && insts[i].DispLen == 4 && f.rng.IntN(2) == 0 {
			t := a.Layout.Scratch + uint64(f.rng.IntN(kernelsim.ScratchSize-16))
			binary.LittleEndian.PutUint32(b[insts[i].DispOff:], uint32(int32(int64(t-insts[i].End()))))
			err = decode.DecodeInto(&insts[i], b, a.Mode, addr)
		}
		if err == nil && a.PtrSize() == 4 && insts[i].Branch.Relative() && insts[i].ImmLen == 4 &&
			(insts[i].Target < a.Layout.Orig || insts[i].Target >= a.Layout.Orig+2*kernelsim.PageSize) {
			// i386: a rel32 reaches the whole address space, the runner's
			// pages included: aim it at the code page or the unmapped page
			// after it instead
			t := a.Layout.Orig + uint64(f.rng.IntN(2*kernelsim.PageSize))
			binary.LittleEndian.PutUint32(b[insts[i].ImmOff:], uint32(t-insts[i].End()))
			err = decode.DecodeInto(&insts[i], b, a.Mode, addr)
		}
		decoded[i] = err == nil
		h := 0
		if err == nil {
			h = insts[i].Len
		}
		f.hints = append(f.hints, h)
	}
	f.Stats.Cases += n
	// hardware length
	if f.lo != nil {
		if cap(f.hw) < n {
			f.hw = make([]native.HWLen, n)
		}
		f.hw = f.hw[:n]
		if err := f.lo.HWLengthsHint(f.bufs, f.hints, f.hw); err != nil {
			if !errors.Is(err, decode.ErrNotSupported) {
				return err
			}
			f.Stats.LengthOracle = "unavailable: " + err.Error()
			f.lo = nil
		} else {
			for i := range f.bufs {
				f.lengthCheck(&insts[i], decoded[i], f.bufs[i], &f.hw[i])
			}
		}
	}
	// classify and build the differential cases
	for i := range f.bufs {
		if !decoded[i] {
			f.Stats.DecodeInvalid++
			continue
		}
		var c fcase
		c.inst = insts[i]
		c.dec = f.cfg.Policy.ClassifyBytesEnv(f.bufs[i], a.Mode, addr, &f.env)
		c.path = kernelsim.PathOf(&c.dec)
		f.Stats.Verdicts[c.dec.Verdict.String()]++
		if c.path == kernelsim.PathNone || c.dec.Len != c.inst.Len {
			continue // refused, or the kernel decodes another length (emulate prefix)
		}
		c.probe = kernelsim.Probe{Arch: a, Inst: c.inst, CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
		if c.path != kernelsim.PathEmulate {
			s, err := kernelsim.BuildSlot(&c.inst, c.probe.SlotAddr(), c.path)
			if err != nil || (c.dec.SlotLen > 0 && !slices.Equal(s, c.dec.SlotBytes())) {
				f.Stats.SlotProblems++
				f.report(&Finding{Kind: "slot-model", Key: "slot:" + hex.EncodeToString(c.inst.Bytes()), Bytes: hex.EncodeToString(c.inst.Bytes()),
					Verdict: c.dec.Verdict.String(), Diverged: []string{fmt.Sprintf("model % x, boost % x, %v", s, c.dec.SlotBytes(), err)}})
				continue
			}
		}
		c.boostOK = c.inst.Len <= 10
		fc = append(fc, c)
	}
	f.cases = f.cases[:0]
	for k := range f.trials {
		a.RandomTrial(f.rng, &f.trials[k])
	}
	for i := range fc {
		c := &fc[i]
		c.refAt, c.polAt, c.boostAt = len(f.cases), -1, -1
		for k := range f.trials {
			f.cases = append(f.cases, c.probe.RefCase(&f.trials[k]))
		}
		if c.path != kernelsim.PathBoost {
			at := len(f.cases)
			ok := true
			for k := range f.trials {
				h, err := c.probe.HitCase(c.path, nil, &f.trials[k])
				if err != nil {
					ok = false
					break
				}
				f.cases = append(f.cases, h)
			}
			if ok {
				c.polAt = at
			} else {
				f.cases = f.cases[:at]
				f.Stats.Inconclusive++
			}
		}
		if c.boostOK || c.path == kernelsim.PathBoost {
			at := len(f.cases)
			for k := range f.trials {
				h, err := c.probe.HitCase(kernelsim.PathBoost, nil, &f.trials[k])
				if err != nil {
					f.cases = f.cases[:at]
					at = -1
					break
				}
				f.cases = append(f.cases, h)
			}
			c.boostAt = at
		}
	}
	if cap(f.results) < len(f.cases) {
		f.results = make([]kernelsim.Result, len(f.cases))
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

// excuse: the divergences of c that do not count on x86 (see judgeRules).
func (f *Fuzzer) excuse(c *fuzzCase) *int {
	switch {
	case f.nondeterministic(c, &f.trials[0]):
		return &f.Stats.Nondeterministic
	case f.emulated && c.inst.Mode == decode.Mode32 && c.inst.Enc != decode.EncLegacy && c.inst.VEXvvvv >= 8:
		return &f.Stats.EmulatorArtifacts
	case f.uncontrolled(c):
		return &f.Stats.Uncontrolled
	}
	return nil
}

// fewerPrefixes lists the forms of m with one legacy prefix dropped that
// the policy still sends down path (boosted: at most 10 bytes long).
func (f *Fuzzer) fewerPrefixes(m kernelsim.HitModel, path kernelsim.Path) []kernelsim.HitModel {
	p := m.(*kernelsim.Probe)
	var out []kernelsim.HitModel
	b := p.Inst.Bytes()
	for i := 0; i < p.Inst.NPrefix && i < len(b); i++ {
		nb := append(append([]byte(nil), b[:i]...), b[i+1:]...)
		np, err := kernelsim.NewProbe(f.a, nb, p.CodeOffset, p.SlotOffset)
		if err != nil {
			continue
		}
		dd := f.cfg.Policy.ClassifyBytesEnv(nb, f.a.Mode, np.Addr(), &f.env)
		if kernelsim.PathOf(&dd) != path && path != kernelsim.PathBoost {
			continue
		}
		if path == kernelsim.PathBoost && np.Inst.Len > 10 {
			continue
		}
		out = append(out, np)
	}
	return out
}

// instKey groups findings by what the rules look at: encoding, map, opcode,
// ModRM.reg for groups, the legacy prefixes and the instruction form.
func instKey(in *decode.Inst) string {
	reg := -1
	if in.HasModRM {
		reg = in.Reg()
		if in.Mod() == 3 {
			reg += 8
		}
	}
	return fmt.Sprintf("%v/%v/%02x/%d/%v/rex%v", in.Enc, in.Map, in.Opcode, reg, in.Prefixes, in.Rex != 0)
}

func describe(a *kernelsim.Arch, r *kernelsim.Result) string {
	s := fmt.Sprintf("%v pc=%#x sp=%#x", r.Outcome, r.Regs.PC, r.Regs.GPR[a.SP])
	if r.Outcome == kernelsim.Faulted {
		s += " " + r.Fault.String()
	}
	return s
}

// lengthCheck compares the decoder's length with the CPU's.
func (f *Fuzzer) lengthCheck(in *decode.Inst, ok bool, b []byte, hw *native.HWLen) {
	switch hw.Outcome {
	case native.LenUnknown:
		f.Stats.LengthUnknown++
		return
	case native.LenRejected:
		f.Stats.CPURejected++
		return
	case native.LenTooShort:
		return // the candidate is a truncated instruction for the CPU too (or longer than 15)
	}
	f.Stats.LengthChecked++
	if !ok {
		var d decode.Inst
		err := decode.DecodeInto(&d, b, f.a.Mode, 0)
		switch {
		case (errors.Is(err, decode.ErrTooLong) || errors.Is(err, decode.ErrInvalid)) && hw.N == 15 && hw.Fault.Signal == kernelsim.SIGSEGV && hw.Fault.Code == kernelsim.SIKernel:
			return // the CPU raised #GP at 15 bytes (too long): not an instruction for either
		case errors.Is(err, decode.ErrTruncated) && hw.N >= len(b):
			return
		case f.a.Mode == decode.Mode64 && amd66Raw(b, hw.N):
			// too long or truncated for Intel's rel32, complete with AMD's rel16
			f.Stats.LengthVendor++
			f.report(&Finding{Kind: "length-vendor", Key: "length-vendor-raw:" + hex.EncodeToString(b[:hw.N]), Bytes: hex.EncodeToString(b),
				CPULen: hw.N, CPU: hw.Outcome.String(), Diverged: []string{fmt.Sprint(err)}})
			return
		case errors.Is(err, decode.ErrTruncated):
			// AMD's rel16 branch fits where Intel's rel32 does not
			var pad [15]byte
			copy(pad[:], b)
			if decode.DecodeInto(&d, pad[:], f.a.Mode, 0) == nil && isAMD66Branch(&d, hw.N) {
				f.Stats.LengthVendor++
				f.report(&Finding{Kind: "length-vendor", Key: "length-vendor:" + instKey(&d), Bytes: hex.EncodeToString(b),
					Asm: decode.Format(&d, nil), DecoderLen: d.Len, CPULen: hw.N, CPU: hw.Outcome.String()})
				return
			}
		}
		f.Stats.DecoderRejectsRun++
		f.report(&Finding{Kind: "decoder-rejects", Key: "decrej:" + hex.EncodeToString(b[:hw.N]), Bytes: hex.EncodeToString(b[:hw.N]),
			CPULen: hw.N, CPU: hw.Outcome.String() + " " + hw.Fault.String(), Diverged: []string{fmt.Sprint(err)}})
		return
	}
	if hw.N == in.Len {
		return
	}
	if hw.Outcome == native.LenFaulted && hw.N == 15 && hw.Fault.Signal == kernelsim.SIGSEGV && hw.Fault.Code == kernelsim.SIKernel && in.Len < 15 {
		f.Stats.CPUTooLong++
		f.report(&Finding{Kind: "length-cpu-toolong", Key: "toolong:" + instKey(in), Bytes: hex.EncodeToString(b), Asm: decode.Format(in, nil),
			DecoderLen: in.Len, CPULen: hw.N, CPU: hw.Outcome.String() + " " + hw.Fault.String()})
		return
	}
	kind := "length"
	if isAMD66Branch(in, hw.N) {
		kind = "length-vendor"
		f.Stats.LengthVendor++
	} else {
		f.Stats.LengthErrors++
	}
	f.report(&Finding{Kind: kind, Key: kind + ":" + instKey(in), Bytes: hex.EncodeToString(b), Asm: decode.Format(in, nil),
		DecoderLen: in.Len, CPULen: hw.N, CPU: hw.Outcome.String()})
}

type cpuTimer interface{ CPUTime() time.Duration }

// isAMD66Branch: a 66-prefixed near jmp/jcc/call in 64-bit mode, which AMD
// CPUs decode with a 16-bit displacement (Intel and the kernel's decoder: 32).
func isAMD66Branch(in *decode.Inst, cpuLen int) bool {
	return in.Mode == decode.Mode64 && in.Prefixes&decode.PfxOpSize != 0 && cpuLen == in.Len-2 && in.ImmLen == 4 &&
		(in.Branch == decode.BranchJcc || in.Branch == decode.BranchJmp || in.Branch == decode.BranchCall)
}

// nondeterministic runs the in-place case twice more from the same state:
// instructions whose result the CPU does not determine from the registers
// and memory (rdtsc, rdrand, rdpmc...) differ from themselves.
func (f *Fuzzer) nondeterministic(c *fuzzCase, t *kernelsim.Trial) bool {
	return f.selfDiffers(f.selfCheck(c, t))
}

// selfCheck: nondeterministic's question, by instruction form.
func (f *Fuzzer) selfCheck(c *fuzzCase, t *kernelsim.Trial) (string, kernelsim.Case) {
	return instKey(&c.inst), c.m.RefCase(t)
}

// amd66Raw reports whether b is legacy prefixes (with 66) and REX, then a
// near call/jmp/jcc, and cpuLen is its length with a 16-bit displacement.
func amd66Raw(b []byte, cpuLen int) bool {
	has66 := false
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		if c == 0x66 {
			has66 = true
		} else if decode.PrefixOf(c) == 0 && c&0xF0 != 0x40 {
			break
		}
	}
	switch {
	case !has66 || i >= len(b):
		return false
	case b[i] == 0xE8 || b[i] == 0xE9:
		return cpuLen == i+3
	case b[i] == 0x0F && i+1 < len(b) && b[i+1]&0xF0 == 0x80:
		return cpuLen == i+4
	}
	return false
}

// amd66Branch: a 66-prefixed relative near branch in 64-bit mode.
func amd66Branch(in *decode.Inst) bool {
	return in.Mode == decode.Mode64 && in.Enc == decode.EncLegacy && in.Prefixes&decode.PfxOpSize != 0 &&
		(in.Branch == decode.BranchJcc || in.Branch == decode.BranchJmp || in.Branch == decode.BranchCall)
}

// uncontrolled: some trial's memory operand lies outside the pages the
// sandbox controls and the in-place run did not fault on it.
func (f *Fuzzer) uncontrolled(c *fuzzCase) bool {
	if c.inst.Mode == decode.Mode32 && c.inst.Prefixes&(decode.PfxFS|decode.PfxGS) != 0 &&
		((c.inst.HasModRM && c.inst.Mod() != 3) || c.inst.DispLen == 4 && !c.inst.HasModRM) {
		return true // the FS/GS base is not set per case (i386: a TLS segment)
	}
	for k := range f.trials {
		ea, ok := f.a.MemOperand(&c.inst, &f.trials[k].Regs)
		if ok && !f.a.Controlled(ea) && f.results[c.refAt+k].Outcome == kernelsim.Completed {
			return true
		}
	}
	return false
}

func init() {
	for arch, a := range map[*decode.Arch]*kernelsim.Arch{decode.X86_64: kernelsim.X86_64, decode.I386: kernelsim.I386} {
		starters[arch] = func(o *StartOptions) (Backend, Engine, string, error) {
			x, err := native.NewWithOptions(a, o.Backend)
			if err != nil {
				return nil, nil, "", err
			}
			x.CaseTimeout = o.CaseTimeout
			samples, from := SampleKernelInsts(a.Mode, 200000, o.Seed)
			fz := NewFuzzer(Config{Backend: x, Policy: o.Policy, Trials: o.Trials, Seed: o.Seed, Source: NewSource(a.Mode, o.Seed, samples), OnFinding: o.OnFinding})
			return x, fz, from, nil
		}
	}
}
