//go:build linux && (amd64 || 386 || arm64 || arm)

package tracer

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpusAllowed is the kernel's Cpus_allowed_list of a task (/proc/PATH/status).
func cpusAllowed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", path, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("/proc/%s/status has no Cpus_allowed_list", path)
	return ""
}

// TestPinCPU: with Pin, the kernel reports the started tree and exactly one
// of kboost's threads (the tracer's) on that CPU alone; released, the tree
// has kboost's original mask back; a CPU kboost may not use is ErrCPU.
func TestPinCPU(t *testing.T) {
	var mine unix.CPUSet
	if err := unix.SchedGetaffinity(0, &mine); err != nil {
		t.Fatal(err)
	}
	orig := cpusAllowed(t, "thread-self")
	cpu := -1
	for i := 0; i < 8*int(unsafeSizeofCPUSet); i++ {
		if mine.IsSet(i) {
			cpu = i // the last one kboost may use
		}
	}
	want := strconv.Itoa(cpu)
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := New(Config{Argv: []string{"/bin/sh", "-c", "grep ^Cpus_allowed_list: /proc/self/status; nproc; echo ready; exec sleep 20"},
		NoSyscalls: true, Pin: true, CPU: cpu, Stdio: [3]*os.File{nil, f, nil}})
	if err != nil {
		t.Fatal(err)
	}
	root := tr.root
	defer unix.Kill(root, unix.SIGKILL)
	done := make(chan error, 1)
	go func() { _, err := tr.Run(nopHandler{}); done <- err }()
	deadline := time.Now().Add(10 * time.Second)
	var printed []byte
	for !strings.Contains(string(printed), "ready") {
		if time.Now().After(deadline) {
			tr.Detach()
			t.Fatalf("the tracee printed %q in 10 s", printed)
		}
		time.Sleep(10 * time.Millisecond)
		printed, _ = os.ReadFile(out)
	}
	if got := "Cpus_allowed_list:\t" + want + "\n1\nready\n"; string(printed) != got {
		t.Errorf("the tracee printed %q, want %q", printed, got)
	}
	time.Sleep(50 * time.Millisecond) // sh has executed sleep
	if got := cpusAllowed(t, strconv.Itoa(root)); got != want {
		t.Errorf("traced sleep %d: Cpus_allowed_list %s, want %s", root, got, want)
	}
	if orig != want { // with one CPU allowed every thread is on it alone
		tasks, _ := os.ReadDir("/proc/self/task")
		var pinned []string
		for _, d := range tasks {
			if cpusAllowed(t, "self/task/"+d.Name()) == want {
				pinned = append(pinned, d.Name())
			}
		}
		if len(pinned) != 1 {
			t.Errorf("kboost's threads on CPU %s alone: %v, want the tracer's only", want, pinned)
		}
	}
	tr.Detach()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := cpusAllowed(t, strconv.Itoa(root)); got != orig {
		t.Errorf("released sleep %d: Cpus_allowed_list %s, want kboost's %s back", root, got, orig)
	}

	if _, err := New(Config{Argv: []string{"/bin/true"}, Pin: true, CPU: 8 * int(unsafeSizeofCPUSet)}); !errors.Is(err, ErrCPU) {
		t.Errorf("CPU %d: error %v, want ErrCPU", 8*int(unsafeSizeofCPUSet), err)
	}
	if _, err := New(Config{Pid: os.Getpid(), Pin: true, CPU: cpu}); !errors.Is(err, ErrCPU) {
		t.Errorf("Pin with Pid: error %v, want ErrCPU", err)
	}
}
