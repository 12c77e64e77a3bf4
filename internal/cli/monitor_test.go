package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMonitorUsage: each calling mistake is one line naming the fix, exit 2.
func TestMonitorUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.policy")
	os.WriteFile(bad, []byte("permit openat\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"monitor"}, "either --pid P or -- CMD"},
		{[]string{"monitor", "--pid", "1", "--", "true"}, "either --pid P or -- CMD"},
		{[]string{"monitor", "--syscalls", "opne", "--", "true"}, `unknown system call "opne"`},
		{[]string{"monitor", "--policy-file", bad, "--", "true"}, "allow|deny SYSCALL"},
		{[]string{"monitor", "--policy-file", filepath.Join(dir, "none"), "--", "true"}, "no such file"},
		{[]string{"monitor", "--pin-cpu", "-1", "--", "true"}, "--pin-cpu -1: a CPU number is 0 or more"},
		{[]string{"monitor", "--pin-cpu", "0", "--pid", "1"}, "--pin-cpu needs -- CMD"},
		{[]string{"monitor", "--pin-cpu", "x", "--", "true"}, `invalid argument "x" for "--pin-cpu"`},
	} {
		_, stderr, code := run(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// TestMonitorCPUOutOfMask: a CPU outside kboost's affinity mask (the
// kernel's Cpus_allowed_list, read here) is a usage error naming the CPUs
// kboost may use, and nothing starts.
func TestMonitorCPUOutOfMask(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the tracer runs on linux/amd64")
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var allowed string
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			allowed = strings.TrimSpace(v)
		}
	}
	marker := filepath.Join(t.TempDir(), "ran")
	_, stderr, code := run(t, "monitor", "--pin-cpu", "4095", "--", "touch", marker)
	if want := "may run on CPUs " + allowed + " "; code != 2 || !strings.Contains(stderr, want) || strings.Count(stderr, "\n") != 1 {
		t.Errorf("--pin-cpu 4095: exit %d, stderr %q; want 2 and one line with %q", code, stderr, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("--pin-cpu 4095: the command ran")
	}
}

// TestMonitorSIGINTDetaches: SIGINT to kboost attached with --pid releases
// the tree, which finishes on its own; kboost exits 130.
func TestMonitorSIGINTDetaches(t *testing.T) {
	if os.Getenv("KBOOST_ROOT") != "1" || runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("set KBOOST_ROOT=1 (linux/amd64) to trace a real process")
	}
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	tracee := exec.Command("sh", "-c", "for i in $(seq 40); do sleep 0.05; done; echo finished > "+done)
	if err := tracee.Start(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rec")
	codec := make(chan int, 1)
	go func() {
		_, _, code := run(t, "monitor", "--pid", itoa(tracee.Process.Pid), "--out", out)
		codec <- code
	}()
	// Signal once kboost traces the shell (its SIGINT handler is set up
	// right after the attach).
	status := "/proc/" + itoa(tracee.Process.Pid) + "/status"
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(status); strings.Contains(string(b), "TracerPid:\t") && !strings.Contains(string(b), "TracerPid:\t0\n") {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // a loaded machine may take a while from the attach to signal.Notify
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case code := <-codec:
		if code != 130 {
			t.Errorf("kboost exit %d, want 130", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("kboost did not stop on SIGINT")
	}
	if err := tracee.Wait(); err != nil {
		t.Errorf("tracee after release: %v", err)
	}
	if b, _ := os.ReadFile(done); string(b) != "finished\n" {
		t.Errorf("tracee did not finish after release: %q", b)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
