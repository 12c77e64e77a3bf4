//go:build linux

package uprobe

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// Bench measures the per-call cost of each of BenchFuncsFor(k) on the
// running kernel (k its model): the workload runs count calls (scaled per path so that each run
// takes a fraction of a second) and once with one call (process start-up),
// runs times each; the median difference of the workload's CPU time
// divided by the calls is the cost.
// Everything runs in dir and is removed; the probes are perf events. A
// probed path whose hits are not its calls (a model that is not the running
// kernel's) is an error.
func Bench(dir string, scale float64, runs int, k *Kernel) ([]BenchRow, error) {
	if runs < 1 {
		runs = 1
	}
	counts := map[string]float64{"native": 2e7, "optimized": 3e5, "emulated": 2e5, "singlestep": 2e4, "uretprobe": 1.5e5}
	var rows []BenchRow
	funcs := BenchFuncsFor(k)
	for i, f := range funcs {
		n := uint32(max(2, counts[f.Name]*scale))
		path := filepath.Join(dir, fmt.Sprintf("kboost-bench-%d-%s", os.Getpid(), f.Name))
		one := path + "-1"
		if err := os.WriteFile(path, BenchImage(funcs, i, n), 0o755); err != nil {
			return nil, err
		}
		defer os.Remove(path)
		if err := os.WriteFile(one, BenchImage(funcs, i, 1), 0o755); err != nil {
			return nil, err
		}
		defer os.Remove(one)
		row := BenchRow{Path: f.Name, Asm: f.Asm, Calls: uint64(n), Verdict: "-"}
		if b, err := Open(path); f.Probe && err == nil {
			if s, _, err := Check(b, k, Request{Addr: benchBase + BenchFuncOffset(i), HasAddr: true}); err == nil {
				row.Verdict = s.Path.String()
			}
			b.Close()
		}
		var ds []time.Duration
		for r := 0; r < runs; r++ {
			t1, _, err := benchRun(one, f, BenchFuncOffset(i))
			if err != nil {
				return nil, err
			}
			tn, hits, err := benchRun(path, f, BenchFuncOffset(i))
			if err != nil {
				return nil, err
			}
			row.Hits = hits
			if f.Probe && hits != uint64(n) {
				return nil, fmt.Errorf("uprobe: bench %s (%s): %d hits of %d calls: the running kernel does not probe the site as model %s predicts (%s)", f.Name, f.Asm, hits, n, k.Name, row.Verdict)
			}
			ds = append(ds, tn-t1)
		}
		slices.Sort(ds)
		row.NsCall = float64(ds[len(ds)/2].Nanoseconds()) / float64(n-1)
		rows = append(rows, row)
	}
	for i := range rows {
		rows[i].Ratio = rows[i].NsCall / rows[0].NsCall
	}
	return rows, nil
}

// benchRun runs the workload at path under f's probe and returns its wall
// CPU time and the hits counted.
func benchRun(path string, f BenchFunc, off uint64) (time.Duration, uint64, error) {
	var ev *PMUEvent
	if f.Probe {
		var err error
		if ev, err = OpenPMU(Probe{Path: path, Offset: off, Return: f.Ret, Pid: -1}); err != nil {
			return 0, 0, err
		}
		defer ev.Close()
	}
	// CPU time (user + system) of the workload, not wall time: the machine
	// may be shared, and the kernel's uprobe handling is charged to the task.
	cmd := exec.Command(path)
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("uprobe: bench workload %s: %v %s", f.Name, err, out)
	}
	d := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	var hits uint64
	if ev != nil {
		hits, _ = ev.Hits()
	}
	return d, hits, nil
}

// BenchTarget measures what a probe at site costs a real workload: the
// command (argv[0] and its arguments; it must exit by itself) runs runs
// times unprobed, with an entry probe at site.FileOffset of file and, when
// ret, with a uretprobe there; the added CPU time per hit is the probe's
// cost in that program. The probes are perf events (nothing is left behind).
func BenchTarget(file string, site Site, ret bool, argv []string, runs int) ([]TargetRow, error) {
	if runs < 1 {
		runs = 1
	}
	kinds := []string{"none", "entry"}
	if ret {
		kinds = append(kinds, "return")
	}
	var rows []TargetRow
	for _, kind := range kinds {
		row := TargetRow{Probe: kind, Verdict: "-"}
		if kind != "none" {
			row.Verdict = site.Path.String()
		}
		var ds []time.Duration
		for r := 0; r < runs; r++ {
			var ev *PMUEvent
			if kind != "none" {
				var err error
				if ev, err = OpenPMU(Probe{Path: file, Offset: uint64(site.FileOffset), Return: kind == "return", Pid: -1}); err != nil {
					return nil, err
				}
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			err := cmd.Run()
			if ev != nil {
				row.Hits, _ = ev.Hits()
				ev.Close()
			}
			if err != nil {
				return nil, fmt.Errorf("uprobe: bench: %s: %w", argv[0], err)
			}
			ds = append(ds, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
		slices.Sort(ds)
		row.CPUNs = float64(ds[len(ds)/2].Nanoseconds())
		if row.Hits > 0 && len(rows) > 0 {
			row.NsHit = (row.CPUNs - rows[0].CPUNs) / float64(row.Hits)
		}
		rows = append(rows, row)
	}
	return rows, nil
}
