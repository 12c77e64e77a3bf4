package kernelsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// A32Fuzzer is the engine of `kboost fuzz --arch arm`: for each generated
// word, linux-6.1-arm's decision against differential execution on the
// 32-bit ARM backend: the word in place versus the kernel's hit (the
// policy's slot called with the handler's register set-up and written back
// the way the handler does, or the kernel's simulation), over random
// states. ARM kprobes never boost, so the findings are policy-divergence
// (the kernel's way differs from the instruction) and slot-model (the
// policy's slot is not [renamed insn, mov pc, lr]). A divergence counts
// only when it reproduces and the in-place run is deterministic. Actions
// whose handler kboost does not model (LDM/STM emulation and simulation)
// count as Inconclusive.
type A32Fuzzer struct {
	cfg    FuzzConfig
	a      *Arch
	env    boost.Env
	rng    *rand.Rand
	seen   map[string]int
	nondet map[uint32]bool
	Stats  FuzzStats
	start  time.Time
	cpu0   time.Duration
	trials []Trial
	// Unmodelled counts words per action whose handler has no model.
	Unmodelled map[string]int
}

// NewA32Fuzzer prepares a fuzz run on the ARM32 backend.
func NewA32Fuzzer(cfg FuzzConfig) *A32Fuzzer {
	if cfg.Trials <= 0 {
		cfg.Trials = 3
	}
	f := &A32Fuzzer{cfg: cfg, a: cfg.Backend.Arch(), seen: map[string]int{}, nondet: map[uint32]bool{}, start: time.Now(), Unmodelled: map[string]int{}}
	if cfg.Env == nil {
		cfg.Env = SimEnv(cfg.Policy)
	}
	f.env = *cfg.Env
	f.env.SlotAddr = 0 // no optprobe detour range check
	f.rng = rand.New(rand.NewPCG(cfg.Seed, 0x613332667a))
	f.Stats.Verdicts = map[string]int{}
	f.Stats.LengthOracle = "not applicable: A32 instructions are 4 bytes"
	f.trials = make([]Trial, cfg.Trials)
	if c, ok := cfg.Backend.(cpuTimer); ok {
		f.cpu0 = c.CPUTime()
	}
	return f
}

// Counts returns the running counts.
func (f *A32Fuzzer) Counts() *FuzzStats { return &f.Stats }

type a32case struct {
	w    uint32
	inst decode.Inst
	dec  boost.Decision
	path Path
	p    A32Probe
}

// Block runs n cases.
func (f *A32Fuzzer) Block(n int) error {
	a := f.a
	addr := a.Layout.Orig + FuzzCodeOffset
	var fc []a32case
	for range n {
		b := f.cfg.Next(nil)
		f.Stats.Cases++
		if len(b) < 4 {
			f.Stats.DecodeInvalid++
			continue
		}
		var c a32case
		c.w = binary.LittleEndian.Uint32(b)
		if err := decode.ARM.Decode(&c.inst, b[:4], addr); err != nil {
			f.Stats.DecodeInvalid++ // the policy still judges the word
		}
		c.dec = f.cfg.Policy.ClassifyBytesEnv(b[:4], decode.ModeA32, addr, &f.env)
		c.path = PathOf(&c.dec)
		f.Stats.Verdicts[c.dec.Verdict.String()]++
		if c.path == PathNone {
			continue
		}
		c.p = A32Probe{Arch: a, Word: c.w, Action: A32Action(c.dec.ReasonIDs()), CodeOffset: FuzzCodeOffset, SlotOffset: FuzzSlotOffset}
		if c.path == PathSingleStep {
			if probs := VerifySlotA32(c.dec.SlotBytes()); len(probs) > 0 {
				f.Stats.SlotProblems++
				f.report(&Finding{Kind: "slot-model", Key: fmt.Sprintf("slot:%03x", c.w>>20&0xff), Bytes: a64Hex(c.w), Verdict: c.dec.Verdict.String(), Diverged: probs})
				continue
			}
		}
		fc = append(fc, c)
	}
	for k := range f.trials {
		a.RandomTrialA32(f.rng, &f.trials[k])
	}
	hs := make([]A32Hit, len(fc))
	for i := range fc {
		hs[i] = A32Hit{Probe: &fc[i].p, Path: fc[i].path, Slot: fc[i].dec.SlotBytes(), Trials: f.trials}
	}
	outs, errs, err := CheckHitsA32(f.cfg.Backend, hs)
	if err != nil {
		return err
	}
	for i := range fc {
		c := &fc[i]
		var ee *EmulateError
		if errors.As(errs[i], &ee) {
			f.Unmodelled[c.p.Action]++
			f.Stats.Inconclusive++
			continue
		} else if errs[i] != nil {
			return errs[i]
		}
		ds := make([]Diff, len(outs[i]))
		for k, h := range outs[i] {
			ds[k] = h.Diff
			f.Stats.Checks++
		}
		switch Summarize(ds) {
		case Diverged:
			first := -1
			for k, d := range ds {
				if d.Verdict == Diverged {
					first = k
					break
				}
			}
			if f.nondeterministic(c) {
				f.Stats.Nondeterministic++
				continue
			}
			hc, err := CheckHitA32(f.cfg.Backend, &c.p, c.path, c.dec.SlotBytes(), []Trial{f.trials[first]})
			if err != nil || hc[0].Diff.Verdict != Diverged {
				f.Stats.Unreproducible++
				continue
			}
			f.Stats.PolicyDivergences++
			f.divergence(c, ds, &hc[0])
		case NotVerifiable:
			f.Stats.NotVerifiable++
		case Inconclusive:
			f.Stats.Inconclusive++
		}
	}
	return nil
}

// VerifySlotA32 checks an A32 emulation slot image: one instruction word
// and mov pc, lr.
func VerifySlotA32(img []byte) []string {
	if len(img) != 8 {
		return []string{fmt.Sprintf("slot is %d bytes, want 8 (insn + mov pc, lr)", len(img))}
	}
	if t := binary.LittleEndian.Uint32(img[4:]); t != A32MovPCLR {
		return []string{fmt.Sprintf("slot tail %#08x is not mov pc, lr", t)}
	}
	return nil
}

func (f *A32Fuzzer) divergence(c *a32case, ds []Diff, h *HitCheck) {
	key := fmt.Sprintf("policy-divergence:%s/%s", strings.Join(c.dec.ReasonIDs(), ","), strings.Join(h.Diff.Fields, ","))
	if f.seen[key] > 0 {
		f.seen[key]++
		return
	}
	n := 0
	for _, d := range ds {
		if d.Verdict == Diverged {
			n++
		}
	}
	rp := &Reproducer{Bytes: a64Hex(c.w), Regs: map[string]string{}, Flags: fmt.Sprintf("%#x", h.Trial.Regs.Flags),
		InPlace: describeA32(&h.RefR), Hit: describeA32(&h.HitR), Diff: h.Diff.String()}
	for r := 0; r < f.a.NumGPR(); r++ {
		rp.Regs[f.a.RegNames[r]] = fmt.Sprintf("%#x", h.Trial.Regs.GPR[r])
	}
	f.report(&Finding{Kind: "policy-divergence", Key: key, Bytes: a64Hex(c.w), Asm: decode.Format(&c.inst, nil),
		Verdict: c.dec.Verdict.String(), Path: c.path.String(), Rules: c.dec.ReasonIDs(), Diverged: h.Diff.Fields,
		Trials: fmt.Sprintf("%d/%d diverged", n, len(ds)), Reproducer: rp})
}

func describeA32(r *Result) string {
	s := fmt.Sprintf("%v pc=%#x sp=%#x", r.Outcome, r.Regs.PC, r.Regs.GPR[a32RegSP])
	if r.Outcome == Faulted {
		s += " " + r.Fault.String()
	}
	return s
}

func (f *A32Fuzzer) report(fd *Finding) {
	if f.seen[fd.Key] > 0 {
		f.seen[fd.Key]++
		return
	}
	f.seen[fd.Key] = 1
	f.Stats.FindingKeys++
	fd.Arch, fd.Policy = f.a.Name, f.cfg.Policy.Name
	if f.cfg.OnFinding != nil {
		f.cfg.OnFinding(fd)
	}
}

// nondeterministic runs the in-place case three times from the first state.
func (f *A32Fuzzer) nondeterministic(c *a32case) bool {
	if v, ok := f.nondet[c.w]; ok {
		return v
	}
	t := &f.trials[0]
	cs := []Case{c.p.RefCase(t), c.p.RefCase(t), c.p.RefCase(t)}
	rs := make([]Result, 3)
	v := false
	if err := f.cfg.Backend.Run(cs, rs); err == nil {
		v = f.a.Compare(&rs[0], &rs[1], nil).Verdict != Equivalent || f.a.Compare(&rs[1], &rs[2], nil).Verdict != Equivalent
	}
	f.nondet[c.w] = v
	return v
}

// Finish computes the rates.
func (f *A32Fuzzer) Finish() FuzzStats {
	f.Stats.Elapsed = time.Since(f.start).Seconds()
	if c, ok := f.cfg.Backend.(cpuTimer); ok {
		f.Stats.CPUSeconds = (c.CPUTime() - f.cpu0).Seconds()
		if f.Stats.CPUSeconds > 0 {
			f.Stats.ChecksPerCPUSecond = float64(f.Stats.Checks) / f.Stats.CPUSeconds
		}
	}
	if f.Stats.Elapsed > 0 {
		f.Stats.ChecksPerSecond = float64(f.Stats.Checks) / f.Stats.Elapsed
		f.Stats.CasesPerSecond = float64(f.Stats.Cases) / f.Stats.Elapsed
	}
	return f.Stats
}

// A32Gen generates A32 words: random words within the encoding groups the
// kernel's tables split on (data processing, loads and stores, media,
// multiplies, branches, the unconditional space), fully random words, and
// mutations of sample words. A quarter keep a condition other than AL.
type A32Gen struct {
	rng     *rand.Rand
	samples []uint32
}

// NewA32Gen returns a generator; samples are real instruction words to
// mutate (may be empty).
func NewA32Gen(seed uint64, samples []uint32) *A32Gen {
	return &A32Gen{rng: rand.New(rand.NewPCG(seed, 0x6133326765)), samples: samples}
}

var a32Classes = []struct{ mask, value uint32 }{
	{0x0E000000, 0x00000000}, // data processing (register), misc, multiplies, extra loads/stores
	{0x0E000000, 0x02000000}, // data processing (immediate), MOVW/MOVT, MSR imm, hints
	{0x0E000000, 0x04000000}, // load/store immediate
	{0x0E000010, 0x06000000}, // load/store register
	{0x0E000010, 0x06000010}, // media
	{0x0E000000, 0x08000000}, // LDM/STM
	{0x0E000000, 0x0A000000}, // B/BL
	{0x0FFFFFD0, 0x012FFF10}, // BX/BLX register
	{0x0F9000F0, 0x01000000}, // MRS/MSR register
	{0x0E0000F0, 0x00000090}, // multiplies, SWP, exclusives
	{0x0E000090, 0x00000090}, // extra loads/stores (LDRH, LDRD...)
	{0x0FFF0000, 0x052D0000}, // push-like stores (stack checker)
	{0x0FFF0000, 0x092D0000}, // STMDB sp!
	{0x0C000000, 0x0C000000}, // coprocessor, SVC
}

// Next appends one 4-byte candidate to dst.
func (g *A32Gen) Next(dst []byte) []byte {
	var w uint32
	switch r := g.rng.IntN(20); {
	case r < 6 && len(g.samples) > 0:
		w = g.samples[g.rng.IntN(len(g.samples))]
		switch g.rng.IntN(4) {
		case 0: // as is
		case 1:
			w ^= 1 << g.rng.IntN(28)
		case 2: // new register fields
			for _, sh := range []int{0, 8, 12, 16} {
				if g.rng.IntN(2) == 0 {
					w = w&^(15<<sh) | uint32(g.rng.IntN(16))<<sh
				}
			}
		case 3:
			w = w&^0xFFF | g.rng.Uint32()&0xFFF
		}
	case r < 8:
		w = g.rng.Uint32()
	default:
		c := a32Classes[g.rng.IntN(len(a32Classes))]
		w = c.value&c.mask | g.rng.Uint32()&^c.mask&0x0FFFFFFF
		if g.rng.IntN(4) == 0 {
			w |= uint32(g.rng.IntN(14)) << 28
		} else {
			w |= 0xE0000000
		}
	}
	// short branches: targets in or next to the code page
	if w&0x0E000000 == 0x0A000000 && g.rng.IntN(2) == 0 {
		w = w&^0xFFFFFF | uint32(g.rng.IntN(32)-16)&0xFFFFFF
	}
	return binary.LittleEndian.AppendUint32(dst, w)
}
