package bench

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrBench marks a benchmark that could not run (a missing tool, a failed
// build or fetch).
var ErrBench = errors.New("bench")

// Options say what to measure.
type Options struct {
	// Kboost is the kboost executable the rows run (default: this one).
	Kboost string
	// Runs per row (best of them); 0: 3.
	Runs int
	// Project is a C project directory built with make (empty: Lua, fetched
	// into Cache); Make its make arguments, Subset the make arguments of the
	// subset strace -f -k is compared on (nil with Project: the whole build).
	Project string
	Make    []string
	Subset  []string
	// StraceKFull runs strace -f -k on the whole build (slow: about 200 times
	// native).
	StraceKFull bool
	// Cache is kboost's cache directory (empty: $HOME/.cache/kboost).
	Cache string
	// Calls is the probe loop's call count per mechanism (0: defaults that
	// make each run last about a second).
	Calls map[string]int64
	// SkipBuild, SkipProbes leave a part out.
	SkipBuild, SkipProbes bool
	// Progress receives a line per finished row (nil: none).
	Progress io.Writer
}

// Row is one measured configuration of the build.
type Row struct {
	Name string `json:"name"`
	// Command is what ran (kboost's own path shortened to "kboost").
	Command string `json:"command"`
	// Subset: the row builds the subset, not the whole project.
	Subset bool `json:"subset"`
	// Wall and CPU are seconds (best run by wall time; CPU of the same run).
	Wall float64 `json:"wall_s"`
	CPU  float64 `json:"cpu_s"`
	// Speed is native's wall time over this row's (1 = native speed), on
	// the same build (whole or subset); CPUSpeed the same for CPU time.
	Speed    float64 `json:"speed"`
	CPUSpeed float64 `json:"cpu_speed"`
}

// Probe is one probe mechanism's cost per call of the loop.
type Probe struct {
	Name string `json:"name"`
	// Calls is N; NsPerCall = (wall(N) - wall(0)) / N, best runs.
	Calls     int64   `json:"calls"`
	NsPerCall float64 `json:"ns_per_call"`
	// CPUNsPerCall is the same from CPU time.
	CPUNsPerCall float64 `json:"cpu_ns_per_call"`
	// XNative is NsPerCall over the native call's.
	XNative float64 `json:"x_native"`
	// Stops per hit as kboost counted them (-1: not a kboost row).
	StopsPerHit float64 `json:"stops_per_hit"`
}

// Check is one target of the issue and whether this run meets it.
type Check struct {
	What   string  `json:"what"`
	Value  float64 `json:"value"`
	Target string  `json:"target"`
	OK     bool    `json:"ok"`
}

// Result is one bench run.
type Result struct {
	Machine  string     `json:"machine"`
	Kernel   string     `json:"kernel"`
	CPUs     int        `json:"cpus"`
	Load     [3]float64 `json:"load"` // load average at the start
	LoadEnd  [3]float64 `json:"load_end"`
	Runs     int        `json:"runs"`
	Workload string     `json:"workload,omitempty"`
	Build    []Row      `json:"build"`
	Probes   []Probe    `json:"probes"`
	Checks   []Check    `json:"checks"`
}

// The reference monitor's calls: opens, exec, network, process creation,
// mappings (the monitor filters PROT_EXEC ones by what it records; every
// mmap and mprotect stops).
var RefMonCalls = []string{"execve", "execveat", "open", "openat", "openat2", "creat", "connect", "accept",
	"accept4", "bind", "listen", "socket", "clone", "clone3", "fork", "vfork", "mmap", "mprotect"}

// Row names (the checks find rows by them).
const (
	rowNative     = "native"
	rowRefNoBT    = "kboost monitor, reference-monitor calls, no backtraces"
	rowRefNoSym   = "kboost monitor, reference-monitor calls, backtraces without symbols"
	rowRefFull    = "kboost monitor, reference-monitor calls, backtraces and symbols"
	rowAllFull    = "kboost monitor, every call, backtraces and symbols"
	rowAllTwo     = "kboost monitor, every call, backtraces and symbols, --one-stop=false (two stops per call)"
	rowAllPoll    = "kboost monitor, every call, backtraces and symbols, --one-stop=false --poll 200us"
	rowNativePin  = "native, on one CPU (taskset)"
	rowAllPin     = "kboost monitor, every call, backtraces and symbols, --pin-cpu (one CPU)"
	rowStrace     = "strace -f"
	rowStraceK    = "strace -f -k"
	probeNative   = "native call"
	probeJump     = "kboost trace --mode jump"
	probeJumpHits = "kboost trace --mode jump --hits"
	probeBoost    = "kboost trace --mode boost"
	probeSingle   = "kboost trace --mode singlestep"
	probeUprobe   = "kernel uprobe (perf PMU)"
)

func findRow(rows []Row, name string, subset bool) (Row, bool) {
	for _, r := range rows {
		if r.Name == name && r.Subset == subset {
			return r, true
		}
	}
	return Row{}, false
}

func findProbe(ps []Probe, name string) (Probe, bool) {
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return Probe{}, false
}

// checks compares the figures with issue 15's speed targets. The build's
// ratios are checked by wall time and by CPU time: on a machine loaded by
// other work a build's wall time is mostly waiting for a CPU, which the
// CPU time leaves out.
func checks(r *Result) []Check {
	var out []Check
	speed := func(x Row, cpu bool) float64 {
		if cpu {
			return x.CPUSpeed
		}
		return x.Speed
	}
	for _, cpu := range []bool{false, true} {
		by := " (wall)"
		if cpu {
			by = " (cpu)"
		}
		if x, ok := findRow(r.Build, rowRefFull, false); ok {
			v := speed(x, cpu)
			out = append(out, Check{"reference-monitor calls with backtraces and symbols, speed vs native" + by, v, ">= 0.80", v >= 0.80})
		}
		if x, ok := findRow(r.Build, rowAllFull, false); ok {
			v := speed(x, cpu)
			out = append(out, Check{"every call with backtraces and symbols, speed vs native" + by, v, ">= 0.40", v >= 0.40})
		}
		// Pinned: against the native build as it runs (the row's speed) and
		// against the native build on one CPU, so pinning is not credited
		// with what it does for make itself.
		if x, ok := findRow(r.Build, rowAllPin, false); ok {
			v := speed(x, cpu)
			out = append(out, Check{"every call with backtraces and symbols, --pin-cpu, speed vs native" + by, v, ">= 0.40", v >= 0.40})
			if n, ok := findRow(r.Build, rowNativePin, false); ok && speed(n, cpu) > 0 {
				v := speed(x, cpu) / speed(n, cpu)
				out = append(out, Check{"every call with backtraces and symbols, --pin-cpu, speed vs native on one CPU" + by, v, ">= 0.40", v >= 0.40})
			}
		}
		for _, subset := range []bool{false, true} {
			k, ok1 := findRow(r.Build, rowAllFull, subset)
			s, ok2 := findRow(r.Build, rowStraceK, subset)
			if ok1 && ok2 && speed(s, cpu) > 0 {
				what := "every call with backtraces and symbols / strace -f -k, speed"
				if subset {
					what += " (subset)"
				}
				v := speed(k, cpu) / speed(s, cpu)
				out = append(out, Check{what + by, v, ">= 10", v >= 10})
			}
		}
	}
	if j, ok := findProbe(r.Probes, probeJump); ok {
		out = append(out, Check{"jump probe, ns per call", j.NsPerCall, "<= 20", j.NsPerCall <= 20})
	}
	b, ok1 := findProbe(r.Probes, probeBoost)
	s, ok2 := findProbe(r.Probes, probeSingle)
	if ok1 && ok2 && s.NsPerCall > 0 {
		v := b.NsPerCall / s.NsPerCall
		out = append(out, Check{"boost / singlestep per hit (wall)", v, "<= 0.55", v <= 0.55})
		if s.CPUNsPerCall > 0 {
			v := b.CPUNsPerCall / s.CPUNsPerCall
			out = append(out, Check{"boost / singlestep per hit (cpu)", v, "<= 0.55", v <= 0.55})
		}
	}
	return out
}

// WriteTable prints the result as tables of times and ratios.
func WriteTable(w io.Writer, r *Result) {
	fmt.Fprintf(w, "%s, %d CPUs, Linux %s, load average %.1f %.1f %.1f at the start (%.1f at the end), best of %d\n",
		r.Machine, r.CPUs, r.Kernel, r.Load[0], r.Load[1], r.Load[2], r.LoadEnd[0], r.Runs)
	if len(r.Build) > 0 {
		fmt.Fprintf(w, "\nbuild: %s\n", r.Workload)
		names := make([]string, len(r.Build))
		width := 0
		for i, x := range r.Build {
			names[i] = x.Name
			if x.Subset {
				names[i] += " [subset]"
			}
			width = max(width, len(names[i]))
		}
		fmt.Fprintf(w, "%-*s %9s %7s %9s %7s\n", width, "", "wall s", "speed", "cpu s", "speed")
		for i, x := range r.Build {
			fmt.Fprintf(w, "%-*s %9.2f %6.1f%% %9.2f %6.1f%%\n", width, names[i], x.Wall, 100*x.Speed, x.CPU, 100*x.CPUSpeed)
		}
	}
	if len(r.Probes) > 0 {
		fmt.Fprintf(w, "\nper call of a 7-byte function in a tight loop\n")
		fmt.Fprintf(w, "%-40s %14s %14s %12s %8s\n", "", "ns per call", "cpu ns", "x native", "stops")
		for _, p := range r.Probes {
			stops := "-"
			if p.StopsPerHit >= 0 {
				stops = fmt.Sprintf("%.0f", p.StopsPerHit)
			}
			fmt.Fprintf(w, "%-40s %14s %14s %12.1f %8s\n", p.Name, ns(p.NsPerCall), ns(p.CPUNsPerCall), p.XNative, stops)
		}
	}
	if len(r.Checks) > 0 {
		fmt.Fprintln(w, "\ntargets")
		width := 0
		for _, c := range r.Checks {
			width = max(width, len(c.What))
		}
		for _, c := range r.Checks {
			mark := "MISSED"
			if c.OK {
				mark = "ok"
			}
			fmt.Fprintf(w, "  %-*s %10.3f %8s  %s\n", width, c.What, c.Value, c.Target, mark)
		}
	}
}

func ns(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1f us", v/1000)
	}
	return fmt.Sprintf("%.1f ns", v)
}

// shorten prints a command line with kboost's path as "kboost".
func shorten(kboost string, argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == kboost {
			a = "kboost"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
