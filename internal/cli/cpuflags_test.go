package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --cpu-flags names the x86 CPU as /proc/cpuinfo does (a file or a list);
// --cpu qemu64 is the same as its captured cpuinfo; unknown names are a
// note, none known or both options a usage error (exit 2); on ARM code
// the options are a note.
func TestAuditCPUFlags(t *testing.T) {
	// every boundary's record, with the preset and with its cpuinfo
	preset, _, code := run(t, "audit", "--cpu", "qemu64", "--json")
	if code != 0 {
		t.Fatalf("--cpu qemu64: exit %d", code)
	}
	file := filepath.Join("..", "..", "kimage", "spec", "x86-cpu-qemu64.cpuinfo")
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "flags\t\t: fpu") {
		t.Fatalf("%s is not a cpuinfo capture (%v)", file, err)
	}
	fromFile, stderr, code := run(t, "audit", "--cpu-flags", file, "--json")
	if code != 0 {
		t.Fatalf("--cpu-flags FILE: exit %d: %s", code, stderr)
	}
	if preset != fromFile || strings.Count(preset, "\n") < 50 {
		t.Errorf("--cpu qemu64 and --cpu-flags %s differ (or too few records: %d)", file, strings.Count(preset, "\n"))
	}
	out, _, code := run(t, "audit", "--cpu-flags", "fpu,sse2 notaflag", "--summary")
	if code != 0 || !strings.Contains(out, "ignored: notaflag") {
		t.Errorf("unknown flag: exit %d, %s", code, out)
	}
	for _, args := range [][]string{
		{"--cpu-flags", "bogus,nothing"},
		{"--cpu", "nosuchcpu"},
		{"--cpu", "qemu64", "--cpu-flags", "fpu"},
	} {
		_, stderr, code := run(t, append([]string{"audit", "--summary"}, args...)...)
		if code != 2 || !strings.Contains(stderr, "--cpu") {
			t.Errorf("%v: exit %d, %q", args, code, stderr)
		}
	}
}

// --cpu-features FILE: a kernel log; on x86 code a note; both it and
// --cpu-caps, or a file without a "CPU features: detected:" line, exit 2.
func TestAuditCPUFeatures(t *testing.T) {
	dir := t.TempDir()
	logf := filepath.Join(dir, "dmesg.txt")
	if err := os.WriteFile(logf, []byte("[    0.000000] CPU features: detected: ARM erratum 832075\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := run(t, "audit", "--cpu-features", logf, "--summary")
	if code != 0 || !strings.Contains(out, "do not apply to x86-64 code") {
		t.Errorf("x86 demo: exit %d: %s %s", code, out, stderr)
	}
	if _, stderr, code := run(t, "audit", "--cpu-features", logf, "--cpu-caps", "HAS_PAN"); code != 2 || !strings.Contains(stderr, "give one") {
		t.Errorf("both: exit %d: %s", code, stderr)
	}
	if _, _, code := run(t, "audit", "--cpu-features", filepath.Join(dir, "missing")); code != 2 {
		t.Errorf("missing file: exit %d", code)
	}
}
