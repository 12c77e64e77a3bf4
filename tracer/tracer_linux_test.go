//go:build linux && amd64

package tracer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/procstat"
	"golang.org/x/sys/unix"
)

type nopHandler struct{}

func (nopHandler) Enter(*Call) uintptr { return 0 }
func (nopHandler) Exit(*Call)          {}
func (nopHandler) Event(Event)         {}

// TestCreatorKilledAfterWait: a clone event whose creator is killed after
// wait4 reported it and before the tracer reads its event message (a
// thread that executes the binary at once kills its creator, the group
// leader, while the tracer is preempted right after wait4: a delay there
// makes it likely). The kernel then refuses PTRACE_GETEVENTMSG (the
// creator has a fatal signal pending); the trace must neither invent a
// thread for the failed read (it waited for that thread for ever) nor
// lose the new task, and must end with the program's own output and
// status. KBOOST_TRACE_RUNS sets the chain's length (default 40).
func TestCreatorKilledAfterWait(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("gcc: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "execthread")
	if out, err := exec.Command(gcc, "-O2", "-pthread", "-o", bin, "testdata/execthread.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	k := 40
	if v, err := strconv.Atoi(os.Getenv("KBOOST_TRACE_RUNS")); err == nil && v > 0 {
		k = v
	}
	if testing.Short() {
		k = 10
	}
	races, clones := 0, 0
	// Right after a new thread's first stop, the next wait4 is at once (the
	// creator's event is read while the thread runs to its exec).
	firstStop := false
	const pre = 300 * time.Microsecond
	afterWait = func(tid int, ws unix.WaitStatus) {
		firstStop = ws.Stopped() && int(ws)>>16 == eventStop
		if !ws.Stopped() || int(ws)>>16 != unix.PTRACE_EVENT_CLONE {
			return
		}
		clones++
		time.Sleep(3 * time.Millisecond) // preempted: the new thread runs on and executes
		if _, err := unix.PtraceGetEventMsg(tid); err != nil {
			races++
		}
	}
	// A busy tracer: once something is ready (waitid WNOWAIT), a while
	// passes before wait4, so the creator's clone event stop and the new
	// thread's first stop are both ready and wait4 reports the newer task
	// (the thread) first: it runs on, and then the creator's event is read.
	beforeWait = func() {
		if firstStop {
			return
		}
		var si unix.Siginfo
		unix.Waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WNOWAIT|unix.WALL, nil)
		time.Sleep(pre)
	}
	defer func() { afterWait, beforeWait = nil, nil }()
	outPath := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := New(Config{Argv: []string{bin, strconv.Itoa(k), "fork"}, NoSyscalls: true, Stdio: [3]*os.File{nil, f, nil}})
	if err != nil {
		t.Fatal(err)
	}
	type ran struct {
		res Result
		err error
	}
	done := make(chan ran, 1)
	go func() {
		res, err := tr.Run(nopHandler{})
		done <- ran{res, err}
	}()
	var r ran
	select {
	case r = <-done:
	case <-time.After(time.Duration(k) * time.Second):
		for _, pid := range procstat.Descendants(os.Getpid()) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		tr.Detach()
		<-done
		t.Fatalf("the trace of %d execs from a thread hung (%d of %d clone events had their creator killed after wait4)", k, races, clones)
	}
	out, _ := os.ReadFile(outPath)
	t.Logf("%d execs from a thread: %d clone events, %d with the creator killed before its event was read; status %d, %d threads, %d processes",
		k, clones, races, r.res.Status, r.res.Threads, r.res.Processes)
	if r.err != nil || r.res.Status != 0 || string(out) != "done 0\n" {
		t.Errorf("status %d, error %v, output %q; want 0 and \"done 0\\n\"", r.res.Status, r.err, out)
	}
	if r.res.Processes != 2 {
		t.Errorf("%d processes seen, want 2 (a thread's exec keeps its process)", r.res.Processes)
	}
	if races == 0 {
		t.Errorf("no clone event had its creator killed before it was read: the test did not exercise the race (raise KBOOST_TRACE_RUNS)")
	}
}
