package cli

import (
	"errors"
	"io"
	"os"

	"github.com/kboost/kboost/ptprobe"
	"github.com/spf13/cobra"
)

func newTraceCmd(s Streams) *cobra.Command {
	var (
		pid            int
		probes         []string
		mode, out, bin string
		jsonOut, hits  bool
		args           bool
	)
	cmd := &cobra.Command{
		Use:   "trace --probe SYM[+OFF]|0xADDR... [--mode singlestep|boost|jump] [--pid P | -- CMD ARGS...]",
		Short: "User-space probes through ptrace: single-stepped, boosted or jump-optimized, with exact hit counts",
		Long: `Plant probes at functions or addresses of a binary in a traced process tree (CMD, or the
running tree of --pid) and count their hits. --binary names the ELF the points belong
to (default: CMD, or the --pid process's executable); every process of the tree that
executes it is probed, fork children inherit the probes.

Mechanisms (--mode), chosen per point by boost's linux-6.1 policy (the kprobe-booster
rules, the RIP-relative rebase, optprobes' can_optimize):
  singlestep  int3; the copy runs out of line in a slot page kboost maps into the
              tracee, followed by int3 (two stops per hit)
  boost       int3; the copy runs out of line followed by a jmp back (one stop)
  jump        a jmp to a trampoline that counts the hit and runs the displaced
              instructions, no stop; only where optprobes' rules allow it
A point falls back (jump -> boost -> singlestep; kboost emulates address-dependent
instructions as kprobes do) and the plan says why, with the rule ids.

The plan, the final counts (hits and stops per probe) and, with --hits, one record per
hit go to --out (default: kboost's stderr), never into the tracee's output. A jump
probe's trampoline writes its records (probe, pid, thread pointer, argument
registers for --args) into a ring of shared memory that kboost drains while the tree
runs: no stop. A record the ring had no room for is counted as dropped.
Ctrl-C restores every patched byte, unmaps the slot pages and releases the tree
(exit 130). A tree kboost started dies with it if kboost is killed (PTRACE_O_EXITKILL);
an attached one does not: its jump probes keep working, and the next hit of an int3
probe ends it with SIGTRAP.`,
		Example: `  kboost trace --probe compute --mode jump -- ./a.out
  kboost trace --probe 'loop+0x8' --probe 0x401136 --json --out hits.jsonl -- ./a.out 100
  kboost trace --pid 1234 --probe handle_request --mode boost`,
		RunE: func(cmd *cobra.Command, argv []string) error {
			if (pid == 0) == (len(argv) == 0) {
				return usagef("give either --pid P or -- CMD ARGS")
			}
			if pid < 0 {
				return usagef("--pid %d: a process id is positive", pid)
			}
			m, err := ptprobe.ParseMode(mode)
			if err != nil {
				return usagef("--mode: %v", err)
			}
			var w io.Writer = s.Err
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return usagef("--out: %v", err)
				}
				defer f.Close()
				w = f
			}
			e, err := ptprobe.New(ptprobe.Options{Argv: argv, Pid: pid, Binary: bin, Points: probes, Mode: m, Out: w, JSON: jsonOut, Hits: hits, Args: args})
			if errors.Is(err, ptprobe.ErrPoint) {
				return usagef("%v", err)
			}
			if err != nil {
				return err
			}
			var sum ptprobe.Summary
			stopped := untilSIGINT(e.Detach, func() error { sum, err = e.Run(); return err })
			ptprobe.WriteSummary(w, jsonOut, sum)
			if err != nil {
				return err
			}
			if stopped {
				return interrupted("trace (probes removed, tracee released)")
			}
			return tracedStatus("trace", sum.Status)
		},
	}
	f := cmd.Flags()
	f.IntVar(&pid, "pid", 0, "attach to the running process tree rooted at this pid")
	f.StringArrayVar(&probes, "probe", nil, "probe point: SYM, SYM+OFF or 0xADDR (link-time address); repeatable")
	f.StringVar(&mode, "mode", "boost", "mechanism: singlestep, boost or jump (points fall back where it cannot apply)")
	f.StringVar(&bin, "binary", "", "the ELF the points belong to (default: CMD or the --pid executable)")
	f.StringVar(&out, "out", "", "write the plan and counts to this file (default: stderr)")
	f.BoolVar(&jsonOut, "json", false, "plan and summary as JSON lines")
	f.BoolVar(&hits, "hits", false, "one record per hit (jump probes' from a shared ring their trampolines write, without a stop)")
	f.BoolVar(&args, "args", false, "add the argument registers (rdi rsi rdx rcx r8 r9) to each hit record (implies --hits)")
	return cmd
}
