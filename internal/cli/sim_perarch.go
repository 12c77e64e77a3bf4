package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	"github.com/spf13/cobra"
)

// simArgs are the inputs of one `kboost sim` run.
type simArgs struct {
	ctx        context.Context // cancelled by SIGINT: the run stops and reports what it checked
	code       []byte
	arch       *decode.Arch
	mode       decode.Mode
	pol        *boost.Policy
	env        *boost.Env
	addr, slot uint64
	force      kernelsim.Path
	trials     int // states per hit
	show       int // states per hit printed in full, and diverging ones beyond them
	seed       uint64
	set        map[string]uint64
	it         string // Thumb: the condition of an IT block ending at the probe
	opts       kernelsim.Options
	prog       *simProgress
}

// armCmd is what `kboost sim` and `kboost fuzz` need per ARM instruction
// set, which run under qemu-user through kernelsim.GDB (x86 runs on the
// CPU: simulate, kernelsim.NewFuzzer).
type armCmd struct {
	arch *kernelsim.Arch
	sim  func(s *simArgs) (*simReport, error)
	// random fills a trial; flags names the flags register for --set.
	random func(a *kernelsim.Arch, rng *rand.Rand, t *kernelsim.Trial)
	flags  []string
	// fuzz starts the backend and the fuzzer with its generator.
	fuzz func(pol *boost.Policy, trials int, seed uint64, opts kernelsim.Options, onFinding func(*kernelsim.Finding)) (fuzzBackend, fuzzEngine, string, error)
}

var armCmds map[*decode.Arch]*armCmd

func init() {
	armCmds = map[*decode.Arch]*armCmd{
		decode.ARM64: {arch: kernelsim.ARM64,
			sim: simulateA64, random: (*kernelsim.Arch).RandomTrialA64, flags: []string{"flags", "nzcv"}, fuzz: newA64Fuzz},
		decode.ARM: {arch: kernelsim.ARM32,
			sim: simulateARM32, random: (*kernelsim.Arch).RandomTrialA32, flags: []string{"flags", "cpsr", "apsr"},
			fuzz: newARM32Fuzz(kernelsim.ARM32)},
		decode.Thumb: {arch: kernelsim.Thumb,
			sim: simulateARM32, random: (*kernelsim.Arch).RandomTrialA32, flags: []string{"flags", "cpsr", "apsr"},
			fuzz: newARM32Fuzz(kernelsim.Thumb)},
	}
}

// fill returns the state generator of s for a: random states, each with
// the --set registers.
func (ac *armCmd) fill(s *simArgs) func(rng *rand.Rand, t *kernelsim.Trial) error {
	a := ac.arch
	return func(rng *rand.Rand, t *kernelsim.Trial) error {
		ac.random(a, rng, t)
		for k, v := range s.set {
			if slices.Contains(ac.flags, k) {
				t.Regs.Flags = v & a.FlagsMask
				continue
			}
			r := slices.Index(a.RegNames, k)
			if r < 0 {
				return usagef("--set %s: no register %q on %s (registers: %s, %s)", k, k, a.Name, strings.Join(a.RegNames, " "), ac.flags[1])
			}
			if k == "sp" {
				return usagef("--set sp: the stack pointer is fixed by the sandbox")
			}
			t.Regs.GPR[r] = v & a.RegMask
		}
		return nil
	}
}

// simBatch is how many states one sandbox batch checks: a sim's memory is
// bounded by it, whatever --trials.
const simBatch = 256

// simStates counts every state of a sim run by verdict (the report keeps
// only a few of them in full).
type simStates struct {
	Total         int `json:"total"`
	Equivalent    int `json:"equivalent"`
	Diverged      int `json:"diverged"`
	NotVerifiable int `json:"not_verifiable"`
	Inconclusive  int `json:"inconclusive"`
	// DivergedFields counts, per register or memory word, the states in
	// which it differed.
	DivergedFields map[string]int `json:"diverged_fields,omitempty"`
	Requested      int            `json:"requested"` // states asked for, per hit (--trials)
	Interrupted    bool           `json:"interrupted,omitempty"`
}

// simRun streams the states of one sim through the hit: it counts all of
// them and keeps, per hit, the first s.show in full and up to s.show more
// that diverge.
type simRun struct {
	s         *simArgs
	rep       *simReport
	a         *kernelsim.Arch
	fill      func(rng *rand.Rand, t *kernelsim.Trial) error
	prog      *simProgress
	st        simStates
	shownDiff int // diverging states kept beyond the first s.show, this hit
}

func newSimRun(s *simArgs, rep *simReport, a *kernelsim.Arch, fill func(rng *rand.Rand, t *kernelsim.Trial) error) *simRun {
	r := &simRun{s: s, rep: rep, a: a, fill: fill, prog: s.prog}
	r.st.Requested = s.trials
	rep.States = &r.st
	return r
}

// run checks s.trials states (the same sequence for every hit: the seed
// restarts) through check, simBatch at a time, numbering them for hit; it
// stops early, with st.Interrupted, when s.ctx is done.
func (r *simRun) run(hit int, hitPath string, check func(ts []kernelsim.Trial) ([]kernelsim.HitCheck, error)) error {
	rng := rand.New(rand.NewPCG(r.s.seed, 0x73696d))
	ts := make([]kernelsim.Trial, min(r.s.trials, simBatch))
	r.shownDiff = 0
	for done := 0; done < r.s.trials; {
		if r.s.ctx != nil && r.s.ctx.Err() != nil {
			r.st.Interrupted = true
			return nil
		}
		k := min(len(ts), r.s.trials-done)
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
		r.prog.update(r.st.Total, r.st.Diverged)
	}
	return nil
}

func (r *simRun) add(hit, state int, hitPath string, h *kernelsim.HitCheck) {
	st := &r.st
	st.Total++
	switch h.Diff.Verdict {
	case kernelsim.Equivalent:
		st.Equivalent++
	case kernelsim.Diverged:
		st.Diverged++
		if st.DivergedFields == nil {
			st.DivergedFields = map[string]int{}
		}
		for _, f := range h.Diff.Fields {
			st.DivergedFields[f]++
		}
	case kernelsim.NotVerifiable:
		st.NotVerifiable++
	default:
		st.Inconclusive++
	}
	keep := state <= r.s.show
	if !keep && h.Diff.Verdict == kernelsim.Diverged && r.shownDiff < r.s.show {
		keep = true
		r.shownDiff++
	}
	if keep {
		r.rep.Trials = append(r.rep.Trials, simTrial{Hit: hit, State: state, HitPath: hitPath, Verdict: h.Diff.Verdict.String(), Diverged: h.Diff.Fields,
			InPlace: stateOf(r.a, &h.RefR), Sim: stateOf(r.a, &h.HitR), regNames: r.a.RegNames, ref: h.RefR, hit: h.HitR,
			refIn: entryRegs(r.a, &h.Ref), hitIn: entryRegs(r.a, &h.Hit)})
	}
}

// runOne is run for a single hit on path, then conclude; an EmulateError
// (an emulation kboost does not model) is the conclusion.
func (r *simRun) runOne(path kernelsim.Path, w backendWords, check func(ts []kernelsim.Trial) ([]kernelsim.HitCheck, error)) error {
	err := r.run(0, path.String(), check)
	var ee *kernelsim.EmulateError
	if errors.As(err, &ee) {
		r.prog.finish()
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
func (r *simRun) conclude(path kernelsim.Path, w backendWords) {
	r.prog.finish()
	r.rep.Conclusion = conclude(r.rep, path, &r.st, w)
}

// backendWords name, in a sim conclusion, what the hit was compared with and
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
// that order (kernelsim.Summarize).
func conclude(rep *simReport, path kernelsim.Path, st *simStates, w backendWords) string {
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

// addExecFlag adds --exec (sim and fuzz): what executes the cases.
func addExecFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "exec", "auto", "what executes the cases: auto (the CPU where this kernel runs the mode's code, else its qemu-user emulator), cpu or qemu")
	cmd.RegisterFlagCompletionFunc("exec", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return kernelsim.ExecModeNames(), cobra.ShellCompDirectiveNoFileComp
	})
}
