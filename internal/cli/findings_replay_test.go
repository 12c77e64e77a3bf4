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
// of today's fuzzer.
func TestReferenceFindingsReplay(t *testing.T) {
	bin := kboostBinary(t)
	files, _ := filepath.Glob("../../testdata/kernelsim/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no reference findings in testdata/kernelsim")
	}
	total := 0
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
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
			n++
		}
		f.Close()
		t.Logf("%s: %d findings reproduced", filepath.Base(file), n)
		total += n
	}
	if total < 200 {
		t.Errorf("only %d reference findings", total)
	}
}
