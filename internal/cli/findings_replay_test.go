//go:build linux && amd64

package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// replayRegs are the general registers of a reproducer's state but the
// stack pointer.
var replayRegs = map[string][]string{
	"x86-64": {"rax", "rcx", "rdx", "rbx", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"},
	"i386":   {"eax", "ecx", "edx", "ebx", "ebp", "esi", "edi"},
}

// TestReferenceFindingsReplay: every divergence in the reference findings
// (testdata/kernelsim/*.jsonl, the records testdata/kernelsim/README.md
// describes) still reproduces on this CPU from its minimized reproducer
// through `kboost sim`: the same verdict, REFUTED, exit 1. The files were
// made by earlier campaigns; this keeps them true whatever the case stream
// of today's fuzzer. One subtest per file: linux-6.1-i386.jsonl runs i386,
// on the CPU or under qemu-i386-static as i386Path says, and each sim's
// sandbox line must name that executor.
func TestReferenceFindingsReplay(t *testing.T) {
	bin := kboostBinary(t)
	files, _ := filepath.Glob("../../testdata/kernelsim/*.jsonl")
	if len(files) < 2 {
		t.Fatalf("%d reference findings files in testdata/kernelsim, want x86-64 and i386", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { replayFindings(t, bin, file) })
	}
}

// replayFindings replays every record of one findings file (at least 50).
func replayFindings(t *testing.T, bin, file string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		var r struct {
			Kind, Arch, Policy, Verdict string
			Reproducer                  struct {
				Bytes string
				Regs  map[string]string
				Flags string
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		args := []string{"sim", "--arch", r.Arch, "--policy", r.Policy, "--trials", "2"}
		// A reproducer lists the registers that matter; the others
		// are zero in it (the sandbox fixes the stack pointer).
		for _, reg := range replayRegs[r.Arch] {
			v, ok := r.Reproducer.Regs[reg]
			if !ok {
				v = "0"
			}
			args = append(args, "--set", reg+"="+v)
		}
		if r.Reproducer.Flags != "" {
			args = append(args, "--set", "flags="+r.Reproducer.Flags)
		}
		args = append(args, r.Reproducer.Bytes)
		out, err := exec.Command(bin, args...).Output()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if want := r.Verdict + " REFUTED"; code != ExitFailure || !strings.Contains(string(out), want) {
			last := strings.TrimSpace(string(out))
			last = last[strings.LastIndexByte(last, '\n')+1:]
			t.Errorf("%s: kboost %s: exit %d, want %d and %q; got %q", filepath.Base(file), strings.Join(args, " "), code, ExitFailure, want, last)
		}
		if r.Arch == "i386" {
			if path == "" {
				path = i386Path(t)
			}
			wantI386Executor(t, path, string(out))
		}
		n++
	}
	t.Logf("%s: %d findings reproduced", filepath.Base(file), n)
	if n < 50 {
		t.Errorf("%s: only %d reference findings", filepath.Base(file), n)
	}
}
