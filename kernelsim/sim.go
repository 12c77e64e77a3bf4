package kernelsim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// SimOptions say how Simulate models and checks one probe.
type SimOptions struct {
	// Addr is the probed instruction's address, SlotAddr the slot's (the
	// model's addresses; the sandbox runs both at the same page offsets).
	Addr, SlotAddr uint64
	// Preemption models a kernel with CONFIG_PREEMPTION (Debian's, which
	// never boosts); off, the policy's SimEnv.
	Preemption bool
	// Path forces a hit path other than the policy's ("what if this were
	// boosted?"); PathNone keeps the policy's.
	Path Path
	// Trials random register states are checked, in batches of SimBatch;
	// the first Show are reported in full, and up to Show more that diverge.
	Trials, Show int
	Seed         uint64
	// Set gives registers (by the arch's names; "flags" and the arch's
	// flags register name) a value in every state.
	Set map[string]uint64
	// IT is, for Thumb, the condition of a one-instruction IT block ending
	// at the probe ("" for none).
	IT string
	// Backend configures the backend that executes the cases.
	Backend Options
	// Progress, when not nil, is told how the run advances.
	Progress SimProgress
}

// SimProgress follows a long Simulate run.
type SimProgress interface {
	SetTotal(states int)       // states of the whole run (lazy boosts: every hit)
	Update(done, diverged int) // after every batch
	Finish()                   // before the conclusion
}

// ErrInput is wrapped by the error Simulate returns for an instruction or
// an option it cannot take as given.
var ErrInput = errors.New("kernelsim: bad simulation input")

// InputError is a mistake in Simulate's input. Msg names the option the
// way `kboost sim` spells it as a flag (--addr, --set, --it, --path).
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }
func (e *InputError) Unwrap() error { return ErrInput }

func inputf(format string, a ...any) error { return &InputError{fmt.Sprintf(format, a...)} }

// SimSlotLine is one instruction of the slot, disassembled, with what it is for.
type SimSlotLine struct {
	Off   int    `json:"off"`
	Bytes string `json:"bytes"`
	Asm   string `json:"asm"`
	Note  string `json:"note,omitempty"`
}

// SimState is the final state of one run.
type SimState struct {
	Outcome string            `json:"outcome"`
	PC      string            `json:"pc"`
	Fault   string            `json:"fault,omitempty"`
	Regs    map[string]string `json:"regs"`
	Flags   string            `json:"flags"`
}

// SimTrial is one state reported in full: the instruction run in place and
// through the simulated hit.
type SimTrial struct {
	Hit      int      `json:"hit,omitempty"` // 2006 lazy booster: hit number
	State    int      `json:"state"`         // 1..Trials: which state
	HitPath  string   `json:"hit_path"`
	Verdict  string   `json:"verdict"`
	Diverged []string `json:"diverged,omitempty"`
	InPlace  SimState `json:"in_place"`
	Sim      SimState `json:"simulated_hit"`
	// RegNames name the registers of InPlace and Sim in order.
	RegNames []string `json:"-"`
	// RefResult and HitResult are the two runs' results (their memory is
	// what a differing "stack+0xNN" field names).
	RefResult, HitResult Result `json:"-"`
	// RefEntry and HitEntry are the registers each run starts with, PC its
	// entry.
	RefEntry, HitEntry Regs `json:"-"`
}

// SimStates counts every state of a run by verdict (the report keeps only
// a few of them in full).
type SimStates struct {
	Total         int `json:"total"`
	Equivalent    int `json:"equivalent"`
	Diverged      int `json:"diverged"`
	NotVerifiable int `json:"not_verifiable"`
	Inconclusive  int `json:"inconclusive"`
	// DivergedFields counts, per register or memory word, the states in
	// which it differed.
	DivergedFields map[string]int `json:"diverged_fields,omitempty"`
	Requested      int            `json:"requested"` // states asked for, per hit (Trials)
	Interrupted    bool           `json:"interrupted,omitempty"`
}

// SimReport is what Simulate found: the policy's decision, the slot the
// kernel writes and its check, the states run and the conclusion. Its JSON
// form is `kboost sim --json` (schemas/sim.schema.json).
type SimReport struct {
	Arch        string        `json:"arch"`
	Policy      string        `json:"policy"`
	Config      string        `json:"-"`      // the modelled kernel, in words
	ConfigFlags []string      `json:"config"` // as explain's
	Bytes       string        `json:"bytes"`
	Asm         string        `json:"asm"`
	Addr        string        `json:"addr"`
	SlotAddr    string        `json:"slot_addr"`
	Verdict     string        `json:"verdict"`
	Errno       string        `json:"errno,omitempty"`
	Reasons     []string      `json:"reasons"`
	Details     []string      `json:"details"`
	Path        string        `json:"path"`
	Forced      bool          `json:"forced,omitempty"`
	Slot        []SimSlotLine `json:"slot_lines,omitempty"` // the slot disassembled
	SlotHex     string        `json:"slot,omitempty"`       // the slot image, as explain's
	JumpBack    string        `json:"jump_back,omitempty"`
	MaxInsnSize int           `json:"max_insn_size"`
	Problems    []string      `json:"layout_problems,omitempty"`
	RangeError  string        `json:"slot_refused,omitempty"`
	Sandbox     string        `json:"sandbox"`
	Trials      []SimTrial    `json:"shown_states"` // the states shown in full (Show)
	States      *SimStates    `json:"states,omitempty"`
	Lazy        []string      `json:"lazy_boost,omitempty"`
	Conclusion  string        `json:"conclusion"`
}

// simArch is Simulate's per-architecture data, keyed on the decoder's Arch
// (x86_sim.go, a64_sim.go, a32_sim.go).
type simArch struct {
	ka  *Arch
	sim func(s *simRun) error
	// random fills a trial; flags names the flags register for Set (its
	// last name is the one an error lists), mask says whether set values
	// are masked to the register width.
	random func(a *Arch, rng *rand.Rand, t *Trial)
	flags  []string
	mask   bool
	// kernelText says whether an address is one the model can take as the
	// probe's (SimAddr).
	kernelText func(at uint64) bool
}

var simArches = map[*decode.Arch]*simArch{}

// SimAddr is where Simulate should model an instruction found at at: at
// itself where the arch's slot can reach it from there, else the arch's
// kernel text address (user-space code modelled as kernel code).
func SimAddr(arch *decode.Arch, at uint64) uint64 {
	if sa := simArches[arch]; sa != nil && sa.kernelText != nil && sa.kernelText(at) {
		return at
	}
	return arch.TextAddr
}

// SimBatch is how many states one backend batch checks: a run's memory is
// bounded by it, whatever SimOptions.Trials.
const SimBatch = 256

// Simulate models a kprobe on the instruction in code (memory order) at
// o.Addr the way pol's kernel does it — its decision, the slot it writes
// and a check of that slot's layout — then runs the instruction in place
// and through the simulated hit (boosted slot, single-step slot with its
// fix-ups, or the kernel's emulation) from o.Trials random states on the
// CPU or under qemu-user, and concludes whether the hit is confirmed or
// refuted. A refuted hit is a report with States.Diverged > 0, not an
// error; cancelling ctx stops the run and reports the states checked so
// far (States.Interrupted). Bad input gives an *InputError.
func Simulate(ctx context.Context, arch *decode.Arch, code []byte, pol *boost.Policy, o *SimOptions) (*SimReport, error) {
	sa := simArches[arch]
	if sa == nil {
		return nil, fmt.Errorf("kernelsim: no simulation for %s: %w", arch.Name, errNotSupported)
	}
	env := SimEnv(pol)
	if o.Preemption {
		env = pol.DefaultEnv()
		env.Config.Preemption = true
	}
	r := &simRun{ctx: ctx, o: o, sa: sa, a: sa.ka, arch: arch, code: code, pol: pol, env: env, prog: o.Progress,
		rep: &SimReport{Arch: sa.ka.Name, Policy: pol.Name, Addr: hexAddr(o.Addr), SlotAddr: hexAddr(o.SlotAddr), MaxInsnSize: pol.MaxInsnSize}}
	if r.prog == nil {
		r.prog = noProgress{}
	}
	if err := sa.sim(r); err != nil {
		return nil, err
	}
	r.rep.ConfigFlags = env.Config.Flags()
	return r.rep, nil
}

type noProgress struct{}

func (noProgress) SetTotal(int)    {}
func (noProgress) Update(int, int) {}
func (noProgress) Finish()         {}

func hexAddr(v uint64) string { return fmt.Sprintf("%#x", v) }

// config is the modelled kernel in words, for the non-ARM models.
func preemptionConfig(env *boost.Env) string {
	if env.Config.Preemption {
		return "CONFIG_PREEMPTION on: never boosted"
	}
	return "CONFIG_PREEMPTION off"
}

// decided fills the report's decision fields from d and returns the hit
// path, the forced one where o.Path gives it.
func (r *simRun) decided(d *boost.Decision, path Path) Path {
	rep := r.rep
	rep.Verdict = d.Verdict.String()
	rep.Errno = d.Errno.String()
	rep.Reasons = d.ReasonIDs()
	rep.Details = make([]string, len(d.Reasons))
	for i, x := range d.Reasons {
		rep.Details[i] = x.Text
	}
	if r.o.Path != PathNone {
		path, rep.Forced = r.o.Path, true
	}
	rep.Path = path.String()
	return path
}

// fill is the state generator: random states, each with the Set registers.
func (r *simRun) fill(rng *rand.Rand, t *Trial) error {
	sa, a := r.sa, r.a
	sa.random(a, rng, t)
	for k, v := range r.o.Set {
		if slices.Contains(sa.flags, k) {
			if sa.mask {
				v &= a.FlagsMask
			}
			t.Regs.Flags = v
			continue
		}
		i := slices.Index(a.RegNames, k)
		if i < 0 {
			return inputf("--set %s: no register %q on %s (registers: %s, %s)", k, k, a.Name, strings.Join(a.RegNames, " "), sa.flags[len(sa.flags)-1])
		}
		if i == a.SP {
			return inputf("--set %s: the stack pointer is fixed by the sandbox", k)
		}
		if sa.mask {
			v &= a.RegMask
		}
		t.Regs.GPR[i] = v
	}
	return nil
}

// simRun is one Simulate call: it streams the states through the hit,
// counts all of them and keeps, per hit, the first o.Show in full and up to
// o.Show more that diverge.
type simRun struct {
	ctx       context.Context
	o         *SimOptions
	sa        *simArch
	a         *Arch
	arch      *decode.Arch
	code      []byte
	pol       *boost.Policy
	env       *boost.Env
	rep       *SimReport
	prog      SimProgress
	st        SimStates
	started   bool
	shownDiff int // diverging states kept beyond the first o.Show, this hit
}

// run checks o.Trials states (the same sequence for every hit: the seed
// restarts) through check, SimBatch at a time, numbering them for hit; it
// stops early, with st.Interrupted, when ctx is done.
func (r *simRun) run(hit int, hitPath string, check func(ts []Trial) ([]HitCheck, error)) error {
	r.begin()
	rng := rand.New(rand.NewPCG(r.o.Seed, 0x73696d))
	ts := make([]Trial, min(r.o.Trials, SimBatch))
	r.shownDiff = 0
	for done := 0; done < r.o.Trials; {
		if r.ctx != nil && r.ctx.Err() != nil {
			r.st.Interrupted = true
			return nil
		}
		k := min(len(ts), r.o.Trials-done)
		for i := range ts[:k] {
			if err := r.fill(rng, &ts[i]); err != nil {
				return err
			}
		}
		hc, err := check(ts[:k])
		if err != nil {
			return err
		}
		for i := range hc {
			r.add(hit, done+i+1, hitPath, &hc[i])
		}
		done += k
		r.prog.Update(r.st.Total, r.st.Diverged)
	}
	return nil
}

// begin puts the state counts in the report (with none counted yet).
func (r *simRun) begin() {
	if !r.started {
		r.started = true
		r.st.Requested = r.o.Trials
		r.rep.States = &r.st
	}
}

func (r *simRun) add(hit, state int, hitPath string, h *HitCheck) {
	st := &r.st
	st.Total++
	switch h.Diff.Verdict {
	case Equivalent:
		st.Equivalent++
	case Diverged:
		st.Diverged++
		if st.DivergedFields == nil {
			st.DivergedFields = map[string]int{}
		}
		for _, f := range h.Diff.Fields {
			st.DivergedFields[f]++
		}
	case NotVerifiable:
		st.NotVerifiable++
	default:
		st.Inconclusive++
	}
	keep := state <= r.o.Show
	if !keep && h.Diff.Verdict == Diverged && r.shownDiff < r.o.Show {
		keep = true
		r.shownDiff++
	}
	if keep {
		r.rep.Trials = append(r.rep.Trials, SimTrial{Hit: hit, State: state, HitPath: hitPath, Verdict: h.Diff.Verdict.String(), Diverged: h.Diff.Fields,
			InPlace: stateOf(r.a, &h.RefR), Sim: stateOf(r.a, &h.HitR), RegNames: r.a.RegNames, RefResult: h.RefR, HitResult: h.HitR,
			RefEntry: entryRegs(r.a, &h.Ref), HitEntry: entryRegs(r.a, &h.Hit)})
	}
}

func stateOf(a *Arch, r *Result) SimState {
	st := SimState{Outcome: r.Outcome.String(), PC: hexAddr(r.Regs.PC), Regs: map[string]string{}, Flags: hexAddr(r.Regs.Flags)}
	if r.Outcome == Faulted {
		st.Fault = r.Fault.String()
	}
	for i, n := range a.RegNames {
		st.Regs[n] = hexAddr(r.Regs.GPR[i])
	}
	return st
}

// entryRegs is the register state a case starts with, its PC the case's
// entry (Case.Regs.PC is not used by the backends).
func entryRegs(a *Arch, c *Case) Regs {
	r := c.Regs
	r.PC = c.CodeAddr(a.Layout)
	if c.EntrySlot {
		r.PC = c.SlotAddr(a.Layout)
	}
	return r
}

// runOne is run for a single hit on path, then conclude; an EmulateError
// (an emulation kboost does not model) is the conclusion.
func (r *simRun) runOne(path Path, w backendWords, check func(ts []Trial) ([]HitCheck, error)) error {
	err := r.run(0, path.String(), check)
	var ee *EmulateError
	if errors.As(err, &ee) {
		r.prog.Finish()
		r.rep.Conclusion = ee.Error()
		return nil
	}
	if err != nil {
		return err
	}
	r.conclude(path, w)
	return nil
}

// conclude sets the report's conclusion from the states counted.
func (r *simRun) conclude(path Path, w backendWords) {
	r.prog.Finish()
	r.rep.Conclusion = conclude(r.rep, path, &r.st, w)
}

// refused concludes a run with no hit to simulate.
func (r *simRun) refused(d *boost.Decision) {
	r.rep.Conclusion = fmt.Sprintf("refused (%s): no hit to simulate; try --path boost", d.Errno)
}

// backendWords name, in a conclusion, what the hit was compared with and
// why a case could not be decided.
type backendWords struct {
	ref           string // what the hit is compared with
	notVerifiable string // why user mode cannot run the instruction
	inconclusive  string // what stopped the run
}

var (
	emulatorWords = backendWords{"the in-place run", "undefined at EL0, or a system call", "timeout or emulator crash"}
	cpuWords      = backendWords{"the CPU", "the CPU refuses the instruction at CPL 3", "timeout or sandbox crash"}
)

// conclude says whether the hits confirm or refute the claim: refuted if
// any state diverged, else inconclusive, not verifiable or confirmed, in
// that order (Summarize).
func conclude(rep *SimReport, path Path, st *SimStates, w backendWords) string {
	claim := rep.Verdict
	if rep.Verdict != path.String() {
		claim = fmt.Sprintf("%s (hit path %s)", rep.Verdict, path)
	}
	if rep.Forced {
		claim = fmt.Sprintf("forced %s (policy: %s)", path, rep.Verdict)
	}
	stop := ""
	if st.Interrupted {
		stop = fmt.Sprintf(" (interrupted: %d states checked)", st.Total)
	}
	switch {
	case st.Diverged > 0:
		return fmt.Sprintf("%s REFUTED: the hit differs from %s on %d/%d states%s", claim, w.ref, st.Diverged, st.Total, stop)
	case st.Inconclusive > 0:
		return claim + ": inconclusive (" + w.inconclusive + ")" + stop
	case st.NotVerifiable > 0:
		return claim + ": not verifiable in user mode (" + w.notVerifiable + ")" + stop
	case st.Total == 0:
		return claim + ": no state checked" + stop
	}
	return fmt.Sprintf("%s CONFIRMED: the hit matches %s on %d/%d states%s", claim, w.ref, st.Equivalent, st.Total, stop)
}

// pageOffsets are where the sandbox runs code and slot: the model's page
// offsets, kept an image's size from the page end.
func pageOffsets(addr, slot uint64) (codeOff, slotOff int) {
	return min(int(addr%PageSize), PageSize-ImageSize), min(int(slot%PageSize), PageSize-ImageSize)
}
