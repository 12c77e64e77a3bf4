//go:build linux && amd64

package kernelsim

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperFuzzLoop is not a test: TestNoStraySandbox runs it in a child
// process, which fuzzes both sandboxes with random bytes until it is killed.
func TestHelperFuzzLoop(t *testing.T) {
	tag := os.Getenv("KBOOST_SANDBOX_HELPER")
	if tag == "" {
		t.Skip("helper process for TestNoStraySandbox")
	}
	var ss []*Sandbox
	for _, a := range []*Arch{X86_64, I386} {
		s, err := NewWithOptions(a, Options{Tag: tag})
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
		ss = append(ss, s)
	}
	fmt.Println("READY")
	rng := rand.New(rand.NewPCG(1, 2))
	cases := make([]Case, 64)
	res := make([]Result, 64)
	for {
		for _, s := range ss {
			for i := range cases {
				code := make([]byte, 1+rng.IntN(15))
				for j := range code {
					code[j] = byte(rng.Uint32())
				}
				cases[i] = Case{Code: code, Regs: s.Arch().RandomRegs(rng), NoMemory: true}
			}
			if err := s.Run(cases, res); err != nil {
				fmt.Println("ERROR", err)
				os.Exit(1)
			}
		}
	}
}

// taggedProcs lists live (non-zombie) processes whose command line holds tag.
func taggedProcs(tag string) []string {
	var found []string
	ents, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, e := range ents {
		b, err := os.ReadFile(e)
		if err != nil || !strings.Contains(string(b), tag) {
			continue
		}
		st, err := os.ReadFile(filepath.Join(filepath.Dir(e), "stat"))
		if err != nil {
			continue
		}
		s := string(st)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		found = append(found, filepath.Base(filepath.Dir(e))+": "+strings.ReplaceAll(string(b), "\x00", " "))
	}
	return found
}

// TestNoStraySandbox kills a fuzzing process with SIGKILL at random moments
// and checks that none of its sandbox processes survive.
func TestNoStraySandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	for round := range 3 {
		tag := fmt.Sprintf("kboost-stray-test-%d-%d", os.Getpid(), round)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFuzzLoop$", "-test.v")
		cmd.Env = append(os.Environ(), "KBOOST_SANDBOX_HELPER="+tag)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
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
		if n := len(taggedProcs(tag)); n != 2 {
			t.Fatalf("round %d: %d sandbox processes before the kill, want 2", round, n)
		}
		time.Sleep(time.Duration(50+100*round) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		deadline := time.Now().Add(3 * time.Second)
		for {
			left := taggedProcs(tag)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: sandbox processes survive their tracer: %q", round, left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
