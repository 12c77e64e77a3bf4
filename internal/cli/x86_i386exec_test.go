//go:build linux && amd64

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/internal/schemacheck"
)

// TestI386ExecFlag: --exec on `sim` and `fuzz --arch i386`. qemu runs the
// cases under qemu-i386-static on every host; cpu runs them on the CPU
// where the kernel runs 32-bit executables (with the hardware length
// oracle) and elsewhere fails (exit 1) naming ENOEXEC and --exec qemu;
// auto takes the path i386Path says. mov %ecx,%eax must copy ecx on each.
func TestI386ExecFlag(t *testing.T) {
	path := i386Path(t)
	for _, mode := range []string{"auto", "cpu", "qemu"} {
		want := mode
		if mode == "auto" {
			want = path
		}
		refused := mode == "cpu" && path == "qemu"
		out, stderr, code := run(t, "sim", "--arch", "i386", "--exec", mode, "--json", "--trials", "3", "89", "c8")
		if refused {
			if code != ExitFailure || !strings.Contains(stderr, "ENOEXEC") || !strings.Contains(stderr, "--exec qemu") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
				t.Errorf("sim --exec cpu where the kernel refuses i386: exit %d, stderr %q: want exit 1 and one line naming ENOEXEC and --exec qemu", code, stderr)
			}
		} else {
			var rep struct {
				Sandbox string `json:"sandbox"`
				Trials  []struct {
					Verdict string `json:"verdict"`
					InPlace struct {
						Regs map[string]string `json:"regs"`
					} `json:"in_place"`
				} `json:"shown_states"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Trials) == 0 {
				t.Errorf("sim --exec %s: exit %d: %.300s%s", mode, code, out, stderr)
			} else {
				wantI386Executor(t, want, rep.Sandbox)
				for i, tr := range rep.Trials {
					if r := tr.InPlace.Regs; tr.Verdict != "equivalent" || r["eax"] == "" || r["eax"] != r["ecx"] {
						t.Errorf("sim --exec %s state %d: %s, eax %s ecx %s", mode, i, tr.Verdict, r["eax"], r["ecx"])
					}
				}
			}
		}
		out, stderr, code = run(t, "fuzz", "--arch", "i386", "--exec", mode, "-n", "256", "--seed", "4", "--json", "--quiet")
		if refused {
			if code != ExitFailure || !strings.Contains(stderr, "ENOEXEC") || !strings.Contains(stderr, "--exec qemu") {
				t.Errorf("fuzz --exec cpu where the kernel refuses i386: exit %d, stderr %q", code, stderr)
			}
			t.Logf("--exec cpu here: exit %d, %s", code, strings.TrimSpace(stderr))
			continue
		}
		var sum map[string]any
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
			t.Errorf("fuzz --exec %s: exit %d: %.300s%s", mode, code, out, stderr)
			continue
		}
		wantI386Emulator(t, want, sum)
		if sum["cases"] != 256.0 || sum["unsafe_boosts"] != 0.0 || sum["length_errors"] != 0.0 {
			t.Errorf("fuzz --exec %s: %v cases, %v unsafe boosts, %v length errors", mode, sum["cases"], sum["unsafe_boosts"], sum["length_errors"])
		}
		if oracle, _ := sum["length_oracle"].(string); (want == "cpu") != (oracle == "cpu") {
			t.Errorf("fuzz --exec %s (%s path): length oracle %q", mode, want, oracle)
		}
		t.Logf("--exec %s: %s path, %v cases, %v checks, length oracle %.40q", mode, want, sum["cases"], sum["checks"], sum["length_oracle"])
	}
}

// TestI386JSONSchemas validates the --json outputs of i386 runs (sim,
// fuzz's summary and findings file, a merge of it) against their schemas,
// on whichever path this host takes.
func TestI386JSONSchemas(t *testing.T) {
	path := i386Path(t)
	findings := filepath.Join(t.TempDir(), "i386.jsonl")
	for _, c := range []struct {
		schema string
		args   []string
	}{
		{"sim", []string{"sim", "--json", "--trials", "2", "--arch", "i386", "--policy", "linux-2.6.17-i386", "89", "c8"}},
		{"sim", []string{"sim", "--json", "--trials", "2", "--arch", "i386", "--preemption", "y", "c2", "08", "00"}},
		{"fuzz-summary", []string{"fuzz", "--json", "--quiet", "--arch", "i386", "-n", "300", "--out", findings}},
		{"fuzz-summary", []string{"merge", "--json", findings}},
	} {
		out, stderr, code := run(t, c.args...)
		if code != 0 && code != ExitFailure {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
			continue
		}
		if err := schemacheck.Validate(c.schema, []byte(out)); err != nil {
			t.Errorf("%v: %.1500s", c.args, err)
		}
		if c.args[0] == "sim" {
			wantI386Executor(t, path, out)
		}
	}
	b, err := os.ReadFile(findings)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("fuzz-findings", b); err != nil {
		t.Error(err)
	}
}
