package cli

import (
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
	code       []byte
	mode       decode.Mode
	pol        *boost.Policy
	env        *boost.Env
	addr, slot uint64
	force      kernelsim.Path
	trials     int
	seed       uint64
	set        map[string]uint64
	it         string // Thumb: the condition of an IT block ending at the probe
	opts       kernelsim.Options
}

// armCmd is what `kboost sim` and `kboost fuzz` need per ARM instruction
// set, which run under qemu-user through kernelsim.GDB (x86 runs on the
// CPU: simulate, kernelsim.NewFuzzer).
type armCmd struct {
	arch       *kernelsim.Arch
	policy     string // default --policy
	addr, slot uint64 // default --addr and --slot
	sim        func(s *simArgs) (*simReport, error)
	// random fills a trial; flags names the flags register for --set.
	random func(a *kernelsim.Arch, rng *rand.Rand, t *kernelsim.Trial)
	flags  []string
	// fuzz starts the backend and the fuzzer with its generator.
	fuzz func(pol *boost.Policy, trials int, seed uint64, opts kernelsim.Options, onFinding func(*kernelsim.Finding)) (fuzzBackend, fuzzEngine, string, error)
}

var armCmds map[decode.Mode]*armCmd

func init() {
	armCmds = map[decode.Mode]*armCmd{
		decode.ModeA64: {arch: kernelsim.ARM64, policy: "linux-6.1-arm64", addr: a64DefaultAddr, slot: a64DefaultSlot,
			sim: simulateA64, random: (*kernelsim.Arch).RandomTrialA64, flags: []string{"flags", "nzcv"}, fuzz: newA64Fuzz},
		decode.ModeA32: {arch: kernelsim.ARM32, policy: "linux-6.1-arm", addr: a32DefaultAddr, slot: a32DefaultSlot,
			sim: simulateARM32, random: (*kernelsim.Arch).RandomTrialA32, flags: []string{"flags", "cpsr", "apsr"},
			fuzz: newARM32Fuzz(kernelsim.ARM32)},
		decode.ModeT32: {arch: kernelsim.Thumb, policy: "linux-6.1-thumb", addr: a32DefaultAddr, slot: a32DefaultSlot,
			sim: simulateARM32, random: (*kernelsim.Arch).RandomTrialA32, flags: []string{"flags", "cpsr", "apsr"},
			fuzz: newARM32Fuzz(kernelsim.Thumb)},
	}
}

// trials returns n random states for a, each with the --set registers.
func (ac *armCmd) trials(s *simArgs) ([]kernelsim.Trial, error) {
	a := ac.arch
	rng := rand.New(rand.NewPCG(s.seed, 0x73696d))
	ts := make([]kernelsim.Trial, max(s.trials, 1))
	for i := range ts {
		ac.random(a, rng, &ts[i])
		for k, v := range s.set {
			if slices.Contains(ac.flags, k) {
				ts[i].Regs.Flags = v & a.FlagsMask
				continue
			}
			r := slices.Index(a.RegNames, k)
			if r < 0 {
				return nil, usagef("--set %s: no register %q on %s (registers: %s, %s)", k, k, a.Name, strings.Join(a.RegNames, " "), ac.flags[1])
			}
			if k == "sp" {
				return nil, usagef("--set sp: the stack pointer is fixed by the sandbox")
			}
			ts[i].Regs.GPR[r] = v & a.RegMask
		}
	}
	return ts, nil
}

// simTrials adds the checked hits to rep and concludes.
func simTrials(rep *simReport, a *kernelsim.Arch, path kernelsim.Path, hc []kernelsim.HitCheck) {
	var ds []kernelsim.Diff
	for _, h := range hc {
		rep.Trials = append(rep.Trials, simTrial{HitPath: path.String(), Verdict: h.Diff.Verdict.String(), Diverged: h.Diff.Fields,
			InPlace: stateOf(a, &h.RefR), Sim: stateOf(a, &h.HitR), regNames: a.RegNames, ref: h.RefR, hit: h.HitR})
		ds = append(ds, h.Diff)
	}
	rep.Conclusion = conclude(rep, path, ds, emulatorWords)
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

// conclude says whether the hits confirm or refute the claim.
func conclude(rep *simReport, path kernelsim.Path, ds []kernelsim.Diff, w backendWords) string {
	n := 0
	for _, d := range ds {
		if d.Verdict == kernelsim.Equivalent {
			n++
		}
	}
	claim := rep.Verdict
	if rep.Verdict != path.String() {
		claim = fmt.Sprintf("%s (hit path %s)", rep.Verdict, path)
	}
	if rep.Forced {
		claim = fmt.Sprintf("forced %s (policy: %s)", path, rep.Verdict)
	}
	switch kernelsim.Summarize(ds) {
	case kernelsim.Equivalent:
		return fmt.Sprintf("%s CONFIRMED: the hit matches %s on %d/%d states", claim, w.ref, n, len(ds))
	case kernelsim.Diverged:
		return fmt.Sprintf("%s REFUTED: the hit differs from %s on %d/%d states", claim, w.ref, len(ds)-n, len(ds))
	case kernelsim.NotVerifiable:
		return claim + ": not verifiable in user mode (" + w.notVerifiable + ")"
	}
	return claim + ": inconclusive (" + w.inconclusive + ")"
}

// addExecFlag adds --exec (sim and fuzz): what executes the cases.
func addExecFlag(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "exec", "auto", "what executes the cases: auto (the CPU where this kernel runs the mode's code, else its qemu-user emulator), cpu or qemu")
	cmd.RegisterFlagCompletionFunc("exec", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return kernelsim.ExecModeNames(), cobra.ShellCompDirectiveNoFileComp
	})
}
