//go:build linux && amd64

package ptprobe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/uprobe"
)

// These tests trace the test's own children (ptrace needs no root for
// them) running testdata/target.c, built with gcc at test time.

var targetBin string

const envHelper = "KBOOST_PTPROBE_HELPER" // the test binary as a kboost that gets SIGKILLed

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) != "" {
		helperMain()
		return
	}
	code := m.Run()
	if targetBin != "" {
		os.RemoveAll(filepath.Dir(targetBin))
	}
	os.Exit(code)
}

// helperMain traces `target sleep` with a jump and a boost probe until it
// is killed; the tracee writes its pid to the file $KBOOST_PTPROBE_HELPER.
func helperMain() {
	f, err := os.Create(os.Getenv(envHelper))
	if err != nil {
		os.Exit(3)
	}
	opt := Options{Argv: []string{os.Getenv("KBOOST_PTPROBE_TARGET"), "sleep", "0"}, Points: []string{"work"},
		Mode: Boost, Stdio: [3]*os.File{nil, f, nil}}
	if pid, err := strconv.Atoi(os.Getenv("KBOOST_PTPROBE_ATTACH")); err == nil { // attach, jump, say when ready
		opt = Options{Pid: pid, Points: []string{"work", "flat"}, Mode: Jump}
	}
	e, err := New(opt)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	go func() {
		<-e.Installed()
		if opt.Pid != 0 {
			fmt.Fprintln(f, "installed")
		}
	}()
	e.Run()
	os.Exit(0)
}

func target(t *testing.T) string {
	t.Helper()
	if targetBin != "" {
		return targetBin
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	dir, err := os.MkdirTemp("", "kboost-ptprobe-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "target")
	if out, err := exec.Command(gcc, "-O2", "-fno-omit-frame-pointer", "-pthread", "-o", bin, "testdata/target.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	targetBin = bin
	return bin
}

func native(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(target(t), args...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// traced runs the target under the engine and returns its summary and stdout.
func traced(t *testing.T, mode Mode, points []string, args ...string) (Summary, string) {
	t.Helper()
	sum, out, _ := tracedHits(t, false, mode, points, args...)
	return sum, out
}

// tracedHits is traced recording every hit (with its arguments) when
// record; it returns the hit records too.
func tracedHits(t *testing.T, record bool, mode Mode, points []string, args ...string) (Summary, string, []HitRecord) {
	t.Helper()
	dir := t.TempDir()
	outPath, recPath := filepath.Join(dir, "stdout"), filepath.Join(dir, "records")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opt := Options{Argv: append([]string{target(t)}, args...), Points: points, Mode: mode, Stdio: [3]*os.File{nil, f, nil}}
	var rf *os.File
	if record {
		if rf, err = os.Create(recPath); err != nil {
			t.Fatal(err)
		}
		defer rf.Close()
		opt.Out, opt.JSON, opt.Args = rf, true, true
	}
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := e.Run()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	b, _ := os.ReadFile(outPath)
	var hits []HitRecord
	if record {
		rb, _ := os.ReadFile(recPath)
		for _, l := range strings.Split(strings.TrimSpace(string(rb)), "\n") {
			var h struct{ Hit *hitJSON }
			if err := json.Unmarshal([]byte(l), &h); err != nil {
				t.Fatalf("record %q: %v", l, err)
			}
			if h.Hit != nil {
				hits = append(hits, HitRecord{Point: h.Hit.Point, Pid: h.Hit.Pid, Tid: h.Hit.Tid, N: h.Hit.N, Args: h.Hit.args(t)})
			}
		}
	}
	return sum, string(b), hits
}

// hitJSON reads a hit record back from its JSON line (addresses as "0x...").
type hitJSON struct {
	Point    string
	Pid, Tid int
	N        uint64
	Args     []string
}

func (h *hitJSON) args(t *testing.T) []Hex {
	var out []Hex
	for _, a := range h.Args {
		v, err := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
		if err != nil || !strings.HasPrefix(a, "0x") {
			t.Fatalf("argument %q is not a 0x address", a)
		}
		out = append(out, Hex(v))
	}
	return out
}

func calls(t *testing.T) int {
	if testing.Short() {
		return 300
	}
	return 3000
}

// wantModes: the mechanism each function of target.c gets under each mode
// (work and flat start with boostable runs, branchy with a jmp).
var wantModes = map[Mode]map[string]Mode{
	SingleStep: {"work": SingleStep, "flat": SingleStep, "branchy": Emulate},
	Boost:      {"work": Boost, "flat": Boost, "branchy": Emulate},
	Jump:       {"work": Jump, "flat": Jump, "branchy": Emulate},
}

// TestHitsExact: every mode counts every call (the program's own count,
// N calls per thread), on one thread and on four at once, and the program
// prints what it prints untraced.
func TestHitsExact(t *testing.T) {
	n := calls(t)
	pts := []string{"work", "flat", "branchy"}
	for _, threads := range []int{1, 4} {
		want, wst := native(t, "calls", strconv.Itoa(n), strconv.Itoa(threads))
		for _, m := range []Mode{SingleStep, Boost, Jump} {
			sum, got := traced(t, m, pts, "calls", strconv.Itoa(n), strconv.Itoa(threads))
			if got != want || sum.Status != wst {
				t.Errorf("%v, %d threads: output %q status %d, untraced %q %d", m, threads, got, sum.Status, want, wst)
			}
			for _, r := range sum.Probes {
				if r.Hits != uint64(n*threads) {
					t.Errorf("%v, %d threads: %s hits %d, the program made %d calls", m, threads, r.Point, r.Hits, n*threads)
				}
				if w, ok := wantModes[m][r.Point]; ok && r.Mode != w {
					t.Errorf("%v: %s got mechanism %v (%v), want %v", m, r.Point, r.Mode, r.Reasons, w)
				}
				// two stops per hit single-stepped, one boosted or emulated, none jumped
				if want := map[Mode]uint64{SingleStep: 2, Boost: 1, Emulate: 1, Jump: 0}[r.Mode] * r.Hits; r.Stops != want {
					t.Errorf("%v: %s (%v) cost %d stops for %d hits, want %d", m, r.Point, r.Mode, r.Stops, r.Hits, want)
				}
				if r.Installs != 1 {
					t.Errorf("%v: %s installed %d times", m, r.Point, r.Installs)
				}
			}
			if sum.Threads != threads+1 {
				t.Errorf("%v: %d threads seen, want %d", m, sum.Threads, threads+1)
			}
		}
	}
}

// TestHitRecords: with --hits --args every hit of every mode is a record
// (jump hits from the ring, without a stop): per probe as many as the
// calls made, work's first argument each i < N once per thread, every
// record naming one of the program's threads, none dropped or lost.
func TestHitRecords(t *testing.T) {
	n := calls(t) / 3
	const threads = 4
	for _, m := range []Mode{Jump, Boost, SingleStep} {
		sum, _, hits := tracedHits(t, true, m, []string{"work", "flat", "branchy"}, "calls", strconv.Itoa(n), strconv.Itoa(threads))
		if sum.Dropped+sum.Lost != 0 {
			t.Errorf("%v: %d records dropped, %d lost", m, sum.Dropped, sum.Lost)
		}
		per := map[string]int{}
		seen := map[uint64]int{} // work's first argument
		tids := map[int]int{}
		for _, h := range hits {
			per[h.Point]++
			if h.Pid <= 0 || h.Tid <= 0 || len(h.Args) != 6 {
				t.Fatalf("%v: record %+v without a pid, tid or six arguments", m, h)
			}
			if h.Point == "work" {
				seen[uint64(h.Args[0])]++
				tids[h.Tid]++
			}
		}
		for _, r := range sum.Probes {
			if per[r.Point] != n*threads || r.Records != uint64(n*threads) || r.Hits != uint64(n*threads) {
				t.Errorf("%v: %s (%v): %d records read back, %d counted, %d hits; the program made %d calls", m, r.Point, r.Mode, per[r.Point], r.Records, r.Hits, n*threads)
			}
			if r.Mode == Jump && r.Stops != 0 {
				t.Errorf("%v: %s recorded its hits with %d stops", m, r.Point, r.Stops)
			}
		}
		for i := 0; i < n; i++ {
			if seen[uint64(i)] != threads {
				t.Fatalf("%v: work(%d) recorded %d times, each of %d threads called it once", m, i, seen[uint64(i)], threads)
			}
		}
		if len(tids) != threads {
			t.Errorf("%v: work's records name %d threads (%v), the program ran it on %d", m, len(tids), tids, threads)
		}
		for tid, c := range tids {
			if c != n {
				t.Errorf("%v: thread %d has %d records of work, it made %d calls", m, tid, c, n)
			}
		}
	}
}

// TestHitRecordsFork: a fork child's jump records carry its own pid, the
// parent's theirs: N each.
func TestHitRecordsFork(t *testing.T) {
	n := calls(t)
	sum, _, hits := tracedHits(t, true, Jump, []string{"work"}, "fork", strconv.Itoa(n))
	by := map[int]int{}
	for _, h := range hits {
		by[h.Pid]++
	}
	if len(by) != 2 || sum.Probes[0].Mode != Jump {
		t.Fatalf("records by pid %v (%v), want two processes", by, sum.Probes[0].Mode)
	}
	for pid, c := range by {
		if c != n {
			t.Errorf("pid %d: %d records, each process made %d calls", pid, c, n)
		}
	}
}

// TestFallbackReasons: a jump on a one-instruction function and on a
// branch target falls back and says which rule refused it.
func TestFallbackReasons(t *testing.T) {
	sum, _ := traced(t, Jump, []string{"branchy+0x2", "tick"}, "loop", "10")
	r := sum.Probes[0]
	if r.Mode == Jump || !strings.Contains(strings.Join(r.Reasons, ","), "can_optimize.jump_into") {
		t.Errorf("branchy+0x2 (a loop's target is at +0x5): %v %v, want a fallback for can_optimize.jump_into", r.Mode, r.Reasons)
	}
	if r := sum.Probes[1]; r.Mode != Jump || r.Hits != 10 {
		t.Errorf("tick: %v with %d hits, want jump with 10", r.Mode, r.Hits)
	}
}

// TestJumpOverlap: a jump whose displaced bytes hold another probe is
// demoted to boost; both probes count every call.
func TestJumpOverlap(t *testing.T) {
	n := calls(t)
	sum, _ := traced(t, Jump, []string{"flat", "flat+0x4"}, "calls", strconv.Itoa(n), "2")
	a, b := sum.Probes[0], sum.Probes[1]
	if a.Mode != Boost || !strings.Contains(strings.Join(a.Reasons, ","), "ptprobe.jump_overlap") || b.Mode != Jump {
		t.Errorf("flat %v %v, flat+0x4 %v: want boost (ptprobe.jump_overlap) and jump", a.Mode, a.Reasons, b.Mode)
	}
	if a.Hits != uint64(2*n) || b.Hits != uint64(2*n) {
		t.Errorf("hits %d and %d, want %d each", a.Hits, b.Hits, 2*n)
	}
}

// TestFork: the child of a fork (or of a vfork, sharing its parent's
// memory) inherits the probes and its hits are counted once.
func TestFork(t *testing.T) {
	n := calls(t)
	for _, c := range []struct {
		m    Mode
		mode string
	}{{SingleStep, "fork"}, {Boost, "fork"}, {Jump, "fork"}, {SingleStep, "vfork"}, {Boost, "vfork"}, {Jump, "vfork"}} {
		m := c.m
		want, _ := native(t, c.mode, strconv.Itoa(n))
		sum, got := traced(t, m, []string{"work"}, c.mode, strconv.Itoa(n))
		if got != want {
			t.Errorf("%v: output %q, untraced %q", m, got, want)
		}
		if h := sum.Probes[0].Hits; h != uint64(2*n) {
			t.Errorf("%v: %d hits, parent and child made %d calls", m, h, 2*n)
		}
		if sum.Processes != 2 {
			t.Errorf("%v: %d processes", m, sum.Processes)
		}
	}
}

// TestExecFromThread: a thread (or the only one) calls work N times and
// executes the binary again, which calls it N more times: the new image is
// probed again and every call of both counted (the jump counters are
// shared with kboost, so the old image's survive the exec).
func TestExecFromThread(t *testing.T) {
	n := calls(t)
	want, _ := native(t, "calls", strconv.Itoa(n), "1")
	for _, c := range []struct {
		m    Mode
		mode string
	}{{SingleStep, "execthread"}, {Boost, "execthread"}, {Jump, "execthread"}, {Jump, "exec"}, {Boost, "exec"}} {
		m := c.m
		sum, got := traced(t, m, []string{"work"}, c.mode, strconv.Itoa(n))
		if got != want {
			t.Errorf("%v: output %q, want %q", m, got, want)
		}
		if r := sum.Probes[0]; r.Hits != uint64(2*n) || r.Installs != 2 {
			t.Errorf("%v: %d hits in %d installs, want %d in 2", m, r.Hits, r.Installs, 2*n)
		}
	}
}

// TestTargetDies: a tracee that SIGKILLs itself while probed; its hits up
// to then are all counted (the jump counters live in memory kboost shares).
func TestTargetDies(t *testing.T) {
	n := calls(t)
	for _, m := range []Mode{SingleStep, Boost, Jump} {
		sum, _ := traced(t, m, []string{"work"}, "die", strconv.Itoa(n))
		if sum.Status != 128+9 {
			t.Errorf("%v: status %d, want 137", m, sum.Status)
		}
		if h := sum.Probes[0].Hits; h != uint64(n) {
			t.Errorf("%v: %d hits, want %d", m, h, n)
		}
	}
}

// startSleeper runs `target sleep` untraced and returns it with its pid.
func startSleeper(t *testing.T) *exec.Cmd { return startTarget(t, "sleep", "0") }

// startTarget runs a target mode that prints its pid and runs until killed.
func startTarget(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(target(t), args...)
	cmd.Stderr = os.Stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("sleeper said %q (%v)", line, err)
	}
	return cmd
}

// siteBytes reads the function's bytes from the file and from the process.
func siteBytes(t *testing.T, pid int, fn string) (file, live []byte) {
	t.Helper()
	b, err := uprobe.Open(target(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	f, ok := b.Func(fn)
	if !ok {
		t.Fatalf("no %s", fn)
	}
	file, err = b.Read(f.Addr, int(f.Size))
	if err != nil {
		t.Fatal(err)
	}
	off, _ := b.FileOffset(f.Addr)
	maps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	addr, ok := runtimeAddr(uprobe.ParseMaps(maps), target(t), off)
	if !ok {
		t.Fatalf("%s not mapped", fn)
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	live = make([]byte, len(file))
	if _, err := mem.ReadAt(live, int64(addr)); err != nil {
		t.Fatal(err)
	}
	return file, live
}

// TestDetachRestores attaches to a running process in each mode, detaches
// while it runs, and reads its memory back: the function's bytes are the
// file's again, no mapping was added, and the process keeps running.
func TestDetachRestores(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	maps0, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	for _, c := range []struct {
		m    Mode
		hits bool
	}{{SingleStep, false}, {Boost, false}, {Jump, false}, {Jump, true}} {
		m := c.m
		opt := Options{Pid: pid, Points: []string{"work"}, Mode: m}
		if c.hits { // the ring of hit records is unmapped too
			opt.Out, opt.Hits = io.Discard, true
		}
		sum := detachAfter(t, opt, 100*time.Millisecond)
		if !sum.Detached || sum.Probes[0].Hits == 0 || sum.Probes[0].Mode != m || c.hits && sum.Probes[0].Records == 0 {
			t.Errorf("%v (hits %v): detached %v, %d hits as %v, %d records", m, c.hits, sum.Detached, sum.Probes[0].Hits, sum.Probes[0].Mode, sum.Probes[0].Records)
		}
		file, live := siteBytes(t, pid, "work")
		if !bytes.Equal(file, live) {
			t.Errorf("%v: after detach work is % x, the file has % x", m, live, file)
		}
		maps1, _ := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if !bytes.Equal(maps0, maps1) {
			t.Errorf("%v: mappings changed:\n%s\nbefore:\n%s", m, maps1, maps0)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if st := procState(pid); st != "S" && st != "R" {
		t.Errorf("the process is in state %q after the detaches", st)
	}
}

// TestAttachSpinningThreads attaches to four threads calling the probed
// functions without pause (some are inside the displaced bytes when the
// jump is planned, some inside slots or trampolines at detach), in every
// mode, several times: each thread checks every result against an
// unprobed copy and ends the process on a wrong one.
func TestAttachSpinningThreads(t *testing.T) {
	cmd := startTarget(t, "spin", "4")
	pid := cmd.Process.Pid
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for r := 0; r < rounds; r++ {
		for _, m := range []Mode{Jump, Boost, SingleStep} {
			sum := detachAfter(t, Options{Pid: pid, Points: []string{"work", "flat"}, Mode: m}, 100*time.Millisecond)
			if st := procState(pid); st != "S" && st != "R" {
				t.Fatalf("%v round %d: the spinning process is %q after detach: %+v", m, r, st, sum)
			}
			if !sum.Detached || sum.Threads != 5 {
				t.Errorf("%v: detached %v, %d threads", m, sum.Detached, sum.Threads)
			}
			for _, p := range sum.Probes {
				if p.Hits == 0 {
					t.Errorf("%v: %s: no hit (%v)", m, p.Point, p.Mode)
				}
			}
			for _, fn := range []string{"work", "flat"} {
				if file, live := siteBytes(t, pid, fn); !bytes.Equal(file, live) {
					t.Errorf("%v: after detach %s is % x, the file has % x", m, fn, live, file)
				}
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	if st := procState(pid); st != "S" && st != "R" {
		t.Errorf("the spinning process is %q (a wrong result ends it with status 3)", st)
	}
}

// start runs the engine in the background until its probes are installed;
// done receives its summary.
func start(t *testing.T, opt Options) (*Engine, chan Summary) {
	t.Helper()
	e, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Summary, 1)
	go func() {
		s, err := e.Run()
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	waitInstalled(t, e)
	return e, done
}

// detachAfter runs the engine, detaches it d after its probes are
// installed and returns its summary.
func detachAfter(t *testing.T, opt Options, d time.Duration) Summary {
	t.Helper()
	e, done := start(t, opt)
	time.Sleep(d)
	e.Detach()
	return <-done
}

func waitInstalled(t *testing.T, e *Engine) {
	t.Helper()
	select {
	case <-e.Installed():
	case <-time.After(30 * time.Second):
		t.Fatal("the probes were not installed within 30 s")
	}
}

func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return s[i+2 : i+3]
}

// TestKboostKilled: SIGKILL of the tracing process takes the tree it
// started with it (PTRACE_O_EXITKILL), so no tracee runs on with int3s and
// no tracer.
func TestKboostKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), envHelper+"="+pidFile, "KBOOST_PTPROBE_TARGET="+target(t))
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for i := 0; i < 200 && pid == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		h.Process.Kill()
		h.Wait()
		t.Fatal("the traced sleeper never started")
	}
	time.Sleep(100 * time.Millisecond)
	h.Process.Signal(syscall.SIGKILL)
	h.Wait()
	for i := 0; i < 100; i++ {
		if st := procState(pid); st == "gone" || st == "Z" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("tracee %d still runs after its tracer was killed", pid)
}

// TestThreadedRuns repeats the four-thread case in every mode: every run's
// output is the untraced one and every count exact, with no hung or
// corrupted tracee. KBOOST_TRACE_RUNS sets the number of runs per mode
// (default 10; the bar is 1,000).
func TestThreadedRuns(t *testing.T) {
	runs := 10
	if v, err := strconv.Atoi(os.Getenv("KBOOST_TRACE_RUNS")); err == nil && v > 0 {
		runs = v
	}
	if testing.Short() {
		runs = 2
	}
	const n, threads = 200, 4
	want, _ := native(t, "calls", strconv.Itoa(n), strconv.Itoa(threads))
	bad := 0
	for _, m := range []Mode{Jump, Boost, SingleStep} {
		for r := 0; r < runs; r++ {
			sum, got := traced(t, m, []string{"work", "flat", "branchy"}, "calls", strconv.Itoa(n), strconv.Itoa(threads))
			ok := got == want && sum.Status == 0
			for _, p := range sum.Probes {
				ok = ok && p.Hits == n*threads
			}
			if !ok {
				bad++
				t.Errorf("%v run %d: output %q status %d, probes %+v", m, r, got, sum.Status, sum.Probes)
			}
			if (r+1)%100 == 0 {
				t.Logf("%v: %d runs, %d bad so far", m, r+1, bad)
			}
		}
	}
	t.Logf("%d runs per mode, %d bad", runs, bad)
}

// TestKernelUprobeAgrees (KBOOST_ROOT=1): the kernel's own uprobe on the
// same sites (perf uprobe PMU, every process mapping the file) counts the
// same calls untraced as kboost counts in each mode.
func TestKernelUprobeAgrees(t *testing.T) {
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 for the kernel's uprobes (root)")
	}
	n := calls(t)
	ts, err := Resolve(target(t), []string{"work", "flat", "branchy"})
	if err != nil {
		t.Fatal(err)
	}
	kernel := map[string]uint64{}
	for _, tg := range ts {
		ev, err := uprobe.OpenPMU(uprobe.Probe{Path: target(t), Offset: tg.FileOffset, Pid: -1})
		if err != nil {
			t.Fatal(err)
		}
		native(t, "calls", strconv.Itoa(n), "2")
		h, err := ev.Hits()
		ev.Close()
		if err != nil {
			t.Fatal(err)
		}
		kernel[tg.Point] = h
	}
	for _, m := range []Mode{SingleStep, Boost, Jump} {
		sum, _, hits := tracedHits(t, true, m, []string{"work", "flat", "branchy"}, "calls", strconv.Itoa(n), "2")
		recs := map[string]uint64{}
		for _, h := range hits {
			recs[h.Point]++
		}
		for _, r := range sum.Probes {
			if r.Hits != kernel[r.Point] || recs[r.Point] != kernel[r.Point] {
				t.Errorf("%v: %s (%v): kboost %d hits and %d records, the kernel's uprobe %d", m, r.Point, r.Mode, r.Hits, recs[r.Point], kernel[r.Point])
			}
		}
	}
}

// TestSignals: a probed tracee stops on SIGSTOP (group-stop, state T),
// resumes on SIGCONT and keeps hitting, and dies of SIGTERM as untraced.
func TestSignals(t *testing.T) {
	outPath := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, m := range []Mode{Boost, Jump} {
		_, done := start(t, Options{Argv: []string{target(t), "sleep", "0"}, Points: []string{"work"}, Mode: m, Stdio: [3]*os.File{nil, f, nil}})
		var pid int
		for i := 0; i < 500 && pid == 0; i++ {
			time.Sleep(10 * time.Millisecond)
			b, _ := os.ReadFile(outPath)
			lines := strings.Fields(string(b))
			if len(lines) > 0 {
				pid, _ = strconv.Atoi(lines[len(lines)-1])
			}
		}
		f.Truncate(0)
		f.Seek(0, 0)
		syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(200 * time.Millisecond)
		if st := procState(pid); st != "T" && st != "t" {
			t.Errorf("%v: after SIGSTOP the tracee is %q", m, st)
		}
		syscall.Kill(pid, syscall.SIGCONT)
		// A running boost tracee is in a trace stop ("t") at each hit: one
		// sample can land on one under load (3 of 40 runs did). A tracee
		// left in group-stop stays t or T for the whole 5 s.
		st := procState(pid)
		for end := time.Now().Add(5 * time.Second); st != "S" && st != "R" && time.Now().Before(end); st = procState(pid) {
			time.Sleep(5 * time.Millisecond)
		}
		if st != "S" && st != "R" {
			t.Errorf("%v: 5 s after SIGCONT the tracee is still %q", m, st)
		}
		syscall.Kill(pid, syscall.SIGTERM)
		select {
		case sum := <-done:
			if sum.Status != 128+15 || sum.Probes[0].Hits == 0 {
				t.Errorf("%v: status %d, %d hits", m, sum.Status, sum.Probes[0].Hits)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%v: the trace did not end after SIGTERM", m)
		}
	}
}

// TestDetachStartedTree: Detach (Ctrl-C) in the middle of a run kboost
// started releases it; it finishes untraced with its original code and
// prints what it prints untraced.
func TestDetachStartedTree(t *testing.T) {
	const n = 20000
	want, _ := native(t, "calls", strconv.Itoa(n), "2")
	for _, m := range []Mode{SingleStep, Boost, Jump} {
		outPath := filepath.Join(t.TempDir(), "stdout")
		f, err := os.Create(outPath)
		if err != nil {
			t.Fatal(err)
		}
		sum := detachAfter(t, Options{Argv: []string{target(t), "calls", strconv.Itoa(n), "2"}, Points: []string{"work", "flat", "branchy"}, Mode: m, Stdio: [3]*os.File{nil, f, nil}}, 50*time.Millisecond)
		f.Close()
		if m != Jump && !sum.Detached { // a jumped run may end before the detach
			t.Errorf("%v: the run ended before the detach (%d hits)", m, sum.Probes[0].Hits)
		}
		var got string
		for i := 0; i < 3000 && got == ""; i++ {
			b, _ := os.ReadFile(outPath)
			got = string(b)
			time.Sleep(10 * time.Millisecond)
		}
		if got != want {
			t.Errorf("%v (detached %v after %d hits of work): output %q, untraced %q", m, sum.Detached, sum.Probes[0].Hits, got, want)
		}
	}
}

// TestKboostKilledAttached: SIGKILL of a tracer attached with --pid in
// jump mode leaves the process running on its trampolines (no stop is
// needed), with correct results (its threads check each one).
func TestKboostKilledAttached(t *testing.T) {
	cmd := startTarget(t, "spin", "2")
	pid := cmd.Process.Pid
	ready := filepath.Join(t.TempDir(), "ready")
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), envHelper+"="+ready, "KBOOST_PTPROBE_TARGET="+target(t), "KBOOST_PTPROBE_ATTACH="+strconv.Itoa(pid))
	h.Stderr = os.Stderr
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1500; i++ {
		if b, _ := os.ReadFile(ready); strings.Contains(string(b), "installed") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	h.Process.Signal(syscall.SIGKILL)
	h.Wait()
	time.Sleep(300 * time.Millisecond)
	if st := procState(pid); st != "S" && st != "R" {
		t.Fatalf("the attached process is %q after its tracer was killed", st)
	}
	_, live := siteBytes(t, pid, "work")
	if live[0] != 0xe9 {
		t.Errorf("work starts with % x: the jump was not planted (the test checks nothing)", live[:5])
	}
}

// stressLine is what `target stress` prints.
var stressLine = regexp.MustCompile(`^\d+\ntotal -?\d+ work calls (\d+) \(clone child's (\d+), exec child's (\d+)\) stopper 0 clone \d+ exec 0 victim killed 9\n$`)

// TestStress is the correctness suite's threaded case, in every mode:
// eight threads calling the probed functions at once while queued signals
// reach running threads and threads stopped in probes, the process is
// stopped (and signalled while stopped) and continued by a fork child, a
// clone child without exec calls work, a fork child spinning in a probed
// function (flat) on two threads is SIGKILLed, and a fork child executes
// the binary, whose thread calls work and executes it again (probed again:
// exec from a thread). Every run's output
// is the untraced one, work's and branchy's counts are the calls made,
// and none hangs. Every other run records every hit of work and branchy
// (flat unprobed: the victim's spin would fill the ring): the records
// equal the counts, none dropped or lost. KBOOST_TRACE_RUNS sets the runs per mode
// (default 3; the bar is 1,000).
func TestStress(t *testing.T) {
	runs := 3
	if v, err := strconv.Atoi(os.Getenv("KBOOST_TRACE_RUNS")); err == nil && v > 0 {
		runs = v
	}
	if testing.Short() {
		runs = 1
	}
	const n, threads = 256, 8
	want, wst := native(t, "stress", strconv.Itoa(n), strconv.Itoa(threads))
	m := stressLine.FindStringSubmatch(want)
	if m == nil || wst != 0 {
		t.Fatalf("untraced stress printed %q (status %d)", want, wst)
	}
	calls, _ := strconv.Atoi(m[1])
	child, _ := strconv.Atoi(m[2])
	execChild, _ := strconv.Atoi(m[3])
	child += execChild
	bad := 0
	start := time.Now()
	for _, mode := range []Mode{Jump, Boost, SingleStep} {
		for r := 0; r < runs; r++ {
			record := r%2 == 1
			var sum Summary
			var got string
			var hits []HitRecord
			done := make(chan struct{})
			go func() {
				defer close(done)
				pts := []string{"work", "flat", "branchy"}
				if record { // the victim's spin in flat would fill the ring: its records are dropped
					pts = []string{"work", "branchy"}
				}
				sum, got, hits = tracedHits(t, record, mode, pts, "stress", strconv.Itoa(n), strconv.Itoa(threads))
			}()
			select {
			case <-done:
			case <-time.After(2 * time.Minute):
				t.Fatalf("%v run %d: the traced stress run hung:\n%s", mode, r, hangDump())
			}
			ok := got == want && sum.Status == 0 && sum.Processes >= 5
			per := map[string]uint64{}
			for _, h := range hits {
				per[h.Point]++
			}
			for _, p := range sum.Probes {
				switch p.Point {
				case "work":
					ok = ok && p.Hits == uint64(calls+child)
				case "branchy":
					ok = ok && p.Hits == uint64(threads*n+n) // and the exec child's "calls N 1"
				}
				if record && p.Point != "flat" {
					ok = ok && per[p.Point] == p.Hits && p.Records == p.Hits
				}
			}
			if record {
				ok = ok && sum.Dropped+sum.Lost == 0
			}
			if !ok {
				bad++
				t.Errorf("%v run %d (records %v): output %q status %d, %d processes, %d dropped %d lost, probes %+v; untraced %q, work calls %d+%d",
					mode, r, record, got, sum.Status, sum.Processes, sum.Dropped, sum.Lost, sum.Probes, want, calls, child)
			}
			if (r+1)%100 == 0 {
				t.Logf("%v: %d runs, %d bad so far (%v)", mode, r+1, bad, time.Since(start).Round(time.Second))
			}
		}
	}
	t.Logf("%d runs per mode, %d bad, %v", runs, bad, time.Since(start).Round(time.Second))
}
