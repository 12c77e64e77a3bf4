//go:build linux && amd64

package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// These tests trace real processes (ptrace): KBOOST_ROOT=1.
func needTracing(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 to trace real processes with ptrace")
	}
}

var traceeBin string

// TestMain removes the tracee built once for all tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if traceeBin != "" {
		os.RemoveAll(filepath.Dir(traceeBin))
	}
	os.Exit(code)
}

// tracee builds testdata/tracee.c once (gcc -m64, frame pointers kept).
func tracee(t *testing.T) string {
	t.Helper()
	if traceeBin != "" {
		return traceeBin
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	dir, err := os.MkdirTemp("", "kboost-tracee-")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tracee")
	if out, err := exec.Command(gcc, "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", bin, "testdata/tracee.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	traceeBin = bin
	return bin
}

// native runs the tracee untraced and returns what it wrote and its status.
func native(t *testing.T, mode string) (string, int) {
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command(tracee(t), mode, out)
	err := cmd.Run()
	status := 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
		if ws, ok := ee.Sys().(interface{ Signaled() bool }); ok && ws.Signaled() {
			status = 128 + 9
		}
	} else if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	return string(b), status
}

type run struct {
	out     string
	sum     Summary
	records []Record
	events  []EventRecord
}

func monitored(t *testing.T, mode string, opt Options, during func(m *Monitor, out string)) run {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var rec bytes.Buffer
	opt.Argv = []string{tracee(t), mode, out}
	opt.JSON = true
	opt.Out = &rec
	m, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	if during != nil {
		go during(m, out)
	}
	done := make(chan struct{})
	var sum Summary
	go func() {
		sum, err = m.Run()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: tracee hung under the monitor", mode)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	r := run{out: string(b), sum: sum}
	sc := bufio.NewScanner(&rec)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte(`{"event"`)):
			var e EventRecord
			json.Unmarshal(line, &e)
			r.events = append(r.events, e)
		case bytes.HasPrefix(line, []byte(`{"summary"`)):
		default:
			var c Record
			if err := json.Unmarshal(line, &c); err != nil {
				t.Fatalf("bad record %s: %v", line, err)
			}
			r.records = append(r.records, c)
		}
	}
	return r
}

// TestTraceesBehaveAsNative: each mode writes the same output and exits with
// the same status with and without the monitor, in both stop modes.
func TestTraceesBehaveAsNative(t *testing.T) {
	needTracing(t)
	for _, mode := range []string{"threads", "fork", "vfork", "clone", "execthread", "signals", "sigstop", "killed", "restart", "sigrestart", "mtsignals"} {
		t.Run(mode, func(t *testing.T) { behavesAsNative(t, mode) })
	}
}

// behavesAsNative runs mode natively, then under the monitor in each stop
// mode (subtests: -run 'TestTraceesBehaveAsNative/threads/one-stop=true'
// with -count N repeats one).
func behavesAsNative(t *testing.T, mode string) {
	want, wantStatus := native(t, mode)
	for _, opt := range []Options{{}, {OneStop: true}, {NoSeccomp: true}, {OneStop: true, Poll: 200 * time.Microsecond}} {
		name := fmt.Sprintf("seccomp=%v/one-stop=%v", !opt.NoSeccomp, opt.OneStop)
		if opt.Poll != 0 {
			name += "/poll=" + opt.Poll.String()
		}
		t.Run(name, func(t *testing.T) {
			r := monitored(t, mode, opt, nil)
			if r.out != want {
				t.Errorf("output %q, native %q", r.out, want)
			}
			if r.sum.Status != wantStatus {
				t.Errorf("status %d, native %d", r.sum.Status, wantStatus)
			}
			if r.sum.Calls == 0 {
				t.Errorf("no calls recorded")
			}
			switch mode {
			case "execthread":
				n := 0
				for _, c := range r.records {
					if c.Syscall == "execve" && c.Ret == "0" {
						n++
					}
				}
				if n != 2 {
					t.Errorf("%d successful execve records, want 2 (the start and the thread's)", n)
				}
			case "threads", "fork", "vfork", "clone":
				tids := map[int]bool{}
				for _, c := range r.records {
					tids[c.Tid] = true
				}
				if len(tids) < 2 {
					t.Errorf("calls of %d threads recorded, want the children's too", len(tids))
				}
			}
		})
	}
}

// TestOneStopResults: the results x86-64 calls return through kboost's stub
// (one stop per call) are the ones the kernel reports at their exit stops
// (PTRACE_GET_SYSCALL_INFO, the default), call by call per thread, for
// the tracees that create threads and processes, take signals and have
// calls restarted (SA_RESTART, EINTR, restart_syscall). Results that are
// addresses, ids or times differ between any two runs and are compared
// as kinds only.
func TestOneStopResults(t *testing.T) {
	needTracing(t)
	varying := map[string]bool{"mmap": true, "brk": true, "clone": true, "clone3": true, "fork": true, "vfork": true,
		"getpid": true, "gettid": true, "getppid": true, "set_tid_address": true, "wait4": true, "rseq": true,
		"getrandom": true, "clock_gettime": true, "futex": true}
	for _, mode := range []string{"workload", "restart", "sigrestart", "signals", "threads", "fork", "vfork", "sigstop"} {
		seqs := func(opt Options) [][]string {
			r := monitored(t, mode, opt, nil)
			per := map[int][]string{}
			resumed := map[int]string{}
			var tids []int
			for _, c := range r.records {
				// futex waits depend on timing; rt_sigreturn returns a
				// register; whether a wait or sleep is interrupted by a
				// SIGCHLD (and resumed by restart_syscall) depends on when
				// the child ends. The restart mode's SA_RESTART and EINTR
				// reads do not depend on timing and stay.
				name := c.Syscall
				if name == "restart_syscall" {
					name = resumed[c.Tid]
				}
				if c.Errno == "ERESTART_RESTARTBLOCK" { // restart_syscall resumes it
					resumed[c.Tid] = name
				}
				if name == "futex" || name == "rt_sigreturn" || c.Errno == "ERESTART_RESTARTBLOCK" || c.Errno == "ERESTARTSYS" && name == "wait4" {
					continue
				}
				ret := c.Ret
				if varying[name] && c.Errno == "" || (mode == "threads" || mode == "workload") && name == "openat" {
					ret = "*" // threads open at once: which gets which fd varies
				}
				if per[c.Tid] == nil {
					tids = append(tids, c.Tid)
				}
				per[c.Tid] = append(per[c.Tid], name+"="+ret)
			}
			sort.Slice(tids, func(i, j int) bool { return strings.Join(per[tids[i]], " ") < strings.Join(per[tids[j]], " ") })
			var out [][]string
			for _, tid := range tids {
				out = append(out, per[tid])
			}
			return out
		}
		one, two := seqs(Options{OneStop: true}), seqs(Options{})
		if d := cmp.Diff(two, one); d != "" {
			t.Errorf("%s: per-thread calls with one stop per call (+) and with exit stops (-):\n%s", mode, d)
		}
	}
}

// TestDenyEPERM: a policy-denied open fails with EPERM, the next one works.
func TestDenyEPERM(t *testing.T) {
	needTracing(t)
	p, err := ParsePolicy(strings.NewReader("deny openat path=/etc/hostname\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := monitored(t, "deny", Options{Policy: p}, nil)
	if want := "open=-1 errno=1\nafter open ok=1\n"; r.out != want {
		t.Errorf("output %q, want %q", r.out, want)
	}
	denied := 0
	for _, c := range r.records {
		if c.Denied {
			denied++
			if c.Errno != "EPERM" || c.Syscall != "openat" {
				t.Errorf("denied record %+v", c)
			}
		}
	}
	if denied != 1 || r.sum.Denied != 1 {
		t.Errorf("%d denied records, summary %d; want 1", denied, r.sum.Denied)
	}
}

// TestSyscallsSelected: --syscalls records only the named calls.
func TestSyscallsSelected(t *testing.T) {
	needTracing(t)
	r := monitored(t, "workload", Options{Syscalls: []string{"openat"}}, nil)
	if len(r.records) == 0 {
		t.Fatal("no records")
	}
	for _, c := range r.records {
		if c.Syscall != "openat" {
			t.Errorf("unselected call recorded: %s", c.Syscall)
		}
	}
	found := false
	for _, c := range r.records {
		for _, a := range c.Args {
			found = found || a.Path == "/etc/passwd"
		}
	}
	if !found {
		t.Error("the child's openat of /etc/passwd was not recorded with its path")
	}
}

// TestDetach: released mid-run, the tracee finishes as it would have, and is
// no longer traced (a real detach without seccomp; served quietly with it).
func TestDetach(t *testing.T) {
	needTracing(t)
	want, _ := native(t, "ticks")
	for _, seccomp := range []bool{false, true} {
		r := monitored(t, "ticks", Options{NoSeccomp: !seccomp}, func(m *Monitor, out string) {
			// Release once the tracee is under way (its first ticks written).
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				if b, _ := os.ReadFile(out); bytes.Contains(b, []byte("tick 2\n")) {
					break
				}
			}
			m.Detach()
		})
		if !strings.HasPrefix(want, r.out) || r.out == "" {
			t.Fatalf("seccomp=%v: output at release %q", seccomp, r.out)
		}
		if !seccomp {
			if !r.sum.Detached {
				t.Fatal("not detached")
			}
			// The tracee runs on untraced: wait for its last line.
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) && !strings.HasSuffix(r.out, "tick 39\n") {
				time.Sleep(20 * time.Millisecond)
				r.out = readOut(t, r)
			}
		}
		if r.out != want {
			t.Errorf("seccomp=%v: output %q, native %q", seccomp, r.out, want)
		}
	}
}

func readOut(t *testing.T, r run) string {
	// The out file's path is in the first execve's arguments.
	for _, c := range r.records {
		if c.Syscall == "openat" {
			for _, a := range c.Args {
				if strings.HasSuffix(a.Path, "/out") {
					b, _ := os.ReadFile(a.Path)
					return string(b)
				}
			}
		}
	}
	return r.out
}

var straceLine = regexp.MustCompile(`^(\d+)\s+([a-z_0-9]+)\(`)

// TestSameCallsAsStrace: on a small threaded, forking workload the monitor
// sees the calls `strace -f` sees, in the same order per thread.
func TestSameCallsAsStrace(t *testing.T) {
	needTracing(t)
	seqs := straceSeqs(t, "", tracee(t), "workload", filepath.Join(t.TempDir(), "o"))
	r := monitored(t, "workload", Options{}, nil)
	ours := map[string][]string{}
	for _, c := range r.records {
		k := strconv.Itoa(c.Tid)
		ours[k] = append(ours[k], c.Syscall)
	}
	a, w := normSeqs(ours), normSeqs(seqs)
	if len(a) != len(w) {
		t.Fatalf("%d threads traced, strace %d:\nours:   %q\nstrace: %q", len(a), len(w), a, w)
	}
	for i := range a {
		if a[i] != w[i] {
			t.Errorf("thread sequence differs:\nours:   %s\nstrace: %s", a[i], w[i])
		}
	}
}

// normSeqs turns per-thread call sequences into sorted strings. Whether and
// how often a thread waits on a futex (pthread_join, stdio locks) depends on
// timing, and strace is slower: futex calls are left out. rt_sigreturn
// and restart_syscall, whose place depends on when a signal (make's
// SIGCHLD) arrives, are left out, and so is getrandom, which gcc's temporary
// file names call or not from one run to the next (untraced too).
func normSeqs(m map[string][]string) []string {
	var out []string
	for _, s := range m {
		var seq []string
		for _, c := range s {
			if c == "futex" || c == "rt_sigreturn" || c == "restart_syscall" || c == "getrandom" {
				continue
			}
			seq = append(seq, c)
		}
		out = append(out, strings.Join(seq, " "))
	}
	sort.Strings(out)
	return out
}

// straceSeqs runs argv in dir under strace -f and returns each thread's calls.
func straceSeqs(t *testing.T, dir string, argv ...string) map[string][]string {
	t.Helper()
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("strace: %v (scripts/setup.sh installs it)", err)
	}
	log := filepath.Join(t.TempDir(), "strace.log")
	cmd := exec.Command(st, append([]string{"-f", "-qq", "-o", log}, argv...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if m := straceLine.FindStringSubmatch(l); m != nil {
			seqs[m[1]] = append(seqs[m[1]], m[2])
		}
	}
	return seqs
}

// TestSameCallsAsStraceMake: on a make build of three C files (make, gcc,
// cc1, as, ar) the monitor sees the calls strace -f sees, in the same order
// per thread, with one stop per call, with exit stops, and without its
// seccomp filter.
func TestSameCallsAsStraceMake(t *testing.T) {
	needTracing(t)
	dir := t.TempDir()
	for i := 0; i < 3; i++ {
		src := fmt.Sprintf("#include <stdio.h>\nint f%d(int x) { char b[32]; return snprintf(b, sizeof b, \"%%d\", x * %d); }\n", i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk := "OBJS := f0.o f1.o f2.o\nlib.a: $(OBJS)\n\tar rcs $@ $^\n%.o: %.c\n\tgcc -O1 -c -o $@ $<\nclean:\n\trm -f *.o lib.a\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	clean := func() {
		if out, err := exec.Command("make", "-s", "-C", dir, "clean").CombinedOutput(); err != nil {
			t.Fatalf("make clean: %v\n%s", err, out)
		}
	}
	clean()
	// Without address-space randomization (setarch -R, under both): how
	// often cc1 calls brk depends on where its heap starts.
	argv := []string{"setarch", "-R", "make", "-s", "-C", dir}
	want := normSeqs(straceSeqs(t, "", argv...))
	// kboost monitor's default (one stop per call), exit stops, and every
	// call stopping without the filter.
	for _, opt := range []Options{{OneStop: true}, {}, {NoSeccomp: true}} {
		seccomp := fmt.Sprintf("%v, one stop %v", !opt.NoSeccomp, opt.OneStop)
		clean()
		var rec bytes.Buffer
		opt.Argv, opt.JSON, opt.Out = argv, true, &rec
		m, err := New(opt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(); err != nil {
			t.Fatal(err)
		}
		ours := map[string][]string{}
		sc := bufio.NewScanner(&rec)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var c Record
			if json.Unmarshal(sc.Bytes(), &c) == nil && c.Syscall != "" {
				ours[strconv.Itoa(c.Tid)] = append(ours[strconv.Itoa(c.Tid)], c.Syscall)
			}
		}
		got := normSeqs(ours)
		if len(got) != len(want) {
			t.Fatalf("seccomp %v: %d threads traced, strace %d", seccomp, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("seccomp %v: a thread's sequence differs:\nours:   %s\nstrace: %s", seccomp, got[i], want[i])
			}
		}
	}
}

// TestI386Tracee: a 32-bit tracee's calls are named from the i386 table
// (open is 5 there, fstat on x86-64), its path read, and a denial works
// through the i386 register layout, in both stop modes.
func TestI386Tracee(t *testing.T) {
	needTracing(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "i386")
	if out, err := exec.Command("gcc", "-m32", "-nostdlib", "-static", "-o", bin, "testdata/i386.S").CombinedOutput(); err != nil {
		t.Fatalf("gcc -m32: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin).Output(); err != nil || string(out) != "ok\n" {
		t.Skipf("native i386 run: %q %v: this kernel does not run 32-bit code", out, err)
	}
	deny, _ := ParsePolicy(strings.NewReader("deny open path=/etc/\n"))
	for _, c := range []struct {
		policy *Policy
		want   string
		denied int
	}{{nil, "ok\n", 0}, {deny, "no\n", 1}} {
		for _, seccomp := range []bool{true, false} {
			stdout := filepath.Join(dir, "stdout")
			f, err := os.Create(stdout)
			if err != nil {
				t.Fatal(err)
			}
			var rec bytes.Buffer
			m, err := New(Options{Argv: []string{bin}, JSON: true, Out: &rec, Policy: c.policy, NoSeccomp: !seccomp, Stdio: [3]*os.File{nil, f, nil}})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := m.Run()
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(stdout)
			if string(got) != c.want {
				t.Errorf("seccomp=%v policy=%v: tracee wrote %q, want %q", seccomp, c.policy != nil, got, c.want)
			}
			if !strings.Contains(rec.String(), `"arch":"i386","syscall":"open","nr":5`) || !strings.Contains(rec.String(), `"path":"/etc/hostname"`) {
				t.Errorf("seccomp=%v: no i386 open record of /etc/hostname:\n%s", seccomp, rec.String())
			}
			if sum.Denied != c.denied {
				t.Errorf("seccomp=%v: %d denied, want %d", seccomp, sum.Denied, c.denied)
			}
		}
	}
}

// TestBacktraceSymbols: the openat made by inner() (called from outer())
// has outer in its backtrace, inside outer's extent as nm gives it.
func TestBacktraceSymbols(t *testing.T) {
	needTracing(t)
	bin := tracee(t)
	nm, err := exec.Command("nm", "-S", bin).Output()
	if err != nil {
		t.Fatalf("nm: %v (binutils: scripts/setup.sh)", err)
	}
	size := map[string]uint64{}
	for _, l := range strings.Split(string(nm), "\n") {
		if f := strings.Fields(l); len(f) == 4 {
			size[f[3]], _ = strconv.ParseUint(f[1], 16, 64)
		}
	}
	if size["outer"] == 0 || size["inner"] == 0 {
		t.Fatal("nm lists no outer or inner")
	}
	r := monitored(t, "nested", Options{Syscalls: []string{"openat"}, Backtrace: true}, nil)
	for _, c := range r.records {
		if len(c.Args) < 2 || c.Args[1].Path != "/etc/hostname" {
			continue
		}
		// inner (the syscall site), then its caller outer, then main.
		if len(c.Backtrace) < 3 {
			t.Fatalf("backtrace %+v: want inner, outer, main...", c.Backtrace)
		}
		for i, want := range []string{"inner", "outer", "main"} {
			f := c.Backtrace[i]
			if f.Sym != want || f.File != bin || f.Off == 0 || (size[want] != 0 && f.Off >= size[want]) {
				t.Errorf("frame %d %+v: want %s in %s, 0 < off < %d (nm)", i, f, want, bin, size[want])
			}
		}
		return
	}
	t.Fatalf("no openat of /etc/hostname recorded: %+v", r.records)
}

// TestSnapshotWalks: backtraces unwound after the thread was resumed, from
// the stack snapshot taken at its stop, are the ones a walk at the stop
// gives, call by call per thread, for tracees with threads, processes,
// signal handlers, restarted calls and a handler on an alternate signal
// stack (whose walks are made at the stop: its stack is not the thread's).
// Addresses move between runs (ASLR): frames compare by symbol, offset
// and file.
func TestSnapshotWalks(t *testing.T) {
	needTracing(t)
	seqs := func(mode string, sync bool) (map[int][]string, *backtracer) {
		got := make(chan *Monitor, 1)
		r := monitored(t, mode, Options{Backtrace: true, syncWalks: sync}, func(m *Monitor, _ string) { got <- m })
		m := <-got
		per := map[int][]string{}
		for _, c := range r.records {
			switch {
			case c.Syscall == "futex", c.Syscall == "restart_syscall", c.Syscall == "rt_sigreturn", c.Syscall == "clock_nanosleep",
				strings.HasPrefix(c.Errno, "ERESTART"):
				continue // timing: whether a wait blocks, whether a sleep is interrupted (and resumed) by a child's SIGCHLD
			}
			var fr []string
			for _, f := range c.Backtrace {
				fr = append(fr, fmt.Sprintf("%s+0x%x(%s)", f.Sym, f.Off, f.File))
			}
			per[c.Tid] = append(per[c.Tid], c.Syscall+" <- "+strings.Join(fr, " "))
		}
		return per, m.bt
	}
	// Per-thread sequences, in an order that does not depend on tids.
	sorted := func(per map[int][]string) [][]string {
		var out [][]string
		for _, s := range per {
			out = append(out, s)
		}
		sort.Slice(out, func(i, j int) bool { return strings.Join(out[i], "\n") < strings.Join(out[j], "\n") })
		return out
	}
	for _, mode := range []string{"workload", "signals", "restart", "sigrestart", "fork", "altstack"} {
		at, sbt := seqs(mode, true)
		later, lbt := seqs(mode, false)
		if sbt.snaps != 0 {
			t.Errorf("%s: %d snapshots with every walk made at its stop", mode, sbt.snaps)
		}
		if lbt.snaps == 0 {
			t.Errorf("%s: no walk was unwound from a snapshot", mode)
		}
		if d := cmp.Diff(sorted(at), sorted(later)); d != "" {
			t.Errorf("%s: backtraces from snapshots (+) and at the stop (-):\n%s", mode, d)
		}
		t.Logf("%s: %d of the walks from snapshots, %d outran theirs", mode, lbt.snaps, lbt.misses)
		if mode != "altstack" {
			continue
		}
		// The handler's call: the handler, then the signal frame's
		// interrupted code (raise, in the C library), then main.
		n := 0
		for _, s := range later {
			for _, c := range s {
				if strings.HasPrefix(c, "getppid <- ") && strings.Contains(c, "on_usr2_onstack+") {
					n++
					if !strings.Contains(c, " main+") {
						t.Errorf("altstack: %s: no main frame past the signal frame", c)
					}
				}
			}
		}
		if n != 3 {
			t.Errorf("altstack: %d getppid calls from the handler recorded, want 3", n)
		}
	}
}

// TestDenyByCaller: a caller= rule denies the openat made under outer()
// (found on the stack by frame pointers) and only that one.
func TestDenyByCaller(t *testing.T) {
	needTracing(t)
	p, err := ParsePolicy(strings.NewReader("deny openat caller=outer\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := monitored(t, "nested", Options{Policy: p}, nil)
	if want := "nested ok=0\n"; r.out != want {
		t.Errorf("output %q, want %q", r.out, want)
	}
	if r.sum.Denied != 1 {
		t.Errorf("%d denied, want 1 (the openat under outer; the others are libc's and the loader's)", r.sum.Denied)
	}
}

// TestExecMaps: with ExecMaps (and the backtracer's own mapping stops) the
// mmap and mprotect calls recorded are exactly those strace -f shows with
// PROT_EXEC, thread by thread; the others never stop.
func TestExecMaps(t *testing.T) {
	needTracing(t)
	st, err := exec.LookPath("strace")
	if err != nil {
		t.Fatalf("strace: %v (scripts/setup.sh installs it)", err)
	}
	log := filepath.Join(t.TempDir(), "strace.log")
	if out, err := exec.Command(st, "-f", "-qq", "-e", "trace=mmap,mprotect", "-o", log, tracee(t), "workload", filepath.Join(t.TempDir(), "o")).CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	all := 0
	for _, l := range strings.Split(string(b), "\n") {
		if m := straceLine.FindStringSubmatch(l); m != nil {
			all++
			if strings.Contains(l, "PROT_EXEC") {
				want = append(want, m[2])
			}
		}
	}
	r := monitored(t, "workload", Options{Syscalls: []string{"mmap", "mprotect"}, ExecMaps: true, Backtrace: true}, nil)
	var got []string
	for _, c := range r.records {
		if len(c.Args) < 3 || !strings.Contains(c.Args[2].Text, "PROT_EXEC") {
			t.Errorf("recorded %s without PROT_EXEC: %+v", c.Syscall, c.Args)
		}
		got = append(got, c.Syscall)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || len(want) == 0 || len(want) == all {
		t.Errorf("recorded %q; strace's calls with PROT_EXEC %q (of %d mmap and mprotect calls)", got, want, all)
	}
}
