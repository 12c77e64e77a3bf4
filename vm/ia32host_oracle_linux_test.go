//go:build linux

package vm

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
)

// TestOracleIA32Refused is issue 11's host that refuses 32-bit executables,
// made real: Debian's 6.12 amd64 kernel booted with ia32_emulation=0. In it a
// static i386 program (built by the Go toolchain) must fail with ENOEXEC;
// kboost sim and fuzz --arch i386 --exec auto must choose qemu-i386-static
// and give the right answers; and kernelsim's i386 sandbox tests and its
// --exec auto test (a compiled test binary) must pass there.
func TestOracleIA32Refused(t *testing.T) {
	oracleGate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernelVersion(ctx, "linux-image-amd64", "6.12")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "exit386")
	os.MkdirAll(src, 0o755)
	os.WriteFile(filepath.Join(src, "go.mod"), []byte("module exit386\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Exit(0) }\n"), 0o644)
	static386 := filepath.Join(dir, "static386")
	goBuild(t, src, []string{"GOOS=linux", "GOARCH=386", "CGO_ENABLED=0"}, "build", "-o", static386, ".")
	testBin := filepath.Join(dir, "kernelsim.test")
	goBuild(t, "..", []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"}, "test", "-c", "-o", testBin, "./kernelsim")

	rep, err := IA32Refused(ctx, deb, IA32Request{Static386: static386, TestBinary: testBin,
		TestRun: "^(" + strings.Join(ia32GuestTests, "|") + ")$", TestEnv: []string{"KBOOST_EXPECT_I386_EXEC=qemu"}, FuzzN: 2000}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Static386Errno != "ENOEXEC" {
		t.Errorf("static i386 executable under %s: errno %q (exit %d), want ENOEXEC", IA32NoEmulation, rep.Static386Errno, rep.Static386Exit)
	}

	var sim struct {
		Asm     string `json:"asm"`
		Verdict string `json:"verdict"`
		Sandbox string `json:"sandbox"`
		Trials  []struct {
			Verdict string `json:"verdict"`
			InPlace struct {
				Outcome string            `json:"outcome"`
				Regs    map[string]string `json:"regs"`
			} `json:"in_place"`
		} `json:"shown_states"`
	}
	if rep.Sim.Exit != 0 {
		t.Errorf("sim: exit %d: %s", rep.Sim.Exit, rep.Sim.Stderr)
	} else if err := json.Unmarshal([]byte(rep.Sim.Stdout), &sim); err != nil {
		t.Errorf("sim --json: %v: %.300s", err, rep.Sim.Stdout)
	} else {
		if !strings.Contains(sim.Sandbox, "executed by ") || !strings.Contains(sim.Sandbox, "qemu-i386-static") {
			t.Errorf("sim --exec auto: sandbox %q, want qemu-i386-static", sim.Sandbox)
		}
		if sim.Asm != "mov %ecx,%eax" || len(sim.Trials) == 0 {
			t.Errorf("sim: asm %q, %d trials", sim.Asm, len(sim.Trials))
		}
		for i, tr := range sim.Trials {
			r := tr.InPlace.Regs
			if tr.Verdict != "equivalent" || tr.InPlace.Outcome != "completed" || r["eax"] == "" || r["eax"] != r["ecx"] {
				t.Errorf("sim trial %d: %s, %s, eax %s ecx %s (mov %%ecx,%%eax)", i, tr.Verdict, tr.InPlace.Outcome, r["eax"], r["ecx"])
			}
		}
	}

	var fz struct {
		Cases        int    `json:"cases"`
		Checks       int    `json:"checks"`
		Unsafe       int    `json:"unsafe_boosts"`
		LengthErrors int    `json:"length_errors"`
		Emulator     string `json:"emulator"`
	}
	if rep.Fuzz.Exit != 0 {
		t.Errorf("fuzz: exit %d: %s", rep.Fuzz.Exit, rep.Fuzz.Stderr)
	}
	// --json prints findings, then the summary: keep the last value.
	dec := json.NewDecoder(strings.NewReader(rep.Fuzz.Stdout))
	var last json.RawMessage
	for dec.More() {
		if err := dec.Decode(&last); err != nil {
			break
		}
	}
	if err := json.Unmarshal(last, &fz); err != nil {
		t.Errorf("fuzz --json summary: %v: %.300s", err, rep.Fuzz.Stdout)
	} else if fz.Cases != 2000 || fz.Checks == 0 || fz.Unsafe != 0 || fz.LengthErrors != 0 || filepath.Base(fz.Emulator) != "qemu-i386-static" {
		t.Errorf("fuzz: %d cases, %d checks, %d unsafe boosts, %d length errors, emulator %q; want 2000 cases, 0 unsafe, 0 length errors under qemu-i386-static",
			fz.Cases, fz.Checks, fz.Unsafe, fz.LengthErrors, fz.Emulator)
	}
	t.Logf("fuzz under %s: %d cases, %d checks", fz.Emulator, fz.Cases, fz.Checks)

	if rep.Test == nil {
		t.Fatal("the kernelsim test binary did not run")
	}
	t.Logf("kernelsim tests in the guest (exit %d):\n%s", rep.Test.Exit, rep.Test.Output)
	if rep.Test.Exit != 0 {
		t.Errorf("kernelsim tests failed in the guest (exit %d)", rep.Test.Exit)
	}
	for _, name := range ia32GuestTests {
		if !strings.Contains(rep.Test.Output, "--- PASS: "+name) {
			t.Errorf("kernelsim test %s did not pass in the guest", name)
		}
	}
	for _, want := range []string{"i386 --exec auto: qemu", "i386: qemu-i386-static only"} {
		if !strings.Contains(rep.Test.Output, want) {
			t.Errorf("kernelsim test output lacks %q", want)
		}
	}
}

// ia32GuestTests are the kernelsim tests run on the refusing host: the
// sandbox and hit tests, which run i386 through whatever --exec auto
// chooses (there: qemu-i386-static) beside x86-64 on the CPU.
var ia32GuestTests = []string{"TestExecAuto", "TestMovLeaPush", "TestAddFlags", "TestPushfPopf", "TestRIPRelative",
	"TestCallOutOfLine", "TestFaults", "TestSyscallTrapped", "TestBadCase", "TestRecovery",
	"TestHitBranches", "TestHitStraightLine", "TestHitRIPRelative", "TestLazy2006", "TestEmulateJcc"}

func goBuild(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
