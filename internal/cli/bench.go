package cli

import (
	"encoding/json"
	"strings"

	"github.com/kboost/kboost/bench"
	"github.com/spf13/cobra"
)

func newBenchCmd(s Streams) *cobra.Command {
	var (
		runs                            int
		project, mk, subset             string
		jsonOut, straceKFull            bool
		skipBuild, skipProbes, progress bool
	)
	cmd := &cobra.Command{
		Use:   "bench [--runs N] [--project DIR --make ARGS] [--json]",
		Short: "The reference monitor's and the probe mechanisms' costs, measured side by side in one run",
		Long: `Measure, in one run, the seed's experiment and the probe mechanisms, and print them
as tables of times and ratios (--json: one object, schemas/bench.json).

Build: a real C project built with make (default: Lua from Debian's lua5.4 orig
tarball, fetched once into $HOME/.cache/kboost/src and checked against the .dsc's
SHA-256; --project DIR --make ARGS for another) natively, under kboost monitor
(the reference monitor's calls without backtraces, with backtraces without symbols,
with both; every call with both), under strace -f and strace -f -k. strace -f -k
runs at well under 1% of native speed, so by default it runs on a subset (one
object file, --subset ARGS), next to native and kboost's every-call row on the
same subset; --strace-k-full runs it on the whole build (tens of minutes).

Probes: a tight loop calling a 7-byte function, native, under kboost trace
--mode jump (and jump with --hits), boost, singlestep, and the kernel's uprobe
(root): cost per call = (time of N calls - time of none) / N.

Each row is the best of --runs runs by wall time, with its CPU time (the whole
process tree's, kboost's included). The targets of issue 15 are checked at the end.
Needs make, gcc and strace (scripts/setup.sh).`,
		Example: `  kboost bench
  kboost bench --runs 5 --skip-build
  kboost bench --project ~/src/zlib --make 'libz.a' --subset 'adler32.o' --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("kboost bench takes no arguments (got %q)", args)
			}
			opt := bench.Options{Runs: runs, Project: project, StraceKFull: straceKFull, SkipBuild: skipBuild, SkipProbes: skipProbes}
			if mk != "" {
				opt.Make = strings.Fields(mk)
			}
			if subset != "" {
				opt.Subset = strings.Fields(subset)
			}
			if project != "" && mk == "" {
				opt.Make = []string{}
			}
			if progress {
				opt.Progress = s.Err
			}
			r, err := bench.Run(opt)
			if err != nil {
				return err
			}
			if jsonOut {
				b, err := json.MarshalIndent(r, "", "  ")
				if err != nil {
					return err
				}
				s.Out.Write(append(b, '\n'))
				return nil
			}
			bench.WriteTable(s.Out, r)
			return nil
		},
	}
	f := cmd.Flags()
	countVar(f, &runs, "runs", "", 3, 1, 100, "runs per row, 1 to 100 (the best is kept)")
	f.StringVar(&project, "project", "", "a C project directory to build with make (default: Lua, fetched)")
	f.StringVar(&mk, "make", "", "make arguments of the build (default for Lua: posix MYCFLAGS=-g)")
	f.StringVar(&subset, "subset", "", "make arguments of the subset strace -f -k is compared on")
	f.BoolVar(&straceKFull, "strace-k-full", false, "run strace -f -k on the whole build, not a subset")
	f.BoolVar(&skipBuild, "skip-build", false, "leave the build part out")
	f.BoolVar(&skipProbes, "skip-probes", false, "leave the probe part out")
	f.BoolVar(&progress, "progress", true, "a line on stderr per finished row")
	f.BoolVar(&jsonOut, "json", false, "the result as one JSON object")
	return cmd
}
