package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
	"github.com/spf13/cobra"
)

// verifyKernels maps --kernel names to Debian meta packages.
var verifyKernels = map[string]string{
	"debian": "linux-image-amd64",
}

func newVMCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "Check kboost's predictions against real kernels booted under QEMU",
	}
	var (
		kernel, funcs, deb, policy   string
		sample, nonBoundary, spacing int
		maxSize                      uint64
		seed                         int64
		jsonOut, verbose, failOnDiff bool
		timeout                      time.Duration
	)
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Probe every instruction of chosen functions in a booted kernel and compare with kboost",
		Long: `Boot a kernel under QEMU (TCG) with kboost as /init. In the guest, kboost reads
the kernel's own /proc/kallsyms, the function bytes from /proc/kcore and the
kernel's config (plus the vmlinux's tables, passed in the initramfs), predicts
every instruction boundary and a sample of non-boundaries of the chosen
functions, then registers each as a kprobe event and records what the kernel
did: accepted or errno, the probed address, [FTRACE], [OPTIMIZED] once the
optimizer has written its jmp, and the instruction slot read back from the
kprobe_insn_page pages in /proc/kcore. Probes are registered in rounds (at most
one per 24 bytes of a function per round, so they cannot block each other's
optimization), enabled together, then all removed.

--kernel boost builds (once; cached under $KBOOST_CACHE/kbuild) a small kernel
from /usr/src/linux-source-6.1.tar.xz with PREEMPT_NONE, so kprobes boost: the
jmpback field checks that the kernel's slot ends with a jmp back exactly where
kboost predicts Boost. Building needs: apt-get install linux-source-6.1 bc bison
flex libelf-dev libssl-dev gcc make.

Prints the agreement table per field and every disagreement; --json prints one
record per probe and a final summary object.`,
		Example: "  kboost vm verify --kernel debian --sample 300\n  kboost vm verify --kernel debian --funcs 'vfs_*' --json\n  kboost vm verify --kernel boost --sample 300",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if funcs == "" && sample == 0 {
				return usagef("choose functions: --funcs NAME[,NAME...] or a glob, and/or --sample N")
			}
			if _, ok := verifyKernels[kernel]; !ok && kernel != "boost" && deb == "" {
				return usagef("--kernel %q: want debian or boost (or --deb FILE)", kernel)
			}
			var build *vm.KernelBuild
			if deb == "" && kernel == "boost" {
				ko := vm.KbuildOptions{}
				if verbose {
					ko.Log = s.Err
				}
				fmt.Fprintf(s.Err, "kboost: building (or reusing) the boost kernel from %s\n", vm.DefaultKernelSource)
				var err error
				if build, err = vm.BuildBoostKernel(ctx, ko); err != nil {
					return err
				}
				if build.Cached {
					fmt.Fprintf(s.Err, "kboost: boost kernel %s from the cache %s\n", build.Release, build.Dir)
				} else {
					fmt.Fprintf(s.Err, "kboost: built boost kernel %s in %v into %s\n", build.Release, build.Duration.Round(time.Second), build.Dir)
				}
			} else if deb == "" {
				meta, ok := verifyKernels[kernel]
				if !ok {
					return usagef("--kernel %q: want debian or boost (or --deb FILE)", kernel)
				}
				var err error
				if deb, err = kimage.FetchDebianKernel(ctx, meta); err != nil {
					return err
				}
			}
			va := guest.VerifyArgs{Policy: policy, Sample: sample, Seed: seed, MaxSize: maxSize,
				NonBoundary: nonBoundary, Spacing: spacing}
			if funcs != "" {
				if strings.ContainsAny(funcs, "*?[") {
					va.Pattern = funcs
				} else {
					va.Funcs = strings.Split(funcs, ",")
				}
			}
			vc := vm.VerifyConfig{Deb: deb, Build: build, Args: va, VM: vm.Config{Timeout: timeout}}
			if verbose {
				vc.VM.Console = s.Err
			}
			v, err := vm.Verify(ctx, vc)
			if err != nil {
				return err
			}
			if jsonOut {
				err = v.WriteJSON(s.Out)
			} else {
				err = v.WriteTable(s.Out)
			}
			if err != nil {
				return err
			}
			if failOnDiff && v.Summary.AllAgree != v.Summary.Probes {
				return fmt.Errorf("%d of %d probes disagree", v.Summary.Probes-v.Summary.AllAgree, v.Summary.Probes)
			}
			return nil
		},
	}
	f := verify.Flags()
	f.StringVar(&kernel, "kernel", "debian", "kernel to boot: debian (the current linux-image-amd64) or boost (built from linux-source-6.1 with PREEMPT_NONE, cached)")
	f.StringVar(&deb, "deb", "", "boot this kernel package instead of --kernel")
	f.StringVar(&funcs, "funcs", "", "functions: NAME[,NAME...] or a glob such as 'vfs_*'")
	f.IntVar(&sample, "sample", 0, "pick N functions at random (seeded by --seed) among the selection, or among all functions up to --max-size bytes")
	f.Int64Var(&seed, "seed", 1, "seed for --sample")
	f.Uint64Var(&maxSize, "max-size", 512, "largest function --sample picks (bytes)")
	f.IntVar(&nonBoundary, "non-boundary", 2, "offsets inside instructions tried per function (-1: none)")
	f.IntVar(&spacing, "spacing", 24, "least distance between probes of one function in one round")
	f.StringVar(&policy, "policy", "linux-6.1", "kboost policy that predicts")
	f.BoolVar(&jsonOut, "json", false, "one JSON record per probe, then a summary object")
	f.BoolVar(&verbose, "verbose", false, "copy the guest console to stderr")
	f.BoolVar(&failOnDiff, "fail", false, "exit 1 if any probe disagrees")
	f.DurationVar(&timeout, "timeout", 30*time.Minute, "bound for the whole run")
	cmd.AddCommand(verify)
	return cmd
}
