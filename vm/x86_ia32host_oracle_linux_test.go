//go:build linux

package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// ia32Suite is one package's tests whose behaviour depends on how i386
// code runs (on the CPU, or under qemu-i386-static where the kernel
// refuses 32-bit executables): compiled with go test -c and run, by name,
// on this host and in a guest that refuses 32-bit executables.
type ia32Suite struct {
	pkg string // the package's directory in the module
	// tests are the tests to run, by name; NAME/SUB runs only that
	// subtest of NAME (its i386 one), and then every test's subtests are
	// filtered by the SUB names.
	tests []string
	// qemuLine is what its output says where i386 runs under qemu-i386-static.
	qemuLine string
	// guestEnv is added to its environment in the guest.
	guestEnv []string
}

// ia32Suites are every test of the module that runs i386 code or whose
// outcome depends on whether the kernel runs it (found by what they reach:
// kernelsim.I386 sandboxes, sandboxes()/execOptions(), `--arch i386` runs of
// sim and fuzz). Left out, each for its reason:
//   - kernelsim TestLayoutCheck, TestMemOperand, FuzzSlotModel,
//     TestHitBoostLimit, TestHitRIPRelative: i386 layouts and slot models,
//     no i386 execution; kernelsim/native TestRunnerObjdump: the i386
//     runner image read by objdump, not run.
//   - kernelsim/native BenchmarkDifferentialCheck, BenchmarkFuzzChecks: benchmarks
//     (TestMeasureChecks, run here, measures the same).
//   - the x86-64 halves of these tests, in the guest only: there "the CPU"
//     is QEMU's TCG, which random x86-64 code makes abort (tcg fatal error),
//     and they do not depend on i386 (kernelsim: KBOOST_TEST_ARCHES=i386;
//     internal/cli: the i386 subtests only, on both hosts).
//   - monitor TestI386Tracee, uprobe TestLiveCorpus32: 32-bit tracees built
//     by gcc -m32 at test time (no gcc in the guest); both skip, saying so,
//     where the kernel refuses 32-bit executables: neither has a qemu path.
var ia32Suites = []ia32Suite{
	{pkg: "kernelsim/native", tests: []string{"TestExecAuto",
		// sandboxes(): x86-64 and i386 on each path the host allows
		"TestMovLeaPush", "TestAddFlags", "TestPushfPopf", "TestCallOutOfLine", "TestFaults", "TestWatchdog",
		"TestNoStaleCode", "TestMemoryImages", "TestRandomBytes", "TestCaseTimer", "TestSleepingSyscall", "TestCaseTimeoutSetting",
		// execOptions(I386): the hardware length oracle, SIGKILL of fuzzing sandboxes
		"TestHWLengthQuick", "TestNoStraySandbox", "TestMeasureChecks",
		// x86-64 only, but int 0x80 is a #GP where the kernel has no IA32 emulation
		"TestSyscallTrapped"}, qemuLine: "i386: qemu-i386-static only", guestEnv: []string{"KBOOST_TEST_ARCHES=i386"}},
	// the i386 sandbox --exec auto chooses, through kernelsim.OpenBackend
	{pkg: "kernelsim", tests: []string{"TestHitBranches", "TestHitStraightLine", "TestLazy2006"},
		qemuLine: "i386 --exec auto: qemu", guestEnv: []string{"KBOOST_TEST_ARCHES=i386"}},
	{pkg: "kernelsim/fuzz", tests: []string{"TestFuzzOracle", "TestMeasure"},
		qemuLine: "i386 --exec auto: qemu", guestEnv: []string{"KBOOST_TEST_ARCHES=i386"}},
	{pkg: "internal/cli", tests: []string{"TestI386ExecFlag", "TestI386JSONSchemas", "TestSimCommand",
		"TestFuzzFindingExit/i386", "TestOneInputRule/i386", "TestFuzzShardsMerge/i386", "TestFuzzKillResume/i386",
		"TestReferenceFindingsReplay/linux-6.1-i386.jsonl"}, qemuLine: "i386 path: qemu"},
}

// runPattern is the suite's -test.run pattern.
func (s *ia32Suite) runPattern() string {
	var top, sub []string
	for _, n := range s.tests {
		name, subName, ok := strings.Cut(n, "/")
		top = append(top, regexp.QuoteMeta(name))
		if ok {
			sub = append(sub, regexp.QuoteMeta(subName))
		}
	}
	p := "^(" + strings.Join(top, "|") + ")$"
	if len(sub) > 0 {
		p += "/^(" + strings.Join(sub, "|") + ")$"
	}
	return p
}

// check fails t unless every test of s passed in out, the verbose output of
// its test binary run on where ("host", "guest").
func (s *ia32Suite) check(t *testing.T, where string, exit int, out string) (passed int) {
	t.Helper()
	for _, n := range s.tests {
		if strings.Contains(out, "--- PASS: "+n+" (") {
			passed++
		} else {
			t.Errorf("%s: %s test %s did not pass", where, s.pkg, n)
		}
	}
	if exit != 0 {
		t.Errorf("%s: %s tests: exit %d", where, s.pkg, exit)
	}
	return passed
}

// durations lists, for each test of s, its time in the guest and on the
// host, as the verbose outputs report them.
func (s *ia32Suite) durations(guestOut, hostOut string) string {
	re := regexp.MustCompile(`--- (?:PASS|FAIL|SKIP): (\S+) \(([0-9.]+s)\)`)
	times := func(out string) map[string]string {
		m := map[string]string{}
		for _, g := range re.FindAllStringSubmatch(out, -1) {
			m[g[1]] = g[2]
		}
		return m
	}
	g, h := times(guestOut), times(hostOut)
	var b strings.Builder
	for _, n := range s.tests {
		fmt.Fprintf(&b, "\n    %-50s guest %7s  host %7s", n, g[n], h[n])
	}
	return b.String()
}

// ia32PathLine matches the lines of a test output saying which i386 path ran.
var ia32PathLine = regexp.MustCompile(`(?m)(i386 path: .*|i386: qemu-i386-static only.*|i386: on the CPU and under qemu-i386-static|i386 --exec auto: .*)$`)

func pathLines(out string) string {
	seen := map[string]int{}
	var order []string
	for _, l := range ia32PathLine.FindAllString(out, -1) {
		if len(l) > 110 {
			l = l[:110] + "..."
		}
		if seen[l] == 0 {
			order = append(order, l)
		}
		seen[l]++
	}
	var b strings.Builder
	for _, l := range order {
		fmt.Fprintf(&b, "\n    %dx %s", seen[l], l)
	}
	return b.String()
}

// TestOracleIA32Refused is issue 11's two kinds of host, made real: this one,
// and Debian's 6.12 amd64 kernel booted with ia32_emulation=0, a host that
// refuses 32-bit executables. There a static i386 program (built by the Go
// toolchain) must fail with ENOEXEC; kboost sim and fuzz --arch i386 --exec
// auto must choose qemu-i386-static and give the right answers; and every
// i386-dependent test (ia32Suites, compiled test binaries, with the kboost
// binaries built here: the guest has no Go toolchain) must pass, asserting
// the qemu path (KBOOST_EXPECT_I386_EXEC=qemu). The same tests run on this
// host too, asserting the path the static i386 program says it allows (cpu
// where it runs). The log says which path ran where, and the times.
func TestOracleIA32Refused(t *testing.T) {
	oracleGate(t)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
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
	static := []string{"GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0"}
	goBuild(t, src, []string{"GOOS=linux", "GOARCH=386", "CGO_ENABLED=0"}, "build", "-o", static386, ".")
	hostPath, hostWhy := "cpu", "a static i386 program runs here"
	if err := exec.Command(static386).Run(); err != nil {
		hostPath, hostWhy = "qemu", fmt.Sprintf("a static i386 program fails here: %v", err)
	}
	t.Logf("host: %s path (%s)", hostPath, hostWhy)

	start := time.Now()
	kboost, faulty := filepath.Join(dir, "kboost"), filepath.Join(dir, "kboost-faulty")
	goBuild(t, "..", static, "build", "-o", kboost, "./cmd/kboost")
	goBuild(t, "..", static, "build", "-tags", "kboost_faulty", "-o", faulty, "./cmd/kboost")
	bins := map[string]string{}
	for _, s := range ia32Suites {
		bins[s.pkg] = filepath.Join(dir, filepath.Base(s.pkg)+".test")
		goBuild(t, "..", static, "test", "-c", "-o", bins[s.pkg], "./"+s.pkg)
	}
	t.Logf("builds: %.0fs", time.Since(start).Seconds())

	// this host, while the guest runs
	type hostRun struct {
		exit    int
		out     string
		seconds float64
	}
	hostDone := make(chan []hostRun, 1)
	go func() {
		var runs []hostRun
		for _, s := range ia32Suites {
			cmd := exec.CommandContext(ctx, bins[s.pkg], "-test.run", s.runPattern(), "-test.v", "-test.count=1")
			cmd.Dir = filepath.Join("..", s.pkg)
			cmd.Env = append(os.Environ(), "KBOOST_ORACLE=1", "KBOOST_EXPECT_I386_EXEC="+hostPath,
				"KBOOST_TEST_BINARY="+kboost, "KBOOST_TEST_FAULTY_BINARY="+faulty)
			t0 := time.Now()
			out, err := cmd.CombinedOutput()
			r := hostRun{out: string(out), seconds: time.Since(t0).Seconds()}
			if ee, ok := err.(*exec.ExitError); ok {
				r.exit = ee.ExitCode()
			} else if err != nil {
				r.exit, r.out = -1, err.Error()
			}
			runs = append(runs, r)
		}
		hostDone <- runs
	}()

	req := IA32Request{Static386: static386, FuzzN: 2000}
	for _, s := range ia32Suites {
		req.Tests = append(req.Tests, IA32Tests{Name: filepath.Base(s.pkg), Binary: bins[s.pkg], Dir: s.pkg, Run: s.runPattern(),
			Env: append([]string{"KBOOST_EXPECT_I386_EXEC=qemu", "KBOOST_TEST_BINARY=" + guest.KboostPath, "KBOOST_TEST_FAULTY_BINARY=/bin/kboost-faulty"}, s.guestEnv...)})
	}
	// the faulty kboost (the step's own kboost, the one built above, is
	// packed by Run at guest.KboostPath through Config.KboostBinary); /bin/true,
	// which the cli campaign tests sample from (read, not run); the reference
	// findings the replay test reads
	for g, h := range map[string]string{"/bin/kboost-faulty": faulty, "/bin/true": "/bin/true"} {
		b, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		req.Files = append(req.Files, File{Name: g, Mode: 0o755, Data: b})
	}
	refs, _ := filepath.Glob("../testdata/kernelsim/*.jsonl")
	for _, f := range refs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		req.Files = append(req.Files, File{Name: "/src/testdata/kernelsim/" + filepath.Base(f), Data: b})
	}
	start = time.Now()
	rep, err := IA32Refused(ctx, deb, req, Config{MemoryMB: 2048, Timeout: 30 * time.Minute, KboostBinary: kboost})
	guestSeconds := time.Since(start).Seconds()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Static386Errno != "ENOEXEC" {
		t.Errorf("static i386 executable under %s: errno %q (exit %d), want ENOEXEC", IA32NoEmulation, rep.Static386Errno, rep.Static386Exit)
	}
	checkRefusedSimFuzz(t, rep.Sim.Exit, rep.Sim.Stdout, rep.Sim.Stderr, rep.Fuzz.Exit, rep.Fuzz.Stdout, rep.Fuzz.Stderr)

	if len(rep.Tests) != len(ia32Suites) {
		t.Fatalf("the guest ran %d test binaries, want %d", len(rep.Tests), len(ia32Suites))
	}
	hostRuns := <-hostDone
	total, guestPassed, hostPassed := 0, 0, 0
	for i, s := range ia32Suites {
		g, h := rep.Tests[i], hostRuns[i]
		gp := s.check(t, "guest (ia32_emulation=0)", g.Exit, g.Output)
		hp := s.check(t, "host", h.exit, h.out)
		total, guestPassed, hostPassed = total+len(s.tests), guestPassed+gp, hostPassed+hp
		t.Logf("%s: guest (ia32_emulation=0, qemu path): %d/%d passed in %.0fs; its i386 path lines:%s", s.pkg, gp, len(s.tests), g.Seconds, pathLines(g.Output))
		t.Logf("%s: host (%s path): %d/%d passed in %.0fs; its i386 path lines:%s", s.pkg, hostPath, hp, len(s.tests), h.seconds, pathLines(h.out))
		if t.Failed() {
			t.Logf("%s in the guest:\n%s", s.pkg, g.Output)
			t.Logf("%s on the host:\n%s", s.pkg, h.out)
		}
		t.Logf("%s: each test's time:%s", s.pkg, s.durations(g.Output, h.out))
		if !strings.Contains(g.Output, s.qemuLine) {
			t.Errorf("guest: %s test output lacks %q", s.pkg, s.qemuLine)
		}
	}
	t.Logf("i386-dependent tests: %d; guest (qemu path) %d passed, host (%s path) %d passed; guest boot and run %.0fs", total, guestPassed, hostPath, hostPassed, guestSeconds)
}

// checkRefusedSimFuzz checks the guest's in-process `kboost sim --arch i386
// --exec auto --json 89 c8` and `fuzz --arch i386 --exec auto -n 2000 --json`.
func checkRefusedSimFuzz(t *testing.T, simExit int, simOut, simErr string, fuzzExit int, fuzzOut, fuzzErr string) {
	t.Helper()
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
	if simExit != 0 {
		t.Errorf("sim: exit %d: %s", simExit, simErr)
	} else if err := json.Unmarshal([]byte(simOut), &sim); err != nil {
		t.Errorf("sim --json: %v: %.300s", err, simOut)
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
	if fuzzExit != 0 {
		t.Errorf("fuzz: exit %d: %s", fuzzExit, fuzzErr)
	}
	// --json prints findings, then the summary: keep the last value.
	dec := json.NewDecoder(strings.NewReader(fuzzOut))
	var last json.RawMessage
	for dec.More() {
		if err := dec.Decode(&last); err != nil {
			break
		}
	}
	if err := json.Unmarshal(last, &fz); err != nil {
		t.Errorf("fuzz --json summary: %v: %.300s", err, fuzzOut)
	} else if fz.Cases != 2000 || fz.Checks == 0 || fz.Unsafe != 0 || fz.LengthErrors != 0 || filepath.Base(fz.Emulator) != "qemu-i386-static" {
		t.Errorf("fuzz: %d cases, %d checks, %d unsafe boosts, %d length errors, emulator %q; want 2000 cases, 0 unsafe, 0 length errors under qemu-i386-static",
			fz.Cases, fz.Checks, fz.Unsafe, fz.LengthErrors, fz.Emulator)
	}
	t.Logf("guest fuzz under %s: %d cases, %d checks", fz.Emulator, fz.Cases, fz.Checks)
}

func goBuild(t *testing.T, dir string, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
