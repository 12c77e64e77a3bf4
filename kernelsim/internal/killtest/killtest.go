//go:build linux

// Package killtest checks that a test helper process killed with SIGKILL
// leaves no tagged process (sandbox, emulator) and no temporary file behind:
// the tests of kernelsim and kernelsim/gdbserial share it.
package killtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/procstat"
)

// TaggedProcs lists live (non-zombie) processes whose command line holds tag.
func TaggedProcs(tag string) []string {
	var found []string
	for _, p := range procstat.All() {
		args, _ := procstat.Cmdline(p.Pid)
		if line := strings.Join(args, " "); !p.Zombie() && strings.Contains(line, tag) {
			found = append(found, fmt.Sprintf("%d: %s", p.Pid, line))
		}
	}
	return found
}

// Rounds starts the test helper run (a -test.run pattern of this
// binary) with envVar set to a fresh tag, waits for its READY line and for want
// tagged processes (what: "sandbox", "emulator"), SIGKILLs it after pause(round)
// and fails unless every tagged process is gone within 3 s and the helper's
// temporary directory ($TMPDIR) is empty; rounds times.
func Rounds(t *testing.T, rounds int, helper, envVar, tagPrefix string, want int, what string, pause func(round int) time.Duration) {
	t.Helper()
	for round := range rounds {
		tag := fmt.Sprintf("%s-%d-%d", tagPrefix, os.Getpid(), round)
		// Like /tmp, reachable by the emulator (it runs as nobody), which
		// t.TempDir's directories are not.
		tmp, err := os.MkdirTemp("", "kboost-killtest-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(tmp) })
		os.Chmod(tmp, 0o1777)
		cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.v")
		cmd.Env = append(os.Environ(), envVar+"="+tag, "TMPDIR="+tmp)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// A failed check must not leave the helper fuzzing on its own
		// (and its sandboxes with it).
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
		sc := bufio.NewScanner(out)
		ready := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ERROR") {
				t.Fatal(sc.Text())
			}
			if sc.Text() == "READY" {
				ready = true
				break
			}
		}
		if !ready {
			t.Fatal("helper did not start")
		}
		go func() {
			for sc.Scan() {
			}
		}()
		if n := len(TaggedProcs(tag)); n != want {
			t.Fatalf("round %d: %d %s processes before the kill, want %d", round, n, what, want)
		}
		time.Sleep(pause(round))
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		deadline := time.Now().Add(3 * time.Second)
		for {
			left := TaggedProcs(tag)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: %s processes survive their owner: %q", round, what, left)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("round %d: the killed %s's owner left %q in its temporary directory", round, what, names)
		}
	}
}
