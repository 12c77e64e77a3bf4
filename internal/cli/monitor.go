package cli

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/monitor"
	"github.com/kboost/kboost/tracer"
	"github.com/spf13/cobra"
)

func newMonitorCmd(s Streams) *cobra.Command {
	var (
		pid, cpu                       int
		calls, out, policyPath         string
		jsonOut, backtrace, useSeccomp bool
		noSymbols, execMaps, oneStop   bool
		poll                           time.Duration
	)
	cmd := &cobra.Command{
		Use:   "monitor [--pid P | -- CMD ARGS...]",
		Short: "Reference monitor: every system call of a process tree, decoded, with an optional policy",
		Long: `Run CMD (or attach to the running tree of --pid) under kboost's ptrace tracer and
record every system call (or the --syscalls ones) of every thread of every process,
with decoded arguments (numbers, flags, paths, fds) and result. Records go to --out
(default: kboost's stderr), so the tracee's own stdout and stderr stay untouched;
--json writes one object per line and a final {"summary":...}.

When kboost starts CMD, a seccomp-bpf filter installed before its execve makes only
the monitored calls stop (SECCOMP_RET_TRACE). --policy-file FILE holds lines
'allow|deny SYSCALL|* [path=PREFIX] [caller=FUNC]' (first match wins, default
allow; caller= looks for FUNC on the call's user stack); a denied call fails
with EPERM and is logged. --backtrace adds the user stack, unwound by each
mapped file's call frame information (.eh_frame; ARM's exception index; the
vDSO's own from the tracee's memory) and by frame pointers where none covers
a pc, with symbols from each file's ELF symbol table.

An x86-64 call under the filter stops once, at its entry, not at its exit
too as under strace: kboost points its return at a short stub in two pages
it maps into each process (anonymous, named nowhere), which stores the
result for kboost to read at the thread's next stop; calls that create
tasks, exec, sigreturn or exit, denied calls, and calls of other modes (an
i386 tracee, a --pid tree, --seccomp=false) still stop at their exit.
--one-stop=false stops every call at its exit as well.

--poll D lets the tracer ask for the next stop without sleeping for up to D
(an adaptive window, yielding its CPU between asks) before it sleeps: where
idle CPUs halt (a virtual machine's vCPUs), waking a sleeping tracer costs
more than serving a stop.

--pin-cpu N runs kboost's tracer and the tree it starts on CPU N alone: each stop
and its resumption then switch tasks on one CPU instead of waking another
(on a machine with few CPUs most of a stop's cost). The tree sees that one CPU
(sched_getaffinity, nproc), so a parallel build runs serially; threads still on
it when released get the mask kboost started with back.

Ctrl-C (SIGINT) releases the tree: a --pid tree, or one started with
--seccomp=false, is detached and keeps running; a tree under kboost's seccomp
filter cannot run without its tracer, so kboost stops recording and serves it
until it exits. Exit status 130 after SIGINT.`,
		Example: `  kboost monitor -- make -j2
  kboost monitor --syscalls openat,execve --json --out calls.jsonl -- sh -c 'ls /etc'
  kboost monitor --pid 1234 --backtrace
  kboost monitor --policy-file deny.txt -- ./a.out`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (pid == 0) == (len(args) == 0) {
				return usagef("give either --pid P or -- CMD ARGS")
			}
			if pid < 0 {
				return usagef("--pid %d: a process id is positive", pid)
			}
			if poll < 0 || poll > pollMax {
				return usagef("--poll %v: give 0 (block at once) up to %v", poll, pollMax)
			}
			opt := monitor.Options{Argv: args, Pid: pid, JSON: jsonOut, Backtrace: backtrace || noSymbols, NoSymbols: noSymbols, ExecMaps: execMaps, NoSeccomp: !useSeccomp, OneStop: oneStop,
				Poll: poll}
			if cmd.Flags().Changed("pin-cpu") {
				if pid != 0 {
					return usagef("--pin-cpu needs -- CMD: kboost pins only a tree it starts (a running tree keeps its own affinity)")
				}
				if cpu < 0 {
					return usagef("--pin-cpu %d: a CPU number is 0 or more", cpu)
				}
				opt.Pin, opt.CPU = true, cpu
			}
			if calls != "" {
				opt.Syscalls = strings.Split(calls, ",")
			}
			if policyPath != "" {
				if err := inputFile("--policy-file", policyPath); err != nil {
					return err
				}
				f, err := os.Open(policyPath)
				if err != nil {
					return usagef("--policy-file: %v", err)
				}
				p, err := monitor.ParsePolicy(f)
				f.Close()
				if err != nil {
					return usagef("--policy-file %s: %v", policyPath, err)
				}
				opt.Policy = p
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
			opt.Out = w
			m, err := monitor.New(opt)
			if errors.Is(err, monitor.ErrUnknownSyscall) {
				return usagef("--syscalls: %v", err)
			}
			if errors.Is(err, tracer.ErrCPU) {
				return usagef("--pin-cpu: %v", err)
			}
			if err != nil {
				return err
			}
			var sum monitor.Summary
			stopped := untilSIGINT(m.Detach, func() error { sum, err = m.Run(); return err })
			if err != nil {
				return err
			}
			monitor.WriteSummary(s.Err, sum)
			if stopped {
				return interrupted("monitor (tracee released)")
			}
			return tracedStatus("monitor", sum.Status)
		},
	}
	f := cmd.Flags()
	f.IntVar(&pid, "pid", 0, "attach to the running process tree rooted at this pid")
	f.StringVar(&calls, "syscalls", "", "comma-separated system calls to record (default: all)")
	f.StringVar(&out, "out", "", "write records to this file (default: stderr)")
	f.StringVar(&policyPath, "policy-file", "", "system call policy file: allow|deny SYSCALL|* [path=PREFIX] [caller=FUNC] per line\n(not a kprobes --policy)")
	f.BoolVar(&jsonOut, "json", false, "records as JSON lines")
	f.BoolVar(&backtrace, "backtrace", false, "record each call's user stack with symbols")
	f.BoolVar(&noSymbols, "no-symbols", false, "--backtrace without symbol names (addresses and files only)")
	f.BoolVar(&execMaps, "exec-maps", false, "mmap, mmap2, mprotect and pkey_mprotect only with PROT_EXEC (the seccomp filter tests it)")
	f.BoolVar(&useSeccomp, "seccomp", true, "install a seccomp filter so only monitored calls stop (when kboost starts CMD)")
	f.IntVar(&cpu, "pin-cpu", -1, "run kboost's tracer and the started tree on this CPU alone (see above)")
	f.BoolVar(&oneStop, "one-stop", true, "x86-64 calls return through a result stub: one stop per call (see above)")
	f.DurationVar(&poll, "poll", pollDefault, "longest the tracer polls for the next stop before it sleeps (0: sleep at once; see above)")
	return cmd
}

// pollDefault and pollMax bound monitor's --poll: a stop usually follows
// its resumption within tens of microseconds, and a window past a
// millisecond only burns the tracer's CPU while the tracee computes.
const (
	pollDefault = 0
	pollMax     = 10 * time.Millisecond
)

// untilSIGINT runs run with SIGINT and SIGTERM calling release (a tracer's
// Detach) instead of ending kboost, and says whether one arrived.
func untilSIGINT(release func(), run func() error) bool {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	sigint := make(chan bool, 1)
	go func() {
		if _, ok := <-sigs; ok {
			sigint <- true
			release()
		}
	}()
	run()
	signal.Stop(sigs)
	close(sigs)
	select {
	case <-sigint:
		return true
	default:
		return false
	}
}
