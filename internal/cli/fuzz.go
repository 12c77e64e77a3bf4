package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newFuzzCmd(s Streams) *cobra.Command {
	var (
		archName, policyName, out, tag string
		n, trials                      int
		dur, caseTimeout               time.Duration
		seed                           uint64
		jsonOut, quiet                 bool
	)
	cmd := &cobra.Command{
		Use:   "fuzz",
		Short: "Differential fuzz: kboost's verdicts and decoder against the CPU",
		Long: `Generate x86 instructions (structured: prefixes x opcode maps x ModRM/SIB x
displacement x immediate, plus mutations of real kernel instructions sampled from
the cached Debian vmlinux, else from /usr/bin), and for each one:

  - compare the decoder's length with the CPU's (page-boundary oracle);
  - classify it under --policy (CONFIG_PREEMPTION off, so boosting is on) and run
    it in place and through the simulated kprobe hit (boosted slot, single-step
    slot with the IP fixup, or the kernel's emulation) from several random
    register states, comparing registers, flags, IP, stack and scratch memory.

Findings go to --out as JSON lines (deduplicated by instruction form, each with a
minimized reproducer): unsafe-boost (boosted but diverges: a kboost or kernel
bug), policy-divergence (the kernel's emulation or single-step diverges from the
CPU: a finding about Linux), missed-boost (not boosted, but boosting agreed on
every trial), length / length-vendor / decoder-rejects. The 66-prefixed near
branches that AMD CPUs decode with rel16 in 64-bit mode are counted as
length-vendor, not as decoder errors. Ctrl-C stops and still prints the summary.

--arch arm64 (policies linux-6.1-arm64, the default there, and boost-arm64)
generates A64 words within instruction classes plus mutations of words from a
cached Debian arm64 vmlinux, and runs them under qemu-aarch64-static (driven
through its gdb stub): in place versus the hit's slot ([insn, BRK #6] with the
PC fix-up, or boost-arm64's [insn, B addr+4]) or the kernel's simulation,
comparing x0..x30, sp, NZCV, PC, v0..v31/FPSR/FPCR, stack and scratch memory.

--arch arm (linux-6.1-arm) and --arch thumb (linux-6.1-thumb) run A32 words /
Thumb-2 instructions under qemu-arm-static: in place versus the kernel's hit
(its slot [renamed insn, mov pc, lr] / [insn, bx lr] called the way its
emulate_* handler does and written back the same way, or its simulation),
comparing r0..r14, the APSR, PC and Thumb state, stack and scratch memory.
Thumb cases sit at both halfword alignments, and a quarter of them end a
one-instruction IT block. ARM kprobes never boost: the findings are kernel
divergences (each with the 'kboost sim' flags that reproduce it) and slot-model
problems; handlers kboost does not model count as inconclusive.`,
		Example: `  kboost fuzz -n 100000 --out findings.jsonl
  kboost fuzz --arch i386 --duration 1m --json
  kboost fuzz --arch thumb -n 200000 --out thumb.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			mode, err := decode.ParseMode(archName)
			if err != nil {
				return usagef("--arch: %v", err)
			}
			ac := armCmds[mode]
			if ac != nil && !cmd.Flags().Changed("policy") {
				policyName = ac.policy
			}
			pol, err := boost.Lookup(policyName)
			if err != nil {
				return usagef("--policy: %v (see 'kboost policies')", err)
			}
			if !pol.Supports(mode) {
				return usagef("policy %s does not model %s", pol.Name, archName)
			}
			if n <= 0 && dur <= 0 {
				return usagef("give -n N or --duration D")
			}
			a, err := kernelsim.ArchFor(mode)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var fw *bufio.Writer
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return err
				}
				defer f.Close()
				fw = bufio.NewWriter(f)
				defer fw.Flush()
			}
			onFinding := func(fd *kernelsim.Finding) {
				if fw != nil {
					b, _ := json.Marshal(fd)
					fw.Write(append(b, '\n'))
				}
			}
			var (
				sb   fuzzBackend
				fz   fuzzEngine
				from string
			)
			if ac != nil {
				if sb, fz, from, err = ac.fuzz(pol, trials, seed, tag, onFinding); err != nil {
					return err
				}
			} else {
				x, err := kernelsim.NewWithOptions(a, kernelsim.Options{Tag: tag})
				if err != nil {
					return err
				}
				x.CaseTimeout = caseTimeout
				sb = x
				var samples [][]byte
				samples, from = kernelsim.SampleKernelInsts(mode, 200000, seed)
				gen := kernelsim.NewFuzzSource(mode, seed, samples)
				fz = kernelsim.NewFuzzer(kernelsim.FuzzConfig{
					Backend: sb, Policy: pol, Trials: trials, Seed: seed, Source: gen, OnFinding: onFinding,
				})
			}
			defer sb.Close()
			prog := isTerminal(s.Err)
			if sb.Emulator() != "" && !jsonOut {
				fmt.Fprintf(s.Err, "%s runs under %s (no hardware length oracle)\n", a.Name, sb.Emulator())
			}
			start, last := time.Now(), time.Now()
			// checks per CPU-second (tracer and sandbox together: one core's
			// worth, since they take turns) next to the wall-clock rate
			cpuRate := func(checks int) string { return "" }
			if c, ok := sb.(interface{ CPUTime() time.Duration }); ok {
				cpu0 := c.CPUTime()
				cpuRate = func(checks int) string {
					if d := (c.CPUTime() - cpu0).Seconds(); d > 0 {
						return fmt.Sprintf(", %.0f per CPU-second", float64(checks)/d)
					}
					return ""
				}
			}
			const block = 64
			for {
				if ctx.Err() != nil {
					break
				}
				if n > 0 && fz.Counts().Cases >= n {
					break
				}
				if dur > 0 && time.Since(start) >= dur {
					break
				}
				k := block
				if n > 0 && n-fz.Counts().Cases < k {
					k = n - fz.Counts().Cases
				}
				if err := fz.Block(k); err != nil {
					if ctx.Err() != nil {
						break
					}
					return err
				}
				if !prog && !quiet && time.Since(last) > 30*time.Second {
					last = time.Now()
					st := fz.Counts()
					fmt.Fprintf(s.Err, "%s: %d cases, %d checks (%.0f/s%s): unsafe %d, kernel divergences %d, missed %d, length errors %d\n",
						time.Since(start).Round(time.Second), st.Cases, st.Checks, float64(st.Checks)/time.Since(start).Seconds(), cpuRate(st.Checks), st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors)
				}
				if prog && time.Since(last) > 500*time.Millisecond {
					last = time.Now()
					st := fz.Counts()
					el := time.Since(start).Seconds()
					fmt.Fprintf(s.Err, "\r%d cases (%.0f/s), %d checks (%.0f/s%s): unsafe %d, kernel divergences %d, missed %d, length errors %d  ",
						st.Cases, float64(st.Cases)/el, st.Checks, float64(st.Checks)/el, cpuRate(st.Checks), st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors)
				}
			}
			if prog {
				fmt.Fprint(s.Err, "\r\033[K")
			}
			st := fz.Finish()
			sum := fuzzSummary{FuzzStats: st, Arch: a.Name, Policy: pol.Name, Seed: seed, Samples: from, Interrupted: ctx.Err() != nil,
				Emulator: sb.Emulator(), Trials: max(trials, 1)}
			if fw != nil {
				if err := fw.Flush(); err != nil {
					return err
				}
			}
			if jsonOut {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(sum)
			}
			printFuzzSummary(s.Out, &sum)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&archName, "arch", "x86-64", "instruction set: x86-64, i386, arm64, arm or thumb (the ARM ones run under qemu-aarch64-static / qemu-arm-static)")
	f.StringVar(&policyName, "policy", "linux-6.1", "kernel policy (see 'kboost policies'; default linux-6.1-arm64, linux-6.1-arm, linux-6.1-thumb for those)")
	f.IntVarP(&n, "n", "n", 0, "number of cases")
	f.DurationVar(&dur, "duration", 0, "run for this long (e.g. 30s, 5m)")
	f.DurationVar(&caseTimeout, "case-timeout", 0, "x86: user CPU time one execution may take before it counts as timed out (default 10ms; 60ms under qemu)")
	f.Uint64Var(&seed, "seed", 1, "random seed (the run is deterministic for a seed and sample set)")
	f.StringVar(&out, "out", "", "write findings to this file as JSON lines")
	f.BoolVar(&jsonOut, "json", false, "print the final summary as a JSON object")
	f.BoolVar(&quiet, "quiet", false, "no progress lines when stderr is not a terminal")
	f.IntVar(&trials, "trials", 3, "random register states per case")
	f.StringVar(&tag, "sandbox-tag", "", "tag appended to the sandbox command line (tests)")
	f.MarkHidden("sandbox-tag")
	return cmd
}

type fuzzSummary struct {
	kernelsim.FuzzStats
	Arch        string `json:"arch"`
	Policy      string `json:"policy"`
	Seed        uint64 `json:"seed"`
	Trials      int    `json:"trials"`
	Samples     string `json:"samples_from"`
	Emulator    string `json:"emulator,omitempty"`
	Interrupted bool   `json:"interrupted"`
}

func printFuzzSummary(w io.Writer, s *fuzzSummary) {
	fmt.Fprintf(w, "fuzz %s under %s: %d cases, %d differential checks in %.1fs (%.0f checks/s, %.0f cases/s; %.0f checks per CPU-second)%s\n",
		s.Arch, s.Policy, s.Cases, s.Checks, s.Elapsed, s.ChecksPerSecond, s.CasesPerSecond, s.ChecksPerCPUSecond, map[bool]string{true: " (interrupted)"}[s.Interrupted])
	fmt.Fprintf(w, "  samples: %s; %d trials per case", s.Samples, s.Trials)
	if s.Emulator != "" {
		fmt.Fprintf(w, "; executed by %s", s.Emulator)
	}
	fmt.Fprintln(w)
	var vs []string
	for k := range s.Verdicts {
		vs = append(vs, k)
	}
	sort.Strings(vs)
	fmt.Fprintf(w, "  verdicts:")
	for _, k := range vs {
		fmt.Fprintf(w, " %s %d", k, s.Verdicts[k])
	}
	fmt.Fprintf(w, "; decoder refused %d\n", s.DecodeInvalid)
	fmt.Fprintf(w, "  unsafe boosts:         %d\n", s.UnsafeBoosts)
	if s.Unpredictable > 0 {
		fmt.Fprintf(w, "  kernel divergences:    %d (emulated / single-stepped hits that differ from the CPU; %d of them on UNPREDICTABLE encodings or states)\n", s.PolicyDivergences, s.Unpredictable)
	} else {
		fmt.Fprintf(w, "  kernel divergences:    %d (emulated / single-stepped hits that differ from the CPU; %d of them 66-prefixed branches, AMD-only)\n", s.PolicyDivergences, s.VendorDivergences)
	}
	fmt.Fprintf(w, "  missed boosts:         %d\n", s.MissedBoosts)
	fmt.Fprintf(w, "  not verifiable:        %d; nondeterministic %d; unreproducible %d; uncontrolled memory %d; emulator artifacts %d; inconclusive %d; slot problems %d\n", s.NotVerifiable, s.Nondeterministic, s.Unreproducible, s.Uncontrolled, s.EmulatorArtifacts, s.Inconclusive, s.SlotProblems)
	if len(s.Unmodelled) > 0 {
		var us []string
		for k, v := range s.Unmodelled {
			us = append(us, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(us)
		fmt.Fprintf(w, "  unmodelled hits:       %s (counted inconclusive)\n", strings.Join(us, ", "))
	}
	fmt.Fprintf(w, "  length oracle:         %s\n", s.LengthOracle)
	fmt.Fprintf(w, "  length errors:         %d of %d checked (AMD 66-branch rel16: %d; CPU #UD: %d; CPU #GP too long: %d; decoder refuses what the CPU runs: %d; unknown %d)\n",
		s.LengthErrors, s.LengthChecked, s.LengthVendor, s.CPURejected, s.CPUTooLong, s.DecoderRejectsRun, s.LengthUnknown)
	fmt.Fprintf(w, "  distinct findings:     %d\n", s.FindingKeys)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
