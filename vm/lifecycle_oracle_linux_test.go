//go:build linux

package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/jsonv"
	"github.com/kboost/kboost/internal/schemacheck"
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
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
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
	// A name kallsyms holds twice: kprobe_events refuses it (EADDRNOTAVAIL),
	// but takes the second one's raw address. Raw addresses also of a data
	// symbol (not text: EINVAL) and of one in no symbol (ENOENT). The
	// addresses come from the kernel's own kallsyms (a nokaslr boot).
	if path, err := DebianKallsyms(ctx, "linux-image-amd64"); err == nil {
		if b, err := os.ReadFile(path); err == nil {
			if d, addr := duplicateText(b); d != "" {
				points = append(points, d, fmt.Sprintf("%#x", addr))
			}
			if a := kallsymsAddr(b, "jiffies_64"); a != 0 {
				points = append(points, fmt.Sprintf("kernel:%#x", a))
			}
			if a := kallsymsAddr(b, "vfs_read"); a != 0 {
				points = append(points, fmt.Sprintf("%#x", a), fmt.Sprintf("%#x", a+9))
			}
		}
	}
	points = append(points, "0xffffffffff600000") // the vsyscall page: no symbol
	lc, err := ProbeLifecycle(ctx, deb, guest.LifecycleArgs{Points: points, Watch: "vfs_read", CLI: &guest.CLIArgs{}}, Config{})
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
			// kprobe_events (the path used here) accepts an inert event where
			// the perf PMU would return the errno.
			want := x.Errno
			if x.TracefsInert {
				want = ""
			}
			ok := want == p.KernelErrno
			if ok && x.TracefsInert {
				ok = p.KernelList == nil
			} else if ok && x.Errno == "" {
				ok = p.KernelList != nil && x.Addr == p.KernelList.Addr && x.Ftrace == p.KernelList.Has("FTRACE") && x.Optimized == p.KernelList.Has("OPTIMIZED")
			}
			line := ""
			if p.KernelList != nil {
				line = p.KernelList.Point + " " + strings.Join(p.KernelList.Flags, ",")
			}
			msg := "%s (%s): predicted errno=%q (tracefs inert %v) addr=%#x ftrace=%v optimized=%v rules=%v; kernel errno=%q %q list=%q"
			args := []any{p.Point, src, x.Errno, x.TracefsInert, x.Addr, x.Ftrace, x.Optimized, x.Rules, p.KernelErrno, p.KernelErrLog, line}
			if ok {
				t.Logf("agree    "+msg, args...)
			} else {
				t.Errorf("DISAGREE "+msg, args...)
			}
		}
	}
	// The perf PMU: the prediction's errno as it is (never an inert event),
	// else the predicted address.
	for _, p := range lc.Points {
		if x := p.FromKcore; x != nil {
			if !sameErrnoName(x.Errno, p.PerfErrno) || x.Errno == "" && p.PerfAddr != x.Addr {
				t.Errorf("perf %s: predicted errno %q addr %#x; perf_event_open %q, listed at %#x", p.Point, x.Errno, x.Addr, p.PerfErrno, p.PerfAddr)
			} else {
				t.Logf("perf     %s: errno %q addr %#x, as predicted", p.Point, p.PerfErrno, p.PerfAddr)
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
	checkCLI(t, lc.CLI)
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

// duplicateText returns a local text symbol name that kallsyms lists twice,
// and the address of its second occurrence.
func duplicateText(b []byte) (string, uint64) {
	seen := map[string]bool{}
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) != 3 || f[1] != "t" || strings.Contains(f[2], ".") || strings.HasPrefix(f[2], "__") {
			continue
		}
		if seen[f[2]] {
			a, _ := strconv.ParseUint(f[0], 16, 64)
			return f[2], a
		}
		seen[f[2]] = true
	}
	return "", 0
}

// sameErrnoName compares errno names, ENOTSUP and EOPNOTSUPP being one.
func sameErrnoName(a, b string) bool {
	norm := func(s string) string {
		if s == "ENOTSUP" {
			return "EOPNOTSUPP"
		}
		return s
	}
	return norm(a) == norm(b)
}

// kallsymsAddr is the address of the first symbol called name in a kallsyms dump.
func kallsymsAddr(b []byte, name string) uint64 {
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) >= 3 && f[2] == name {
			a, _ := strconv.ParseUint(f[0], 16, 64)
			return a
		}
	}
	return 0
}

// checkCLI checks the kboost probe commands run in the guest (the probe-cli
// step) against the kernel's kprobes after each: exit statuses, outputs, and
// the kprobe_events and kprobes/list the guest read after every command.
func checkCLI(t *testing.T, rep *guest.CLIReport) {
	if rep == nil || len(rep.Runs) != 10 {
		t.Fatalf("probe-cli: %+v", rep)
	}
	for _, n := range rep.Notes {
		t.Errorf("probe-cli note: %s", n)
	}
	for i, r := range rep.Runs {
		t.Logf("run %d: kboost %s: exit %d, %d events, %d listed\nstdout:\n%s\nstderr:\n%s", i, strings.Join(r.Args, " "), r.Exit, len(r.Events), len(r.List), r.Stdout, r.Stderr)
	}
	clean := func(r *guest.CLIRun) {
		t.Helper()
		if len(r.Events) != 0 || len(r.List) != 0 {
			t.Errorf("%v: kprobes left in the kernel: events %+v list %+v", r.Args, r.Events, r.List)
		}
	}
	runs := rep.Runs
	// 0: sweep with nothing to sweep.
	if r := &runs[0]; r.Exit != 0 || !strings.Contains(r.Stdout, "no kboost probes") {
		t.Errorf("sweep on a clean kernel: exit %d, %q", r.Exit, r.Stdout)
	}
	clean(&runs[0])
	// 1: a point inside an instruction: refused with the kernel's errno
	// before the kernel is asked; 2: a user-space address: a usage error.
	if r := &runs[1]; r.Exit != 1 || !strings.Contains(r.Stderr, "EILSEQ") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Errorf("add of a non-boundary: exit %d, stderr %q", r.Exit, r.Stderr)
	}
	clean(&runs[1])
	if r := &runs[2]; r.Exit != 2 || !strings.Contains(r.Stderr, "not a kernel address") {
		t.Errorf("add of a user address: exit %d, stderr %q", r.Exit, r.Stderr)
	}
	clean(&runs[2])
	// 3: add --json of three points: one record each, every record's
	// kernel entry is the kernel's list entry, and every field agrees.
	add := &runs[3]
	// (the records in the JSON vocabulary: schemas/probe.json)
	type listJSON struct {
		Addr  jsonv.Addr `json:"addr"`
		Flags []string   `json:"flags"`
	}
	var recs []struct {
		Event     string `json:"event"`
		Point     string `json:"point"`
		Predicted struct {
			Resolved string `json:"resolved"`
		} `json:"predicted"`
		Kernel   *listJSON       `json:"kernel"`
		Readback json.RawMessage `json:"readback"`
		Agree    map[string]bool `json:"agree"`
	}
	if add.Exit != 0 {
		t.Fatalf("probe add: exit %d: %s", add.Exit, add.Stderr)
	}
	if err := json.Unmarshal([]byte(add.Stdout), &recs); err != nil || len(recs) != len(rep.Points) {
		t.Fatalf("probe add --json: %d records for %d points, %v", len(recs), len(rep.Points), err)
	}
	for _, r := range []*guest.CLIRun{add, &runs[4]} {
		if err := schemacheck.Validate("probe", []byte(r.Stdout)); err != nil {
			t.Errorf("%s: %v", strings.Join(r.Args, " "), err)
		}
	}
	if len(add.Events) != len(recs) || len(add.List) != len(recs) {
		t.Errorf("after probe add: %d events, %d listed, want %d", len(add.Events), len(add.List), len(recs))
	}
	byAddr := map[uint64]loader.ListEntry{}
	for _, e := range add.List {
		byAddr[e.Addr] = e
	}
	slots, optslots := 0, 0
	for i, r := range recs {
		if r.Kernel == nil {
			t.Errorf("%s: not in kprobes/list", r.Point)
			continue
		}
		if e, ok := byAddr[uint64(r.Kernel.Addr)]; !ok || strings.Join(e.Flags, ",") != strings.Join(r.Kernel.Flags, ",") {
			t.Errorf("%s: the command read %+v, the kernel lists %+v", r.Point, r.Kernel, e)
		}
		found := false
		for _, ev := range add.Events {
			found = found || ev.Group+"/"+ev.Event == r.Event
		}
		if !found {
			t.Errorf("%s: event %s not in kprobe_events %+v", r.Point, r.Event, add.Events)
		}
		for f, ok := range r.Agree {
			if !ok {
				t.Errorf("%s: %s disagrees: kernel %+v, readback %s", r.Point, f, r.Kernel, r.Readback)
			}
		}
		if _, ok := r.Agree["slot"]; ok {
			slots++
		}
		if _, ok := r.Agree["optslot"]; ok {
			optslots++
		}
		if i == 2 && r.Predicted.Resolved != rep.AddrPoint {
			t.Errorf("raw address %s resolved to %q, want %s", r.Point, r.Predicted.Resolved, rep.AddrPoint)
		}
	}
	if slots < 2 || optslots < 1 {
		t.Errorf("%d slots and %d detour buffers compared: want 2 and 1", slots, optslots)
	}
	// 4: list --json: the same events, each with its kprobes/list entry; the
	// raw-address probe under its real address.
	var rows []struct {
		Event string    `json:"event"`
		Point string    `json:"point"`
		List  *listJSON `json:"kernel"`
	}
	if r := &runs[4]; r.Exit != 0 || json.Unmarshal([]byte(r.Stdout), &rows) != nil || len(rows) != len(r.Events) || len(rows) != len(recs) {
		t.Errorf("probe list: exit %d, %d rows, %d events: %s", r.Exit, len(rows), len(r.Events), r.Stdout)
	}
	for _, row := range rows {
		if row.List == nil {
			t.Errorf("probe list: %s (%s) without its kprobes/list entry", row.Event, row.Point)
		} else if _, ok := byAddr[uint64(row.List.Addr)]; !ok {
			t.Errorf("probe list: %s at %s, not a listed probe", row.Event, row.List.Addr)
		}
	}
	if len(recs) == 3 && len(rows) == 3 && rows[2].Point != rep.Points[2] {
		t.Errorf("probe list shows the raw address as %q, want %s", rows[2].Point, rep.Points[2])
	}
	// 5: rm of the first event; 6: sweep of the rest.
	if r := &runs[5]; r.Exit != 0 || len(r.Events) != len(runs[4].Events)-1 {
		t.Errorf("probe rm: exit %d, %d events left of %d", r.Exit, len(r.Events), len(runs[4].Events))
	} else {
		for _, e := range r.Events {
			if strings.Join(r.Args[2:], "") == e.Group+"/"+e.Event {
				t.Errorf("probe rm: %s still there", e.Event)
			}
		}
	}
	if r := &runs[6]; r.Exit != 0 || strings.Count(r.Stdout, "removed ") != len(runs[5].Events) {
		t.Errorf("probe sweep: exit %d, %q for %d events", r.Exit, r.Stdout, len(runs[5].Events))
	}
	clean(&runs[6])
	// 7: add with text output: the slot and detour lines, agreement, the
	// probe listed; 8: sweep.
	if r := &runs[7]; r.Exit != 0 || len(r.Events) != 1 || len(r.List) != 1 {
		t.Errorf("probe add (text): exit %d, %d events, %d listed", r.Exit, len(r.Events), len(r.List))
	} else {
		optimized := r.List[0].Has("OPTIMIZED")
		for _, want := range []string{"added kboost/", "  slot    @", "agrees with the prediction"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("probe add (text): no %q in %q", want, r.Stdout)
			}
		}
		if optimized != strings.Contains(r.Stdout, "  detour  @") || strings.Contains(r.Stdout, "DISAGREE") {
			t.Errorf("probe add (text): listed %v, output %q", r.List[0].Flags, r.Stdout)
		}
	}
	if r := &runs[8]; r.Exit != 0 || strings.Count(r.Stdout, "removed ") != 1 {
		t.Errorf("probe sweep: exit %d, %q", r.Exit, r.Stdout)
	}
	clean(&runs[8])
	// 9: watch, then SIGINT: listed while watching, hits counted, nothing
	// left, and the interrupted exit status (130).
	w := &runs[9]
	if w.Exit != 130 || !strings.Contains(w.Stdout, "via perf") || len(w.ListDuring) != 1 {
		t.Errorf("probe watch: exit %d, %d listed while watching, %q", w.Exit, len(w.ListDuring), w.Stdout)
	}
	hits := 0
	for _, l := range strings.Split(w.Stdout, "\n") {
		if _, v, ok := strings.Cut(l, rep.Points[0]+"+0x0="); ok {
			hits, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	if hits == 0 {
		t.Errorf("probe watch counted no hits: %q", w.Stdout)
	}
	clean(w)
}
