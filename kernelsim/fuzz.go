package kernelsim

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// LengthOracle is a backend that can tell an instruction's length the way
// the CPU sees it (Sandbox on the host CPU).
type LengthOracle interface {
	HWLengthsHint(bs [][]byte, hints []int, out []HWLen) error
}

// Fuzz offsets of the probed instruction and its slot in their pages: the
// middle of the code page, so short branches either way land on int3 filler.
const (
	FuzzCodeOffset = 0x800
	FuzzSlotOffset = 0x400
)

// FuzzConfig drives a Fuzzer.
type FuzzConfig struct {
	Backend Backend
	Policy  *boost.Policy
	Env     *boost.Env // nil: SimEnv(Policy)
	Trials  int        // register states per case (default 3)
	Seed    uint64
	// Next appends one candidate byte string to dst.
	Next func(dst []byte) []byte
	// OnFinding receives every new finding (deduplicated by Finding.Key).
	OnFinding func(*Finding)
}

// FuzzStats are a fuzz run's counts.
type FuzzStats struct {
	Cases         int `json:"cases"`
	DecodeInvalid int `json:"decode_invalid"` // the decoder refused (or truncated) the bytes
	// verdicts of the policy on the decoded cases
	Verdicts map[string]int `json:"verdicts"`
	// differential execution
	Checks            int `json:"checks"`
	UnsafeBoosts      int `json:"unsafe_boosts"`      // Boost verdict, boosted hit diverges
	PolicyDivergences int `json:"policy_divergences"` // emulated / single-stepped hit diverges (the kernel's own behaviour)
	// VendorDivergences are the policy divergences of 66-prefixed near
	// branches in 64-bit mode: AMD CPUs truncate the IP to 16 bits, the
	// kernel (like Intel CPUs) ignores the prefix. Included in
	// PolicyDivergences.
	VendorDivergences int `json:"policy_divergences_amd66"`
	// Unpredictable are the policy divergences (32-bit ARM) on encodings or
	// states the architecture calls UNPREDICTABLE, where the kernel's way
	// and the emulator's may both be right (included in PolicyDivergences).
	Unpredictable    int `json:"policy_divergences_unpredictable,omitempty"`
	MissedBoosts     int `json:"missed_boosts"` // not boosted, but a boosted hit agreed on every trial
	NotVerifiable    int `json:"not_verifiable"`
	Nondeterministic int `json:"nondeterministic"` // the in-place run differs from itself (rdtsc, rdrand...)
	// Unreproducible: a divergence that a rerun from the same state did not
	// show again (seen under qemu-user with undefined flags, whose lazy
	// evaluation depends on translation-block boundaries).
	Unreproducible int `json:"unreproducible"`
	// Uncontrolled: a divergence of an instruction whose memory operand
	// reads a mapped page the sandbox does not set per case (i386: 32-bit
	// address arithmetic wraps onto the runner's or qemu's pages).
	Uncontrolled int `json:"uncontrolled_memory"`
	// EmulatorArtifacts: divergences of i386 VEX/EVEX/XOP instructions with
	// vvvv >= 8 under qemu-i386, which reads a register i386 does not have
	// where the CPU ignores the bit (the in-place and slot runs then differ).
	EmulatorArtifacts int `json:"emulator_artifacts"`
	Inconclusive      int `json:"inconclusive"`
	SlotRefused       int `json:"slot_refused"` // RIP-relative rebase refused or layout problem
	SlotProblems      int `json:"slot_problems"`
	// decoder vs hardware length
	LengthChecked int `json:"length_checked"`
	LengthErrors  int `json:"length_errors"`       // CPU executed it with another length
	LengthVendor  int `json:"length_vendor_amd66"` // 66-prefixed near branch, rel16 on AMD (documented)
	CPURejected   int `json:"cpu_rejected_ud"`     // #UD on the CPU
	// CPUTooLong: the CPU raised #GP after 15 bytes (its decoding is longer
	// than 15) where the decoder found a shorter instruction; not executed,
	// counted apart from LengthErrors and reported as length-cpu-toolong.
	CPUTooLong         int     `json:"cpu_too_long_gp"`
	DecoderRejectsRun  int     `json:"decoder_rejects_cpu_runs"`
	LengthUnknown      int     `json:"length_unknown"`
	LengthOracle       string  `json:"length_oracle"`
	Elapsed            float64 `json:"elapsed_seconds"`
	ChecksPerSecond    float64 `json:"checks_per_second"`
	CasesPerSecond     float64 `json:"cases_per_second"`
	CPUSeconds         float64 `json:"cpu_seconds,omitempty"`           // tracer + sandbox
	ChecksPerCPUSecond float64 `json:"checks_per_cpu_second,omitempty"` // per core
	FindingKeys        int     `json:"distinct_findings"`
}

// Finding is one line of the findings file.
type Finding struct {
	Kind     string   `json:"kind"` // unsafe-boost, policy-divergence, missed-boost, length, length-vendor, decoder-rejects
	Note     string   `json:"note,omitempty"`
	Key      string   `json:"key"`
	Bytes    string   `json:"bytes"`
	Asm      string   `json:"asm,omitempty"`
	Arch     string   `json:"arch"`
	Policy   string   `json:"policy"`
	Verdict  string   `json:"verdict,omitempty"`
	Path     string   `json:"path,omitempty"`
	Rules    []string `json:"rules,omitempty"`
	Diverged []string `json:"diverged,omitempty"`
	Trials   string   `json:"trials,omitempty"` // "k/n diverged"
	// DecoderLen and CPULen are the two lengths for length findings.
	DecoderLen int    `json:"decoder_len,omitempty"`
	CPULen     int    `json:"cpu_len,omitempty"`
	CPU        string `json:"cpu,omitempty"`
	// Reproducer: the minimized bytes and the initial state of a diverging
	// trial (registers not listed are irrelevant: zeroing them keeps the
	// divergence), with both outcomes.
	Reproducer *Reproducer `json:"reproducer,omitempty"`
}

// Reproducer is a minimized diverging check.
type Reproducer struct {
	Bytes   string            `json:"bytes"`
	Regs    map[string]string `json:"regs"`
	Flags   string            `json:"flags"`
	InPlace string            `json:"in_place"`
	Hit     string            `json:"hit"`
	Diff    string            `json:"diff"`
}

// Fuzzer runs the differential fuzz loop.
type Fuzzer struct {
	fuzzCore
	lo     LengthOracle
	nondet map[string]bool
	// emulated: the backend runs the cases in an emulator, not on the CPU
	emulated bool
	extra    []Trial // states for confirming missed boosts
	// per-block scratch
	bufs    [][]byte
	hints   []int
	hw      []HWLen
	cases   []Case
	results []Result
	// confirmMissed's cases and results (reused: a Result holds 8 KiB)
	mcases   []Case
	mresults []Result
}

// NewFuzzer prepares a fuzz run.
func NewFuzzer(cfg FuzzConfig) *Fuzzer {
	f := &Fuzzer{nondet: map[string]bool{}}
	lo, ok := cfg.Backend.(LengthOracle)
	if ok {
		f.lo = lo
		f.init(cfg, 0x66757a7a, "cpu")
	} else {
		f.init(cfg, 0x66757a7a, "unavailable: the backend has no length oracle")
	}
	f.env.SlotAddr = f.a.Layout.Slot + FuzzSlotOffset
	if e, ok := cfg.Backend.(interface{ Emulator() string }); ok && e.Emulator() != "" {
		f.emulated = true
	}
	return f
}

type fcase struct {
	inst     decode.Inst
	dec      boost.Decision
	path     Path
	probe    Probe
	boostOK  bool // a boosted slot can be built (len <= 10, rebase fits)
	refAt    int  // index of the first ref case
	polAt    int  // index of the first policy-hit case (-1)
	boostAt  int  // index of the first boost-hit case (-1)
	missCand bool // boosted agreed on every trial: confirm with more states
	polDiffs []Diff
	bDiffs   []Diff
}

// Block runs n cases.
func (f *Fuzzer) Block(n int) error {
	a := f.a
	addr := a.Layout.Orig + FuzzCodeOffset
	f.bufs = f.bufs[:0]
	fc := make([]fcase, 0, n)
	for len(f.bufs) < n {
		b := f.cfg.Next(nil)
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
			t := a.Layout.Scratch + uint64(f.rng.IntN(ScratchSize-16))
			binary.LittleEndian.PutUint32(b[insts[i].DispOff:], uint32(int32(int64(t-insts[i].End()))))
			err = decode.DecodeInto(&insts[i], b, a.Mode, addr)
		}
		if err == nil && a.ptrSize() == 4 && insts[i].Branch.Relative() && insts[i].ImmLen == 4 &&
			(insts[i].Target < a.Layout.Orig || insts[i].Target >= a.Layout.Orig+2*PageSize) {
			// i386: a rel32 reaches the whole address space, the runner's
			// pages included: aim it at the code page or the unmapped page
			// after it instead
			t := a.Layout.Orig + uint64(f.rng.IntN(2*PageSize))
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
			f.hw = make([]HWLen, n)
		}
		f.hw = f.hw[:n]
		if err := f.lo.HWLengthsHint(f.bufs, f.hints, f.hw); err != nil {
			if !errors.Is(err, ErrNotSupported) {
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
		c.path = PathOf(&c.dec)
		f.Stats.Verdicts[c.dec.Verdict.String()]++
		if c.path == PathNone || c.dec.Len != c.inst.Len {
			continue // refused, or the kernel decodes another length (emulate prefix)
		}
		c.probe = Probe{Arch: a, Inst: c.inst, CodeOffset: FuzzCodeOffset, SlotOffset: FuzzSlotOffset}
		if c.path != PathEmulate {
			s, err := BuildSlot(&c.inst, c.probe.SlotAddr(), c.path)
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
		if c.path != PathBoost {
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
		if c.boostOK || c.path == PathBoost {
			at := len(f.cases)
			for k := range f.trials {
				h, err := c.probe.HitCase(PathBoost, nil, &f.trials[k])
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
		f.results = make([]Result, len(f.cases))
	}
	f.results = f.results[:len(f.cases)]
	if err := f.cfg.Backend.Run(f.cases, f.results); err != nil {
		return err
	}
	T := len(f.trials)
	for i := range fc {
		c := &fc[i]
		judge := func(at int, path Path) []Diff {
			if at < 0 {
				return nil
			}
			ds := make([]Diff, T)
			for k := 0; k < T; k++ {
				r := &f.results[at+k]
				c.probe.FixHit(path, r)
				ds[k] = c.probe.CompareHit(path, &f.cases[at+k], &f.results[c.refAt+k], r)
				f.Stats.Checks++
			}
			return ds
		}
		c.polDiffs = judge(c.polAt, c.path)
		c.bDiffs = judge(c.boostAt, PathBoost)
		f.judge(c)
	}
	return f.confirmMissed(fc)
}

func (f *Fuzzer) judge(c *fcase) {
	T := len(f.trials)
	if (Summarize(c.bDiffs) == Diverged || Summarize(c.polDiffs) == Diverged) && f.nondeterministic(c, &f.trials[0]) {
		f.Stats.Nondeterministic++
		return
	}
	if (Summarize(c.bDiffs) == Diverged || Summarize(c.polDiffs) == Diverged) && f.emulated && c.inst.Mode == decode.Mode32 &&
		c.inst.Enc != decode.EncLegacy && c.inst.VEXvvvv >= 8 {
		f.Stats.EmulatorArtifacts++
		return
	}
	if (Summarize(c.bDiffs) == Diverged || Summarize(c.polDiffs) == Diverged) && f.uncontrolled(c) {
		f.Stats.Uncontrolled++
		return
	}
	if Summarize(c.bDiffs) == Diverged && !f.reproduces(c, PathBoost, c.bDiffs) {
		f.Stats.Unreproducible++
		return
	}
	if Summarize(c.polDiffs) == Diverged && !f.reproduces(c, c.path, c.polDiffs) {
		f.Stats.Unreproducible++
		return
	}
	switch c.path {
	case PathBoost:
		switch Summarize(c.bDiffs) {
		case Diverged:
			if f.divergence("unsafe-boost", c, PathBoost, c.bDiffs, c.boostAt) {
				f.Stats.UnsafeBoosts++
			} else {
				f.Stats.Unreproducible++
			}
		case NotVerifiable:
			f.Stats.NotVerifiable++
		case Inconclusive:
			f.Stats.Inconclusive++
		}
	default:
		if c.polAt >= 0 {
			switch Summarize(c.polDiffs) {
			case Diverged:
				if !f.divergence("policy-divergence", c, c.path, c.polDiffs, c.polAt) {
					f.Stats.Unreproducible++
					break
				}
				f.Stats.PolicyDivergences++
				if amd66Branch(&c.inst) {
					f.Stats.VendorDivergences++
				}
			case NotVerifiable:
				f.Stats.NotVerifiable++
			case Inconclusive:
				f.Stats.Inconclusive++
			}
		}
		if c.boostAt >= 0 && len(c.bDiffs) == T && Summarize(c.bDiffs) == Equivalent {
			c.missCand = true // confirmed with more states by confirmMissed
		}
	}
}

// missConfirm is how many more random states a missed-boost candidate must
// agree on (a jcc not taken on three states is no missed boost).
const missConfirm = 8

// confirmMissed runs every missed-boost candidate of the block boosted from
// missConfirm fresh states and reports those that still agree everywhere.
func (f *Fuzzer) confirmMissed(fc []fcase) error {
	var idx []int
	for i := range fc {
		if fc[i].missCand {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	if len(f.extra) != missConfirm {
		f.extra = make([]Trial, missConfirm)
	}
	for k := range f.extra {
		f.a.RandomTrial(f.rng, &f.extra[k])
	}
	cases := f.mcases[:0]
	for _, i := range idx {
		for k := range f.extra {
			h, err := fc[i].probe.HitCase(PathBoost, nil, &f.extra[k])
			if err != nil {
				return err
			}
			r := fc[i].probe.RefCase(&f.extra[k])
			r.Slot, r.SlotOffset = h.Slot, h.SlotOffset
			cases = append(cases, r, h)
		}
	}
	f.mcases = cases
	if len(f.mresults) < len(cases) {
		f.mresults = append(f.mresults, make([]Result, len(cases)-len(f.mresults))...)
	}
	rs := f.mresults[:len(cases)]
	if err := f.cfg.Backend.Run(cases, rs); err != nil {
		return err
	}
	T := len(f.trials) + missConfirm
	for j, i := range idx {
		c := &fc[i]
		ok := true
		for k := 0; k < missConfirm; k++ {
			at := 2 * (j*missConfirm + k)
			f.Stats.Checks++
			if c.probe.CompareHit(PathBoost, &cases[at+1], &rs[at], &rs[at+1]).Verdict != Equivalent {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f.Stats.MissedBoosts++
		f.report(&Finding{Kind: "missed-boost", Key: "missed:" + instKey(&c.inst), Bytes: hex.EncodeToString(c.inst.Bytes()),
			Asm: decode.Format(&c.inst, nil), Verdict: c.dec.Verdict.String(), Path: c.path.String(), Rules: c.dec.ReasonIDs(),
			Trials: fmt.Sprintf("0/%d diverged when boosted", T)})
	}
	return nil
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

// divergence reports the first divergence of an instruction form with a
// minimized reproducer; false when the minimization run could not make it
// diverge again (then nothing is reported and the form stays unseen).
func (f *Fuzzer) divergence(kind string, c *fcase, path Path, ds []Diff, at int) bool {
	key := kind + ":" + instKey(&c.inst)
	if f.seen[key] > 0 {
		f.seen[key]++
		return true
	}
	n, first := 0, -1
	var fields []string
	for k, d := range ds {
		if d.Verdict == Diverged {
			n++
			if first < 0 {
				first = k
				fields = d.Fields
			}
		}
	}
	fd := &Finding{Kind: kind, Key: key, Bytes: hex.EncodeToString(c.inst.Bytes()), Asm: decode.Format(&c.inst, nil),
		Verdict: c.dec.Verdict.String(), Path: path.String(), Rules: c.dec.ReasonIDs(), Diverged: fields,
		Trials: fmt.Sprintf("%d/%d diverged", n, len(ds))}
	if amd66Branch(&c.inst) {
		fd.Note = "AMD: a 66-prefixed near branch in 64-bit mode takes a 16-bit IP; the kernel's emulation (like Intel CPUs) ignores the prefix"
	}
	fd.Reproducer = f.minimize(c, path, &f.trials[first])
	if fd.Reproducer == nil {
		return false
	}
	f.report(fd)
	return true
}

// minimize zeroes every register (but the stack pointer) whose value does
// not matter to the divergence, and drops legacy prefixes that do not.
func (f *Fuzzer) minimize(c *fcase, path Path, t0 *Trial) *Reproducer {
	p := c.probe
	t := *t0
	check := func(p *Probe, t *Trial) (Diff, Result, Result, bool) {
		hc, err := CheckHit(f.cfg.Backend, p, path, nil, []Trial{*t})
		if err != nil || hc[0].Diff.Verdict != Diverged {
			return Diff{}, Result{}, Result{}, false
		}
		return hc[0].Diff, hc[0].RefR, hc[0].HitR, true
	}
	d, ref, hit, ok := check(&p, &t)
	if !ok {
		return nil
	}
	for r := 0; r < f.a.NumGPR(); r++ {
		if r == rSP || t.Regs.GPR[r] == 0 {
			continue
		}
		t2 := t
		t2.Regs.GPR[r] = 0
		if d2, r2, h2, ok := check(&p, &t2); ok {
			t, d, ref, hit = t2, d2, r2, h2
		}
	}
	// drop prefixes one at a time while the path stays the same and it diverges
	for changed := true; changed; {
		changed = false
		b := p.Inst.Bytes()
		for i := 0; i < p.Inst.NPrefix && i < len(b); i++ {
			nb := append(append([]byte(nil), b[:i]...), b[i+1:]...)
			np, err := NewProbe(f.a, nb, p.CodeOffset, p.SlotOffset)
			if err != nil {
				continue
			}
			dd := f.cfg.Policy.ClassifyBytesEnv(nb, f.a.Mode, np.Addr(), &f.env)
			if PathOf(&dd) != path && path != PathBoost {
				continue
			}
			if path == PathBoost && np.Inst.Len > 10 {
				continue
			}
			if d2, r2, h2, ok := check(np, &t); ok {
				p, d, ref, hit, changed = *np, d2, r2, h2, true
				break
			}
		}
	}
	rp := &Reproducer{Bytes: hex.EncodeToString(p.Inst.Bytes()), Regs: map[string]string{}, Flags: fmt.Sprintf("%#x", t.Regs.Flags),
		InPlace: describe(f.a, &ref), Hit: describe(f.a, &hit), Diff: d.String()}
	for r := 0; r < f.a.NumGPR(); r++ {
		if t.Regs.GPR[r] != 0 {
			rp.Regs[f.a.RegNames[r]] = fmt.Sprintf("%#x", t.Regs.GPR[r])
		}
	}
	return rp
}

func describe(a *Arch, r *Result) string {
	s := fmt.Sprintf("%v pc=%#x sp=%#x", r.Outcome, r.Regs.PC, r.Regs.GPR[a.sp])
	if r.Outcome == Faulted {
		s += " " + r.Fault.String()
	}
	return s
}

// lengthCheck compares the decoder's length with the CPU's.
func (f *Fuzzer) lengthCheck(in *decode.Inst, ok bool, b []byte, hw *HWLen) {
	switch hw.Outcome {
	case LenUnknown:
		f.Stats.LengthUnknown++
		return
	case LenRejected:
		f.Stats.CPURejected++
		return
	case LenTooShort:
		return // the candidate is a truncated instruction for the CPU too (or longer than 15)
	}
	f.Stats.LengthChecked++
	if !ok {
		var d decode.Inst
		err := decode.DecodeInto(&d, b, f.a.Mode, 0)
		switch {
		case (errors.Is(err, decode.ErrTooLong) || errors.Is(err, decode.ErrInvalid)) && hw.N == 15 && hw.Fault.Signal == SIGSEGV && hw.Fault.Code == siKernel:
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
	if hw.Outcome == LenFaulted && hw.N == 15 && hw.Fault.Signal == SIGSEGV && hw.Fault.Code == siKernel && in.Len < 15 {
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
func (f *Fuzzer) nondeterministic(c *fcase, t *Trial) bool {
	key := instKey(&c.inst)
	if v, ok := f.nondet[key]; ok {
		return v
	}
	v := f.differs(c.probe.RefCase(t))
	f.nondet[key] = v
	return v
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

// reproduces reruns the first diverging trial of ds: a finding must diverge
// again from the same state. In the rerun the in-place case carries the
// hit's slot image too (not entered), so both runs see the same memory: an
// instruction whose operand happens to read the slot page is not a finding.
func (f *Fuzzer) reproduces(c *fcase, path Path, ds []Diff) bool {
	for k, d := range ds {
		if d.Verdict != Diverged {
			continue
		}
		hit, err := c.probe.HitCase(path, nil, &f.trials[k])
		if err != nil {
			return false
		}
		ref := c.probe.RefCase(&f.trials[k])
		ref.Slot, ref.SlotOffset = hit.Slot, hit.SlotOffset
		rs := make([]Result, 2)
		if err := f.cfg.Backend.Run([]Case{ref, hit}, rs); err != nil {
			return false
		}
		c.probe.FixHit(path, &rs[1])
		return c.probe.CompareHit(path, &hit, &rs[0], &rs[1]).Verdict == Diverged
	}
	return false
}

// uncontrolled: some trial's memory operand lies outside the pages the
// sandbox controls and the in-place run did not fault on it.
func (f *Fuzzer) uncontrolled(c *fcase) bool {
	if c.inst.Mode == decode.Mode32 && c.inst.Prefixes&(decode.PfxFS|decode.PfxGS) != 0 &&
		((c.inst.HasModRM && c.inst.Mod() != 3) || c.inst.DispLen == 4 && !c.inst.HasModRM) {
		return true // the FS/GS base is not set per case (i386: a TLS segment)
	}
	for k := range f.trials {
		ea, ok := f.a.memOperand(&c.inst, &f.trials[k].Regs)
		if ok && !f.a.controlled(ea) && f.results[c.refAt+k].Outcome == Completed {
			return true
		}
	}
	return false
}
