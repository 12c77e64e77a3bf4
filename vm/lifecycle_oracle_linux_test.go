//go:build linux

package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"github.com/kboost/kboost/vm/guest"
)

// TestOracleProbeLifecycle boots the Debian amd64 kernel and checks the loader
// in it: its predictions from the live kernel (kcore alone, and with the
// vmlinux) against the kernel's answers for a set of points; the perf PMU
// probe (listed while open, counts hits, gone after Close); and that killing a
// watcher with SIGINT or SIGKILL leaves no perf probe behind, while a killed
// tracefs watcher's leftovers are removed by Sweep.
func TestOracleProbeLifecycle(t *testing.T) {
	oracleGate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	points := []string{"vfs_read", "vfs_read+1", "vfs_read+4", "vfs_read+5", "vfs_read+9", "vfs_read+16",
		"kboost_no_such_symbol", "do_int3", "schedule", "ksys_read+12", "ksys_read+5", "vfs_write+9", "__fdget_pos+4",
		// Single-stepped, with an emulated jcc / ret later in the block:
		// --place cheapest moves them.
		"vfs_read+0x27", "vfs_read+0xea",
		"dup_mmap.cold", "__x64_sys_getpid"}
	// A name kallsyms holds twice: kprobe_events refuses it (EADDRNOTAVAIL).
	if path, err := DebianKallsyms(ctx, "linux-image-amd64"); err == nil {
		if b, err := os.ReadFile(path); err == nil {
			if d := duplicateText(b); d != "" {
				points = append(points, d)
			}
		}
	}
	lc, err := ProbeLifecycle(ctx, deb, guest.LifecycleArgs{Points: points, Watch: "vfs_read"}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.MarshalIndent(lc, "", "  ")
	t.Logf("%s", j)
	for _, p := range lc.Points {
		if len(p.PredictErrors) > 0 {
			t.Errorf("%s: prediction errors %v", p.Point, p.PredictErrors)
			continue
		}
		for src, x := range map[string]*loader.Expectation{"kcore": p.FromKcore, "vmlinux": p.FromVmlinux} {
			ok := x.Errno == p.KernelErrno
			if ok && x.Errno == "" {
				ok = p.KernelList != nil && x.Addr == p.KernelList.Addr && x.Ftrace == p.KernelList.Has("FTRACE") && x.Optimized == p.KernelList.Has("OPTIMIZED")
			}
			line := ""
			if p.KernelList != nil {
				line = p.KernelList.Point + " " + strings.Join(p.KernelList.Flags, ",")
			}
			msg := "%s (%s): predicted errno=%q addr=%#x ftrace=%v optimized=%v rules=%v; kernel errno=%q %q list=%q"
			args := []any{p.Point, src, x.Errno, x.Addr, x.Ftrace, x.Optimized, x.Rules, p.KernelErrno, p.KernelErrLog, line}
			if ok {
				t.Logf("agree    "+msg, args...)
			} else {
				t.Errorf("DISAGREE "+msg, args...)
			}
		}
	}
	placed, moved := 0, 0
	for _, p := range lc.Points {
		if p.Placed == "" {
			continue
		}
		placed++
		if sp, err := loader.ParseSpec(p.Point); err == nil && sp.Point() != p.Placed {
			moved++
		}
		le := p.PlacedList
		ok := p.PlacedErrno == "" && le != nil
		if ok {
			switch p.PlacedCost {
			case "ftrace":
				ok = le.Has("FTRACE")
			case "optimized":
				ok = le.Has("OPTIMIZED")
			default:
				ok = !le.Has("FTRACE") && !le.Has("OPTIMIZED")
			}
		}
		if ok {
			t.Logf("placed   %s -> %s (%s): kernel %v; %s", p.Point, p.Placed, p.PlacedCost, le.Flags, p.PlacedReason)
		} else {
			t.Errorf("placed   %s -> %s (%s): kernel errno %q list %+v; %s", p.Point, p.Placed, p.PlacedCost, p.PlacedErrno, le, p.PlacedReason)
		}
	}
	if placed < 4 || moved < 1 {
		t.Errorf("%d points placed, %d of them moved", placed, moved)
	}
	if lc.PerfError != "" || lc.PerfListed < 1 || lc.PerfHits == 0 || lc.PerfAfter != 0 {
		t.Errorf("perf probe: listed %d, hits %d, after close %d, error %q", lc.PerfListed, lc.PerfHits, lc.PerfAfter, lc.PerfError)
	}
	for _, k := range lc.Kills {
		if !k.Ready || k.ListBefore < 1 || k.Error != "" {
			t.Errorf("%s %s: watcher not ready or not listed: %+v", k.Target, k.Signal, k)
			continue
		}
		switch {
		case k.Target == "perf" || k.Signal == "SIGINT":
			if k.ListAfter != 0 || k.EventsAfter != 0 {
				t.Errorf("%s %s left probes behind: %+v", k.Target, k.Signal, k)
			}
		default: // tracefs, SIGKILL: the leftover is the point, and Sweep removes it
			if k.EventsAfter < 1 || k.Swept < 1 || k.ListSwept != 0 {
				t.Errorf("tracefs SIGKILL: leftover %d, swept %d, list after sweep %d", k.EventsAfter, k.Swept, k.ListSwept)
			}
		}
	}
}

// duplicateText returns a local text symbol name that kallsyms lists twice.
func duplicateText(b []byte) string {
	seen := map[string]bool{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) != 3 || f[1] != "t" || strings.Contains(f[2], ".") || strings.HasPrefix(f[2], "__") {
			continue
		}
		if seen[f[2]] {
			return f[2]
		}
		seen[f[2]] = true
	}
	return ""
}
