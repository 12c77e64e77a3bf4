package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/native"
)

// i386Path is how `--exec auto` runs i386 cases on this host: "cpu" where
// the kernel runs 32-bit executables, "qemu" (qemu-i386-static) where it
// refuses them. KBOOST_EXPECT_I386_EXEC states it where the host is known
// (package vm's TestOracleIA32Hosts sets it from whether a static i386
// program ran: cpu on its host if so, qemu in the guest it boots with
// ia32_emulation=0); a probe disagreeing with it fails the test. Without
// it, kernelsim's probe decides. Either way the log says which path ran.
func i386Path(t testing.TB) string {
	t.Helper()
	got, why := "cpu", "the kernel runs 32-bit executables"
	if err := native.NativeExec(kernelsim.I386); err != nil {
		got, why = "qemu", err.Error()
	}
	want := os.Getenv("KBOOST_EXPECT_I386_EXEC")
	if want != "" && want != got {
		t.Fatalf("i386 --exec auto takes the %s path here (%s), but KBOOST_EXPECT_I386_EXEC=%s", got, why, want)
	}
	src := "probed"
	if want != "" {
		src = "KBOOST_EXPECT_I386_EXEC=" + want
	}
	t.Logf("i386 path: %s (%s; %s)", got, src, why)
	return got
}

// wantI386Executor checks that a sim report's sandbox line (text or the
// JSON "sandbox" field) names the executor of path: the CPU, or
// qemu-i386-static.
func wantI386Executor(t testing.TB, path, out string) {
	t.Helper()
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "executed on the CPU") || strings.Contains(l, "executed by ") {
			line = l
			break
		}
	}
	cpu := strings.Contains(line, "executed on the CPU")
	qemu := strings.Contains(line, "executed by ") && strings.Contains(line, "qemu-i386-static")
	if (path == "cpu" && !cpu) || (path == "qemu" && !qemu) {
		t.Errorf("i386 %s path: the sandbox line is %q", path, strings.TrimSpace(line))
	}
}

// wantI386Emulator checks a fuzz summary's emulator for path.
func wantI386Emulator(t testing.TB, path string, sum map[string]any) {
	t.Helper()
	em, _ := sum["emulator"].(string)
	if (path == "cpu" && em != "") || (path == "qemu" && filepath.Base(em) != "qemu-i386-static") {
		t.Errorf("i386 %s path: fuzz summary emulator %q", path, em)
	}
}

// stableTimeout is the fuzz flags that keep a campaign of arch
// deterministic where its cases run under qemu-i386-static: there the case
// timer counts the emulator's user CPU time, and in a TCG guest on a busy
// host the guest kernel charges the host's preemptions to whatever runs, so
// the default 60 ms limit stops a random case now and then: in package vm's
// guest an uninterrupted i386 campaign of TestFuzzKillResume found 392
// missed boosts where the same seed under qemu on this project's host finds
// 394, and the killed and resumed one 391. One second makes that rare; here
// it took no longer (cases end by themselves).
func stableTimeout(t testing.TB, arch string) []string {
	t.Helper()
	if arch == "i386" && i386Path(t) == "qemu" {
		return []string{"--case-timeout", "1s"}
	}
	return nil
}
