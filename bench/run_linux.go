//go:build linux && amd64

package bench

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/kboost/kboost/ptprobe"
	"github.com/kboost/kboost/uprobe"
	"golang.org/x/sys/unix"
)

//go:embed testdata/loop.c
var loopSource []byte

// Run measures every row and returns the result with its checks.
func Run(opt Options) (*Result, error) {
	if opt.Runs <= 0 {
		opt.Runs = 3
	}
	if opt.Kboost == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBench, err)
		}
		opt.Kboost = exe
	}
	r := &Result{Machine: cpuModel(), Kernel: release(), CPUs: runtime.NumCPU(), Load: loadavg(), Runs: opt.Runs}
	if !opt.SkipBuild {
		if err := runBuild(&opt, r); err != nil {
			return r, err
		}
	}
	if !opt.SkipProbes {
		if err := runProbes(&opt, r); err != nil {
			return r, err
		}
	}
	r.LoadEnd = loadavg()
	r.Checks = checks(r)
	return r, nil
}

func (o *Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// timing is one run's wall and CPU seconds.
type timing struct{ wall, cpu float64 }

// timeRun runs argv in dir with its output discarded.
func timeRun(dir string, argv []string) (timing, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(t0).Seconds()
	if err != nil {
		return timing{}, fmt.Errorf("%w: %s: %w\n%s", ErrBench, strings.Join(argv, " "), err, tail(out))
	}
	var cpu float64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = tv(ru.Utime) + tv(ru.Stime)
	}
	return timing{wall, cpu}, nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// best runs prepare then argv runs times and keeps the fastest wall time.
func best(runs int, dir string, prepare, argv []string) (timing, error) {
	var b timing
	for i := 0; i < runs; i++ {
		if prepare != nil {
			if _, err := timeRun(dir, prepare); err != nil {
				return b, err
			}
		}
		t, err := timeRun(dir, argv)
		if err != nil {
			return b, err
		}
		if i == 0 || t.wall < b.wall {
			b = t
		}
	}
	return b, nil
}

func runBuild(o *Options, r *Result) error {
	dir, mk, subset := o.Project, o.Make, o.Subset
	if dir == "" {
		var err error
		if dir, err = luaProject(o.cache()); err != nil {
			return err
		}
		if mk == nil {
			mk = []string{"posix", "MYCFLAGS=-g"} // with debug information, as Debian builds it: about 6 s of CPU
		}
		if subset == nil && !o.StraceKFull {
			subset = []string{"-C", "src", "SYSCFLAGS=-DLUA_USE_POSIX", "MYCFLAGS=-g", "lapi.o"}
		}
		r.Workload = "Lua " + luaVersion + " (Debian's lua5.4 orig tarball), make -s " + strings.Join(mk, " ")
	} else {
		r.Workload = dir + ", make -s " + strings.Join(mk, " ")
	}
	if subset != nil {
		r.Workload += "; subset: make -s " + strings.Join(subset, " ")
	}
	for _, tool := range []string{"make", "gcc", "strace", "taskset"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: %s: %w (scripts/setup.sh installs it)", ErrBench, tool, err)
		}
	}
	clean := []string{"make", "-s", "clean"}
	mon := func(args ...string) []string {
		return append(append([]string{o.Kboost, "monitor", "--out", "/dev/null"}, args...), "--")
	}
	ref := []string{"--exec-maps", "--syscalls=" + strings.Join(RefMonCalls, ",")}
	cpu, err := firstCPU()
	if err != nil {
		return err
	}
	type variant struct {
		name   string
		prefix []string
		subset bool
	}
	vs := []variant{
		{rowNative, nil, false},
		{rowRefNoBT, mon(ref...), false},
		{rowRefNoSym, mon(append(ref, "--backtrace", "--no-symbols")...), false},
		{rowRefFull, mon(append(ref, "--backtrace")...), false},
		{rowAllFull, mon("--backtrace"), false},
		{rowAllTwo, mon("--backtrace", "--one-stop=false"), false},
		{rowAllPoll, mon("--backtrace", "--one-stop=false", "--poll", "200us"), false},
		{rowNativePin, []string{"taskset", "-c", cpu}, false},
		{rowAllPin, mon("--backtrace", "--pin-cpu", cpu), false},
		{rowStrace, []string{"strace", "-f", "-qq", "-o", "/dev/null"}, false},
	}
	straceK := []string{"strace", "-f", "-k", "-qq", "-o", "/dev/null"}
	if subset == nil {
		vs = append(vs, variant{rowStraceK, straceK, false})
	} else {
		vs = append(vs, variant{rowNative, nil, true}, variant{rowAllFull, mon("--backtrace"), true}, variant{rowStraceK, straceK, true})
	}
	// Runs are interleaved (every row once per round) so that a change in
	// the machine's load during the bench affects every row alike.
	argvs := make([][]string, len(vs))
	bests := make([]timing, len(vs))
	for i, v := range vs {
		args := mk
		if v.subset {
			args = subset
		}
		argvs[i] = append(append(append([]string{}, v.prefix...), "make", "-s"), args...)
	}
	for round := 0; round < o.Runs; round++ {
		for i, v := range vs {
			if v.name == rowStraceK && round > 0 {
				continue // minutes per run: once
			}
			if _, err := timeRun(dir, clean); err != nil {
				return err
			}
			t, err := timeRun(dir, argvs[i])
			if err != nil {
				return err
			}
			if round == 0 || t.wall < bests[i].wall {
				bests[i] = t
			}
		}
		o.progress("round %d of %d done", round+1, o.Runs)
	}
	natives := map[bool]timing{}
	for i, v := range vs {
		if v.name == rowNative {
			natives[v.subset] = bests[i]
		}
	}
	for i, v := range vs {
		t, n := bests[i], natives[v.subset]
		row := Row{Name: v.name, Command: shorten(o.Kboost, argvs[i]), Subset: v.subset, Wall: t.wall, CPU: t.cpu,
			Speed: n.wall / t.wall, CPUSpeed: n.cpu / t.cpu}
		r.Build = append(r.Build, row)
		o.progress("%-72s %8.2f s  %5.1f%%", row.Name, row.Wall, 100*row.Speed)
	}
	_, err = timeRun(dir, clean)
	return err
}

func (o *Options) cache() string {
	if o.Cache != "" {
		return o.Cache
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "kboost")
}

// probe rows: name, kboost trace mode ("" native, "uprobe"), default calls.
var probeRows = []struct {
	name  string
	mode  string
	hits  bool
	calls int64
}{
	{probeNative, "", false, 200_000_000},
	{probeJump, "jump", false, 100_000_000},
	{probeJumpHits, "jump", true, 10_000_000},
	{probeBoost, "boost", false, 40_000},
	{probeSingle, "singlestep", false, 20_000},
	{probeUprobe, "uprobe", false, 40_000},
}

func runProbes(o *Options, r *Result) error {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return fmt.Errorf("%w: gcc: %w (scripts/setup.sh installs it)", ErrBench, err)
	}
	work, err := os.MkdirTemp("", "kboost-bench-")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBench, err)
	}
	defer os.RemoveAll(work)
	src, bin := filepath.Join(work, "loop.c"), filepath.Join(work, "loop")
	if err := os.WriteFile(src, loopSource, 0o644); err != nil {
		return fmt.Errorf("%w: %w", ErrBench, err)
	}
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: gcc: %w\n%s", ErrBench, err, out)
	}
	var native float64
	for _, p := range probeRows {
		n := p.calls
		if v, ok := o.Calls[p.mode]; ok && v > 0 {
			n = v
		}
		var prefix []string
		sumPath := filepath.Join(work, "summary.jsonl")
		switch p.mode {
		case "":
		case "uprobe":
			if os.Geteuid() != 0 {
				o.progress("%s: skipped (needs root)", p.name)
				continue
			}
			ts, err := ptprobe.Resolve(bin, []string{"tick"})
			if err != nil {
				return err
			}
			ev, err := uprobe.OpenPMU(uprobe.Probe{Path: bin, Offset: ts[0].FileOffset, Pid: -1})
			if err != nil {
				o.progress("%s: skipped (%v)", p.name, err)
				continue
			}
			defer ev.Close()
		default:
			prefix = []string{o.Kboost, "trace", "--mode", p.mode, "--probe", "tick", "--json", "--out", sumPath}
			if p.hits {
				prefix = append(prefix, "--hits")
			}
			prefix = append(prefix, "--")
		}
		t0, err := best(o.Runs, work, nil, append(append([]string{}, prefix...), bin, "loop", "0"))
		if err != nil {
			return err
		}
		tn, err := best(o.Runs, work, nil, append(append([]string{}, prefix...), bin, "loop", strconv.FormatInt(n, 10)))
		if err != nil {
			return err
		}
		row := Probe{Name: p.name, Calls: n, NsPerCall: (tn.wall - t0.wall) * 1e9 / float64(n),
			CPUNsPerCall: (tn.cpu - t0.cpu) * 1e9 / float64(n), StopsPerHit: -1}
		if p.mode == "" {
			native = row.NsPerCall
		}
		if native > 0 {
			row.XNative = row.NsPerCall / native
		}
		if prefix != nil {
			row.StopsPerHit = stopsPerHit(sumPath)
		}
		r.Probes = append(r.Probes, row)
		o.progress("%-40s %12.1f ns per call", row.Name, row.NsPerCall)
	}
	return nil
}

// stopsPerHit reads the last run's summary (kboost trace --json).
func stopsPerHit(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var s struct {
		Summary struct {
			Probes []struct{ Hits, Stops uint64 }
		}
	}
	if json.Unmarshal([]byte(lines[len(lines)-1]), &s) != nil || len(s.Summary.Probes) == 0 || s.Summary.Probes[0].Hits == 0 {
		return -1
	}
	p := s.Summary.Probes[0]
	return float64(p.Stops) / float64(p.Hits)
}

func loadavg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		l[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return l
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func release() string {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return "?"
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// firstCPU is the lowest CPU this process may run on: the pinned rows' CPU.
func firstCPU() (string, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return "", fmt.Errorf("%w: sched_getaffinity: %w", ErrBench, err)
	}
	for i := 0; i < 8*int(unsafe.Sizeof(set)); i++ {
		if set.IsSet(i) {
			return strconv.Itoa(i), nil
		}
	}
	return "", fmt.Errorf("%w: no CPU in this process's affinity mask", ErrBench)
}
