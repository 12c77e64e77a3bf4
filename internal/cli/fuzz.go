package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/campaign"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/fuzz"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newFuzzCmd(s Streams) *cobra.Command {
	var (
		archName, policyName, out, tag string
		execName, resumePath, shardStr string
		n, trials                      int
		dur, caseTimeout, every        time.Duration
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

Exit status: 1 when there are unsafe boosts or length errors, 130 when
interrupted (after the summary). Findings go to --out as JSON lines (deduplicated by instruction form, each with a
minimized reproducer): unsafe-boost (boosted but diverges: a kboost or kernel
bug), policy-divergence (the kernel's emulation or single-step diverges from the
CPU: a finding about Linux), missed-boost (not boosted, but boosting agreed on
every trial), length / length-vendor / decoder-rejects. The 66-prefixed near
branches that AMD CPUs decode with rel16 in 64-bit mode are counted as
length-vendor, not as decoder errors. Ctrl-C stops and still prints the summary.

The --out file also carries the campaign (a header record, then checkpoint
records with the next block and the running counts): --resume F continues it
after a crash or Ctrl-C with the same totals an uninterrupted run would have.
The case stream is blocks of 64 cases seeded from (--seed, block), so --shard
K/N runs blocks K, K+N, ... on as many machines as there are shards, and
'kboost merge' combines their files into the unsharded campaign's.

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
  kboost fuzz --resume findings.jsonl
  kboost fuzz -n 1000000 --shard 2/4 --out shard-2.jsonl
  kboost fuzz --arch i386 --duration 1m --json
  kboost fuzz --arch thumb -n 200000 --out thumb.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var resume *campaign.State
			if resumePath != "" {
				if out != "" && out != resumePath {
					return usagef("--resume %s continues that file: leave out --out", resumePath)
				}
				var err error
				if err := inputFile("--resume", resumePath); err != nil {
					return err
				}
				if resume, err = loadResume(cmd, resumePath); err != nil {
					return err
				}
				out = resumePath
			}
			sh, err := parseShard(shardStr)
			if err != nil {
				return err
			}
			arch, err := decode.LookupArch(archName)
			if err != nil {
				return usagef("--arch: %v", err)
			}
			pol, err := pickPolicy(policyName, arch)
			if err != nil {
				return err
			}
			if n <= 0 && dur <= 0 {
				return usagef("give -n N (cases, e.g. -n 100000) or --duration D (e.g. --duration 5m)")
			}
			a, err := kernelsim.ArchFor(arch.Mode)
			if err != nil {
				return err
			}
			ex, err := kernelsim.ParseExecMode(execName)
			if err != nil {
				return usagef("--exec: %v", err)
			}
			opts := kernelsim.Options{Exec: ex, Tag: tag}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var (
				fw   *campaign.Writer
				werr error
			)
			onFinding := func(fd *fuzz.Finding) {
				if fw != nil && werr == nil {
					werr = fw.Finding(fd)
				}
			}
			sb, fz, from, err := fuzz.Start(arch, &fuzz.StartOptions{Policy: pol, Trials: trials, Seed: seed, Backend: opts,
				CaseTimeout: caseTimeout, OnFinding: onFinding})
			if err != nil {
				return err
			}
			defer sb.Close()
			run := &fuzzRun{fz: fz, sb: sb, n: n, dur: dur, shard: sh, every: every, quiet: quiet, errw: s.Err}
			if out != "" {
				h := campaign.Header{Arch: a.Name, Policy: pol.Name, Seed: seed, Trials: trials, Cases: n,
					BlockSize: fuzz.BlockSize, Shard: sh.String(), Samples: from, CaseTimeout: caseTimeout.String()}
				if resume != nil {
					if from != resume.Header.Samples {
						return fmt.Errorf("--resume %s: the campaign mutated %s, this run would mutate %s: the case stream would differ", out, resume.Header.Samples, from)
					}
					fz.Restore(resume.Last0().Counts, resume.Keys())
					run.next = resume.Last0().NextBlock
					if !quiet {
						fmt.Fprintf(s.Err, "resuming %s at block %d: %d cases done, %d findings; %d lines after the last checkpoint dropped (their blocks run again)\n",
							out, run.next, resume.Last0().Counts.Cases, len(resume.Findings), resume.Dropped)
					}
					fw, err = campaign.Reopen(out, resume)
				} else {
					fw, err = campaign.Create(out, h)
				}
				if err != nil {
					return err
				}
				defer fw.Close()
				run.out = fw
			}
			prog := isTerminal(s.Err)
			if sb.Emulator() != "" && !jsonOut {
				fmt.Fprintf(s.Err, "%s runs under %s (no hardware length oracle)\n", a.Name, sb.Emulator())
			}
			run.progress = prog
			if err := run.run(ctx); err != nil {
				return err
			}
			if werr != nil {
				return werr
			}
			st := fz.Finish()
			sum := fuzzSummary{Stats: st, Arch: a.Name, Policy: pol.Name, Seed: seed, Samples: from, Interrupted: ctx.Err() != nil,
				Emulator: sb.Emulator(), Trials: max(trials, 1)}
			if sh.N > 1 {
				sum.Shard = sh.String()
			}
			if jsonOut {
				enc := json.NewEncoder(s.Out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(sum); err != nil {
					return err
				}
				return fuzzExit(&sum)
			}
			printFuzzSummary(s.Out, &sum)
			return fuzzExit(&sum)
		},
	}
	f := cmd.Flags()
	f.StringVar(&archName, "arch", "x86-64", "instruction set: x86-64, i386, arm64, arm or thumb (the ARM ones run under qemu-aarch64-static / qemu-arm-static)")
	f.StringVar(&policyName, "policy", "", policyUsage)
	countVar(f, &n, "n", "n", 0, 1, 1e9, "number of cases (up to 1e9; e.g. 1e6)")
	durationVar(f, &dur, "duration", 0, time.Second, 30*24*time.Hour, true, "run for this long (e.g. 30s, 5m; 1s to 720h)")
	durationVar(f, &caseTimeout, "case-timeout", 0, time.Millisecond, 10*time.Second, true, "x86: user CPU time one execution may take before it counts as timed out (1ms to 10s; default 10ms, 60ms under qemu)")
	f.Uint64Var(&seed, "seed", 1, "random seed (the run is deterministic for a seed and sample set)")
	f.StringVar(&out, "out", "", "write findings to this file as JSON lines, with the campaign's header and checkpoints (see --resume)")
	f.StringVar(&resumePath, "resume", "", "continue the campaign of this findings file (written by --out) where its last checkpoint left it")
	f.StringVar(&shardStr, "shard", "", "run only part K of N (K/N, counting from 0): the case stream's blocks K, K+N, K+2N...;\nthe N findings files together are the whole campaign (see 'kboost merge')")
	f.DurationVar(&every, "checkpoint", 5*time.Second, "with --out: write a checkpoint (next block, running counts) this often; a resumed campaign repeats at most this much work")
	f.BoolVar(&jsonOut, "json", false, "print the final summary as a JSON object")
	f.BoolVar(&quiet, "quiet", false, "no progress lines when stderr is not a terminal")
	countVar(f, &trials, "trials", "", 3, 1, 32, "random register states per case (1 to 32: a batch holds every state of 64 cases)")
	addExecFlag(cmd, &execName)
	f.StringVar(&tag, "sandbox-tag", "", "tag appended to the sandbox command line (tests)")
	f.MarkHidden("sandbox-tag")
	return cmd
}

// fuzzExit is the exit status of a fuzz run, after its summary: 130 when
// interrupted, 1 with unsafe boosts or decoder/CPU length errors (the
// findings about kboost; kernel divergences are findings about Linux).
func fuzzExit(s *fuzzSummary) error {
	switch {
	case s.Interrupted:
		return interrupted("fuzz")
	case s.UnsafeBoosts > 0 || s.LengthErrors > 0:
		return findingf("%d unsafe boosts, %d length errors", s.UnsafeBoosts, s.LengthErrors)
	}
	return nil
}

// fuzzSummary is the --json summary.
type fuzzSummary = campaign.Summary

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
