package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kboost/kboost/vm"
	"github.com/spf13/cobra"
)

// verifyKernels are the --kernel names: the current Debian kernel of the
// architecture, or (where the architecture has one) the boost-capable build.
var verifyKernels = []string{"debian", "boost"}

func newVMCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "Check kboost's predictions against real kernels booted under QEMU",
	}
	var (
		arch, kernel, oldFuncs, deb, policy string
		funcs                               []string
		sample, nonBoundary, spacing        int
		boundaries                          int
		maxSize                             int
		seed                                uint64
		jsonOut, verbose, failOnDiff        bool
		noCache                             bool
		timeout                             time.Duration
	)
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Probe every instruction of chosen functions in a booted kernel and compare with kboost",
		Long: `Boot a kernel under QEMU (TCG) with kboost as /init. In the guest, kboost reads
the kernel's own /proc/kallsyms, the function bytes and the config, registers
every instruction boundary and a sample of non-boundaries of the chosen
functions as kprobe events, and records what the kernel did: accepted or
errno, the probed address, [FTRACE], [OPTIMIZED] once the optimizer has run,
and the instruction slot the kernel filled. kboost predicts each probe and
the table shows the agreement per field; any disagreement makes the exit
status 1 (--fail=false: 0).

--arch chooses the guest (default x86-64):
  x86-64  Debian linux-image-amd64 under qemu-system-x86_64; bytes, slots
          and optprobe detour buffers from /proc/kcore, the vmlinux's tables
          passed in the initramfs. Probes are registered in rounds (at most
          one per --spacing bytes of a function per round, so they cannot
          block each other's optimization). --kernel boost builds (once;
          cached under $KBOOST_CACHE/kbuild) a small kernel from
          /usr/src/linux-source-6.1.tar.xz with PREEMPT_NONE, so kprobes
          boost: the jmpback field checks that the kernel's slot ends with a
          jmp back exactly where kboost predicts Boost. Building needs:
          apt-get install linux-source-6.1 bc bison flex libelf-dev
          libssl-dev gcc make.
  arm64   Debian linux-image-arm64 under qemu-system-aarch64 (-M virt);
          every 4-byte boundary and two misaligned offsets per function;
          slots ([insn, BRK #6]) from /proc/kcore; jump-label and exception
          tables located in the Image (needs the kernel's kallsyms, read from
          one extra boot and cached).
  arm     Debian linux-image-armmp (armhf, ARM mode) under qemu-system-arm
          (-M virt); function bytes from the zImage, [OPTIMIZED] after the
          delayed optimizer; slots read by the host through QEMU's monitor
          while the guest waits (the kernel has no /proc/kcore).
The kernel's record of a run is cached under $KBOOST_CACHE/verify
(--no-cache boots again). Every record holds only what the kernel did
(errno, listed address, [FTRACE], [OPTIMIZED], slot and detour bytes, and
for x86-64 the function bytes, the optprobe template and the guest's
kallsyms); the host predicts anew on every run. An x86-64 record (of a
Debian package, not of the boost kernel) is keyed by the package's sha256,
the policy the host picked for its release, the guest binary, the QEMU
machine and the arguments. Needs qemu-system-x86 (x86-64) or qemu-system-arm (arm64, arm), and for
the arm kernels their dpkg architectures (dpkg --add-architecture arm64
armhf; apt-get update).

Prints the agreement table per field and every disagreement; --json prints one
record per probe and a final summary object.`,
		Example: "  kboost vm verify --kernel debian --sample 300\n  kboost vm verify --kernel debian --func 'vfs_*' --json\n  kboost vm verify --kernel boost --sample 300\n  kboost vm verify --arch arm64 --sample 300\n  kboost vm verify --arch arm --func vfs_read --func vfs_write",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			v, err := vm.LookupVerifier(arch)
			if err != nil {
				return &UsageError{Msg: "--arch: " + err.Error()}
			}
			if oldFuncs != "" {
				fmt.Fprintln(s.Err, "kboost: note: --funcs A,B is --func A --func B now (as audit's); --funcs will go")
				funcs = append(funcs, strings.Split(oldFuncs, ",")...)
			}
			if len(funcs) == 0 && sample == 0 {
				return usagef("choose functions: --func NAME (repeatable) or --func GLOB, and/or --sample N")
			}
			if deb == "" && !slices.Contains(verifyKernels, kernel) {
				return usagef("--kernel %q: want %s (or --deb FILE)", kernel, strings.Join(verifyKernels, " or "))
			}
			if deb == "" && kernel == "boost" && !v.BoostKernel {
				return usagef("--kernel boost: there is no boost-capable %s kernel (only x86-64 builds one); use --kernel debian", v.Arch.Name)
			}
			if cmd.Flags().Changed("spacing") && !v.Spacing {
				return usagef("--spacing applies to x86-64 only")
			}
			if cmd.Flags().Changed("boundaries") && !v.Spacing {
				return usagef("--boundaries applies to x86-64 only (%s records every boundary)", v.Arch.Name)
			}
			if cmd.Flags().Changed("no-cache") && !v.Cached {
				return usagef("--no-cache: %s records are not cached (every run boots)", v.Arch.Name)
			}
			if cmd.Flags().Changed("no-cache") && deb == "" && kernel == "boost" {
				return usagef("--no-cache: the boost kernel's records are not cached (every run boots)")
			}
			req := vm.VerifyRequest{Deb: deb, Sample: sample, Seed: int64(seed), Policy: policy, NoCache: noCache,
				VM: vm.Config{Timeout: timeout}}
			// Flags left at their defaults stay zero: the architecture's
			// defaults, and the key of its cached records.
			if cmd.Flags().Changed("max-size") {
				req.MaxSize = uint64(maxSize)
			}
			if cmd.Flags().Changed("non-boundary") {
				req.NonBoundary = nonBoundary
			}
			if cmd.Flags().Changed("spacing") {
				req.Spacing = spacing
			}
			if cmd.Flags().Changed("boundaries") {
				req.Boundaries = boundaries
			}
			for _, fn := range funcs {
				switch {
				case fn == "":
					return usagef("--func \"\": an empty name")
				case strings.ContainsAny(fn, "*?["):
					if _, err := path.Match(fn, ""); err != nil {
						return usagef("--func %q: bad glob (%v): want NAME or a pattern such as 'vfs_*'", fn, err)
					}
					if req.Pattern != "" {
						return usagef("--func %q: one glob per run (%q is the other)", fn, req.Pattern)
					}
					req.Pattern = fn
				default:
					req.Funcs = append(req.Funcs, fn)
				}
			}
			if deb == "" && kernel == "boost" {
				ko := vm.KbuildOptions{}
				if verbose {
					ko.Log = s.Err
				}
				fmt.Fprintf(s.Err, "kboost: building (or reusing) the boost kernel from %s\n", vm.DefaultKernelSource)
				build, err := vm.BuildBoostKernel(ctx, ko)
				if err != nil && ctx.Err() != nil {
					return interrupted("vm verify: building the boost kernel")
				}
				if err != nil {
					return err
				}
				if build.Cached {
					fmt.Fprintf(s.Err, "kboost: boost kernel %s from the cache %s\n", build.Release, build.Dir)
				} else {
					fmt.Fprintf(s.Err, "kboost: built boost kernel %s in %v into %s\n", build.Release, build.Duration.Round(time.Second), build.Dir)
				}
				req.Build = build
			}
			prog := newConsoleProgress(s.Err, "vm verify "+v.Arch.Name)
			if verbose {
				req.VM.Console = s.Err
			} else if prog.on {
				req.VM.Console = prog
			}
			o, err := v.Verify(ctx, req)
			prog.finish()
			if err != nil {
				if ctx.Err() != nil {
					return interrupted("vm verify")
				}
				return err
			}
			if o.Cached != "" {
				fmt.Fprintf(s.Err, "kboost: the kernel's record from the cache %s (--no-cache boots again)\n", o.Cached)
			}
			if jsonOut {
				err = o.WriteJSON(s.Out)
			} else {
				err = o.WriteTable(s.Out)
			}
			if err != nil {
				return err
			}
			if failOnDiff && !o.Agrees() {
				return &DisagreeError{Probes: o.Summary.Probes, Agree: o.Summary.AllAgree}
			}
			return nil
		},
	}
	f := verify.Flags()
	f.StringVar(&arch, "arch", "x86-64", "guest architecture: x86-64, arm64 or arm (armhf)")
	f.StringVar(&kernel, "kernel", "debian", "kernel to boot: debian (the architecture's current Debian kernel) or boost (x86-64: built from linux-source-6.1 with PREEMPT_NONE, cached)")
	setValues(f, "arch", "x86-64", "arm64", "arm")
	setValues(f, "kernel", "debian", "boost")
	f.StringVar(&deb, "deb", "", "boot this kernel package instead of --kernel")
	f.StringArrayVar(&funcs, "func", nil, "function NAME or glob ('vfs_*'); repeatable, as audit's")
	f.StringVar(&oldFuncs, "funcs", "", "NAME[,NAME...]: the same as --func NAME for each")
	f.MarkHidden("funcs") // cobra's deprecation notice would go to stdout, into --json
	countVar(f, &sample, "sample", "", 0, 1, 1e5, "pick N functions (1 to 1e5) at random (seeded by --seed) among the selection, or among all functions up to --max-size bytes")
	f.Uint64Var(&seed, "seed", 1, "random seed for --sample")
	countVar(f, &maxSize, "max-size", "", 512, 1, 1<<20, "largest function --sample picks (bytes, 1 to 1048576)")
	countVar(f, &nonBoundary, "non-boundary", "", 2, -1, 64, "offsets that are not instruction boundaries tried per function (0 to 64; -1: none; arm64, arm: misaligned offsets)")
	countVar(f, &boundaries, "boundaries", "", 0, 0, 100000, "probe at most N instruction boundaries per function, spread over it from the first (x86-64; 0: all)")
	countVar(f, &spacing, "spacing", "", 24, 1, 4096, "least distance between probes of one function in one round (x86-64; 1 to 4096 bytes)")
	f.StringVar(&policy, "policy", "", "kboost policy that predicts (default: the booted kernel's version picks it, e.g. linux-6.12 or linux-7.2-arm64, as audit does; none: the kernel's outcomes only)")
	f.BoolVar(&jsonOut, "json", false, "one JSON record per probe, then a summary object")
	f.BoolVar(&verbose, "verbose", false, "copy the guest console to stderr")
	f.BoolVar(&failOnDiff, "fail", true, "exit 1 unless every probe agrees on every field")
	f.BoolVar(&noCache, "no-cache", false, "boot even when the kernel's record is cached")
	durationVar(f, &timeout, "timeout", 30*time.Minute, time.Minute, 48*time.Hour, false, "bound for the whole run (1m to 48h)")
	cmd.AddCommand(verify)
	return cmd
}

// DisagreeError reports a verification whose predictions and kernel
// disagree somewhere (exit status 1).
type DisagreeError struct{ Probes, Agree int }

func (e *DisagreeError) Error() string {
	if e.Probes == 0 {
		return "no probe ran: nothing was verified"
	}
	return fmt.Sprintf("%d of %d probes disagree with the kernel on some field (agreement %.2f%%)",
		e.Probes-e.Agree, e.Probes, 100*float64(e.Agree)/float64(e.Probes))
}

// consoleProgress is the guest console as a one-line progress indicator on
// a terminal: the time so far and the guest's latest "kboost-guest:" line
// (its rounds), "booting" before the first; nothing when stderr is not a
// terminal.
type consoleProgress struct {
	*progress
	mu   sync.Mutex
	line []byte
	seen bool // a guest line arrived: kernel lines no longer show
}

func newConsoleProgress(w io.Writer, what string) *consoleProgress {
	return &consoleProgress{progress: newProgress(w, what)}
}

func (c *consoleProgress) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range b {
		if ch != '\n' {
			c.line = append(c.line, ch)
			continue
		}
		l := strings.TrimSpace(string(c.line))
		c.line = c.line[:0]
		if !c.on || l == "" {
			continue
		}
		_, msg, guest := strings.Cut(l, "kboost-guest: ")
		if !guest {
			if c.seen {
				continue
			}
			msg = "booting"
		}
		c.seen = c.seen || guest
		if len(msg) > 100 {
			msg = msg[:100]
		}
		c.last = time.Now()
		fmt.Fprintf(c.w, "\r\033[K%s: %s %s", c.what, time.Since(c.start).Round(time.Second), msg)
	}
	return len(b), nil
}

func (c *consoleProgress) finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.progress.finish()
}
