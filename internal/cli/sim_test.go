//go:build linux && amd64

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/procstat"
)

// TestSimCommand runs `kboost sim` on instructions whose outcome the CPU
// decides: a boosted mov is confirmed, a call forced through a boosted slot
// is refuted (its return address), a 2006 lazy boost confirmed hit by hit.
func TestSimCommand(t *testing.T) {
	runSimCases(t, []simCase{
		{[]string{"sim", "--trials", "2", "48", "8b", "05", "10", "00", "00", "00"},
			[]string{"jmp back to addr+len = 0xffffffff81000007", "layout   ok", "CONFIRMED"}},
		{[]string{"sim", "--trials", "2", "--path", "boost", "e8", "00", "00", "00", "00"},
			[]string{"REFUTED", "* stack+0x7f8 differs"}},
		{[]string{"sim", "--trials", "2", "c3"}, []string{"jmp back to addr+len", "CONFIRMED"}},
		{[]string{"sim", "--trials", "2", "--preemption", "y", "c3"}, []string{"emulates", "emulate CONFIRMED"}},
		{[]string{"sim", "--trials", "2", "--preemption", "y", "c2", "08", "00"}, []string{"emulate REFUTED", "* rsp"}},
		{[]string{"sim", "--trials", "1", "fa"}, []string{"not verifiable in user mode"}},
		{[]string{"sim", "--trials", "2", "--arch", "i386", "--policy", "linux-2.6.17-i386", "--addr", "0xc1000000", "--slot", "0xf8000000", "89", "c8"},
			[]string{"hit 1: singlestep, boostable 0 (candidate) -> 1 (boosted)", "hit 2: boosted", "CONFIRMED"}},
		{[]string{"sim", "--slot", "0x7fff00000000", "48", "8b", "05", "10", "00", "00", "00"},
			[]string{"slot     refused", "beyond s32"}},
	}, func(args []string, out string) {
		if strings.Contains(out, "\033[") {
			t.Errorf("%v: colour codes on a non-terminal", args)
		}
		if slices.Contains(args, "i386") {
			wantI386Executor(t, i386Path(t), out)
		}
	})
	out, _, code := run(t, "sim", "--json", "--trials", "1", "53")
	var rep map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep["slot"] == nil || rep["slot_lines"] == nil || rep["conclusion"] == nil {
		t.Errorf("sim --json: %d %s", code, out)
	}
}

// TestFuzzCommand runs a short fuzz and checks the summary and findings file.
func TestFuzzCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "f.jsonl")
	stdout, stderr, code := run(t, "fuzz", "-n", "300", "--json", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	for _, k := range []string{"cases", "unsafe_boosts", "missed_boosts", "length_errors", "checks_per_second"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}
	if sum["cases"].(float64) != 300 {
		t.Errorf("cases %v", sum["cases"])
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var f map[string]any
		if len(l) > 0 && json.Unmarshal(l, &f) != nil {
			t.Fatalf("bad findings line %q", l)
		}
	}
}

// TestHelperFuzzCommand is not a test: TestFuzzSignals runs it as the fuzz
// command in a child process.
func TestHelperFuzzCommand(t *testing.T) {
	tag := os.Getenv("KBOOST_FUZZ_HELPER")
	if tag == "" {
		t.Skip("helper process for TestFuzzSignals")
	}
	os.Exit(Main([]string{"fuzz", "--duration", "1m", "--json", "--sandbox-tag", tag}, strings.NewReader(""), os.Stdout, os.Stderr))
}

func sandboxProcs(tag string) []string {
	var found []string
	for _, p := range procstat.All() {
		args, _ := procstat.Cmdline(p.Pid)
		if line := strings.Join(args, " "); !p.Zombie() && strings.Contains(line, tag) && !strings.Contains(line, "-test.run") {
			found = append(found, fmt.Sprintf("/proc/%d", p.Pid))
		}
	}
	return found
}

// TestFuzzSignals: Ctrl-C (SIGINT) stops `kboost fuzz` cleanly with the
// summary printed and exit status 130; SIGKILL leaves no sandbox process behind.
func TestFuzzSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		tag := fmt.Sprintf("kboost-fuzz-signal-%d-%d", os.Getpid(), sig)
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperFuzzCommand$")
		cmd.Env = append(os.Environ(), "KBOOST_FUZZ_HELPER="+tag)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for len(sandboxProcs(tag)) == 0 {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("%v: no sandbox appeared", sig)
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		cmd.Process.Signal(sig)
		err := cmd.Wait()
		if sig == syscall.SIGINT {
			var sum map[string]any
			if cmd.ProcessState.ExitCode() != ExitInterrupted || json.Unmarshal(out.Bytes(), &sum) != nil || sum["interrupted"] != true {
				t.Errorf("SIGINT: %v (want exit status %d), output %q", err, ExitInterrupted, out.String())
			}
		}
		deadline = time.Now().Add(3 * time.Second)
		for len(sandboxProcs(tag)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%v: sandbox processes survive: %v", sig, sandboxProcs(tag))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
