//go:build linux && amd64

package cli

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
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
//
// The x86-64 file was made on AMD EPYC. A finding whose instruction the two
// vendors execute differently (vendorDependent) is REFUTED there and, on an
// Intel CPU, CONFIRMED (exit 0): Intel executes it as the kernel emulates it.
// Either outcome changing fails the test.
func TestReferenceFindingsReplay(t *testing.T) {
	bin := kboostBinary(t)
	vendor := cpuVendor(t)
	files, _ := filepath.Glob("../../testdata/kernelsim/*.jsonl")
	if len(files) < 2 {
		t.Fatalf("%d reference findings files in testdata/kernelsim, want x86-64 and i386", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { replayFindings(t, bin, file, vendor) })
	}
}

// cpuVendor is /proc/cpuinfo's vendor_id: GenuineIntel or AuthenticAMD.
func cpuVendor(t *testing.T) string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			switch v = strings.TrimSpace(v); v {
			case "GenuineIntel", "AuthenticAMD":
				return v
			default:
				t.Fatalf("CPU vendor %q: the reference findings know GenuineIntel and AuthenticAMD only", v)
			}
		}
	}
	t.Fatal("no vendor_id in /proc/cpuinfo")
	return ""
}

// vendorDependent reports whether AMD and Intel CPUs execute the x86-64
// instruction b differently, and why:
//   - kboost's decoder gives it another operand size under its AMD rules: a
//     66-prefixed near branch (jmp, jcc, jrcxz, loop, call, ret), 16-bit on
//     AMD (APM vol. 1, "Near Branches in 64-Bit Mode"), 64-bit on Intel;
//   - F3 loopne: AMD EPYC took the branch as loope would (the records'
//     in_place outcomes), Intel ignores the prefix. Neither manual defines a
//     repeat prefix on LOOPcc.
func vendorDependent(t *testing.T, b []byte) string {
	var intel, amd decode.Inst
	if err := decode.DecodeVendor(&intel, b, decode.Mode64, 0, decode.VendorIntel); err != nil {
		t.Fatalf("% x: %v", b, err)
	}
	if err := decode.DecodeVendor(&amd, b, decode.Mode64, 0, decode.VendorAMD); err != nil {
		t.Fatalf("% x: %v", b, err)
	}
	switch {
	case intel.OpSize != amd.OpSize && intel.Branch != decode.BranchNone:
		return "66-prefixed near branch"
	case intel.Prefixes&decode.PfxOpSize != 0 && intel.Rex&8 == 0 && (intel.Branch == decode.BranchCallInd || intel.Branch == decode.BranchJmpInd):
		// the decoder's FF /2, /4 entries keep the operand size on both vendors
		return "66-prefixed near branch"
	case intel.Branch == decode.BranchLoop && intel.Opcode == 0xe0 && intel.Prefixes&decode.PfxRep != 0:
		return "F3 loopne"
	}
	return ""
}

// replayFindings replays every record of one findings file (at least 50).
func replayFindings(t *testing.T, bin, file, vendor string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	path := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, flipped := 0, map[string]int{}
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
		want, wantCode := r.Verdict+" REFUTED", ExitFailure
		if r.Arch == "x86-64" && vendor != "AuthenticAMD" {
			b, err := hex.DecodeString(r.Reproducer.Bytes)
			if err != nil {
				t.Fatalf("%s: reproducer %q: %v", file, r.Reproducer.Bytes, err)
			}
			if why := vendorDependent(t, b); why != "" {
				want, wantCode = r.Verdict+" CONFIRMED", 0
				flipped[why]++
			}
		}
		if code != wantCode || !strings.Contains(string(out), want) {
			last := strings.TrimSpace(string(out))
			last = last[strings.LastIndexByte(last, '\n')+1:]
			t.Errorf("%s (%s): kboost %s: exit %d, want %d and %q; got %q", filepath.Base(file), vendor, strings.Join(args, " "), code, wantCode, want, last)
		}
		if r.Arch == "i386" {
			if path == "" {
				path = i386Path(t)
			}
			wantI386Executor(t, path, string(out))
		}
		n++
	}
	t.Logf("%s on %s: %d findings replayed; AMD-only, CONFIRMED here: %v", filepath.Base(file), vendor, n, flipped)
	if n < 50 {
		t.Errorf("%s: only %d reference findings", filepath.Base(file), n)
	}
}
