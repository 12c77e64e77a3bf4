package procstat

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The kernel's own line for a child with a hostile name: spaces and
// parentheses in the command must not shift the fields.
func TestReadChild(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	dir := t.TempDir()
	name := dir + "/a) b (c"
	if err := os.Symlink("/bin/sleep", name); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	time.Sleep(100 * time.Millisecond)
	s, err := Read(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if s.Pid != cmd.Process.Pid || s.PPid != os.Getpid() || s.State != 'S' || s.Zombie() {
		t.Errorf("child stat %+v: want pid %d, parent %d, sleeping", s, cmd.Process.Pid, os.Getpid())
	}
	cmd.Process.Kill()
	for i := 0; i < 100; i++ {
		if s, _ = Read(cmd.Process.Pid); s.Zombie() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !s.Zombie() {
		t.Errorf("killed, unreaped child: state %q, want Z", s.State)
	}
	found := false
	for _, p := range All() {
		found = found || p.Pid == cmd.Process.Pid
	}
	if !found {
		t.Error("All() misses the child")
	}
}

// The CPU time of a busy self matches getrusage's within two ticks.
func TestReadCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
	}
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	s, err := Read(os.Getpid())
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		t.Fatal(err)
	}
	cpu := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	if lo, hi := cpu(before)-20*time.Millisecond, cpu(after)+20*time.Millisecond; s.CPU < lo || s.CPU > hi || s.CPU == 0 {
		t.Errorf("CPU %v from /proc, getrusage %v..%v", s.CPU, cpu(before), cpu(after))
	}
}

func FuzzParse(f *testing.F) {
	f.Add("1234 (a) b (c) S 1 1234 1234 0 -1 4194304 100 0 0 0 7 3 0 0 20 0 1 0 100 1000 10")
	f.Add("1 (x")
	f.Fuzz(func(t *testing.T, line string) {
		s, err := Parse(line)
		if err != nil && err != ErrFormat {
			t.Fatalf("error %v is not ErrFormat", err)
		}
		if err == nil && s.State == 0 {
			t.Fatal("parsed without a state")
		}
	})
}
