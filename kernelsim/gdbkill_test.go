//go:build linux

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

// TestHelperGDBFuzzLoop is not a test: TestNoStrayEmulator runs it in a
// child process, which runs random A64 words under qemu until it is killed.
func TestHelperGDBFuzzLoop(t *testing.T) {
	tag := os.Getenv("KBOOST_GDB_HELPER")
	if tag == "" {
		t.Skip("helper process for TestNoStrayEmulator")
	}
	g, err := NewGDB(ARM64, Options{Tag: tag})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	rng := rand.New(rand.NewPCG(1, 2))
	cases := make([]Case, 64)
	res := make([]Result, 64)
	var tr Trial
	for {
		for i := range cases {
			ARM64.RandomTrialA64(rng, &tr)
			cases[i] = Case{Code: a64Bytes(rng.Uint32()), CodeOffset: FuzzCodeOffset, Regs: tr.Regs, NoMemory: true}
		}
		if err := g.Run(cases, res); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
	}
}

// emuProcs lists live (non-zombie) processes whose command line holds tag.
func emuProcs(tag string) []string {
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

// TestNoStrayEmulator kills a process running the ARM64 emulator backend
// with SIGKILL at random moments and checks that no qemu survives it.
func TestNoStrayEmulator(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-aarch64-static)")
	}
	for round := range 3 {
		tag := fmt.Sprintf("kboost-stray-gdb-%d-%d", os.Getpid(), round)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGDBFuzzLoop$", "-test.v")
		cmd.Env = append(os.Environ(), "KBOOST_GDB_HELPER="+tag)
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
		if n := len(emuProcs(tag)); n != 1 {
			t.Fatalf("round %d: %d emulator processes before the kill, want 1", round, n)
		}
		time.Sleep(time.Duration(50+150*round) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		deadline := time.Now().Add(3 * time.Second)
		for {
			left := emuProcs(tag)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: emulator processes survive their owner: %q", round, left)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
