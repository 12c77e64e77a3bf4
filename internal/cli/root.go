package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"
)

// Streams are the standard streams a command uses.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// NewRoot builds the kboost command tree.
func NewRoot(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "kboost",
		Short: "What Linux kprobes do at every instruction, and the evidence",
		Long: `kboost predicts, instruction by instruction, what Linux kprobes do at a probe
point: refused (with the kernel's errno), an ftrace site, emulated, single-stepped
out of line, boosted (slot + jump back) or jump-optimized — and why, rule by rule.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("kboost {{.Version}}\n")
	var cpuProfile, memProfile string
	var profFile *os.File
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	root.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write an allocation profile to this file")
	root.PersistentFlags().MarkHidden("cpuprofile")
	root.PersistentFlags().MarkHidden("memprofile")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		profFile = f
		return pprof.StartCPUProfile(f)
	}
	root.PersistentPostRunE = func(cmd *cobra.Command, args []string) error {
		if profFile != nil {
			pprof.StopCPUProfile()
			profFile.Close()
		}
		if memProfile != "" {
			f, err := os.Create(memProfile)
			if err != nil {
				return err
			}
			defer f.Close()
			runtime.GC() // the profile is as of the last collection: include the whole run
			return pprof.Lookup("allocs").WriteTo(f, 0)
		}
		return nil
	}
	// a bad flag value is a usage mistake (exit 2), typed here once
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Msg: err.Error() + " (see '" + cmd.CommandPath() + " --help')"}
	})
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(
		newDecodeCmd(s),
		newAuditCmd(s),
		newDiffCmd(s),
		newOpcodesCmd(s),
		newExplainCmd(s),
		newPoliciesCmd(s),
		newKernelCmd(s),
		newSimCmd(s),
		newFuzzCmd(s),
		newMergeCmd(s),
		newVMCmd(s),
		newProbeCmd(s),
		newUprobeCmd(s),
		newMonitorCmd(s),
		newTraceCmd(s),
		newBenchCmd(s),
		newServeCmd(s),
		newVersionCmd(s),
	)
	registerCompletions(root)
	return root
}

// Main runs kboost with args and returns the process exit status: 0, or
// the status the error carries (ExitError, UsageError), else 1.
func Main(args []string, in io.Reader, out, errw io.Writer) int {
	root := NewRoot(Streams{In: in, Out: out, Err: errw})
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(errw, "kboost:", err)
	return exitCode(err)
}

func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "invalid argument", "flag needs an argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
