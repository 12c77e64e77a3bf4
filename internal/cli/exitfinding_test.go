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

// TestFuzzFindingExit: a fuzz campaign that finds unsafe boosts reports them
// and exits 1. kboost's own policies hold (the fuzzer finds none), so the
// binary is built with the kboost_faulty tag, which adds a policy whose
// can_boost wrongly boosts relative branches: the CPU, running them from the
// slot, lands elsewhere. Every unsafe-boost record must be such a branch,
// judged by the decoder and the recorded divergence, not by the policy.
// One subtest per arch (i386 on the path i386Path says).
func TestFuzzFindingExit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a kboost binary (seconds)")
	}
	dir := t.TempDir()
	// KBOOST_TEST_FAULTY_BINARY: a prebuilt one (see kboostBinary)
	bin := os.Getenv("KBOOST_TEST_FAULTY_BINARY")
	if bin == "" {
		bin = filepath.Join(dir, "kboost-faulty")
		if out, err := exec.Command("go", "build", "-tags", "kboost_faulty", "-o", bin, "github.com/kboost/kboost/cmd/kboost").CombinedOutput(); err != nil {
			t.Fatalf("go build -tags kboost_faulty: %v\n%s", err, out)
		}
	}
	path := i386Path(t)
	for _, arch := range []string{"x86-64", "i386"} {
		t.Run(arch, func(t *testing.T) {
			out := filepath.Join(dir, arch+".jsonl")
			cmd := exec.Command(bin, "fuzz", "--arch", arch, "--policy", "faulty-relbranch", "-n", "2000", "--json", "--out", out)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			var sum fuzzSummary
			if err := json.Unmarshal([]byte(stdout.String()), &sum); err != nil {
				t.Fatalf("%s: summary: %v\n%s", arch, err, stdout.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != ExitFailure || sum.UnsafeBoosts == 0 || !strings.Contains(stderr.String(), "unsafe boosts") {
				t.Errorf("%s: exit %d (want %d), %d unsafe boosts; stderr %q", arch, code, ExitFailure, sum.UnsafeBoosts, stderr.String())
			}
			if arch == "i386" {
				wantI386Emulator(t, path, map[string]any{"emulator": sum.Emulator})
			}
			mode := decode.Mode64
			if arch == "i386" {
				mode = decode.Mode32
			}
			f, err := os.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var r struct {
					Kind, Bytes string
					Diverged    []string
				}
				if json.Unmarshal(sc.Bytes(), &r) != nil || r.Kind != "unsafe-boost" {
					continue
				}
				n++
				b, err := hex.DecodeString(strings.ReplaceAll(r.Bytes, " ", ""))
				if err != nil {
					t.Fatalf("record bytes %q: %v", r.Bytes, err)
				}
				in, err := decode.Decode(b, mode, 0)
				if err != nil || !in.Branch.Relative() || !strings.Contains(strings.Join(r.Diverged, " "), "pc") {
					t.Errorf("%s: unsafe boost %s (%v): not a relative branch whose pc diverged (%v)", arch, r.Bytes, err, r.Diverged)
				}
			}
			f.Close()
			if n == 0 {
				t.Errorf("%s: no unsafe-boost record in %s", arch, out)
			}
			t.Logf("%s: exit 1, %d unsafe boosts, %d distinct records, all relative branches", arch, sum.UnsafeBoosts, n)
		})
	}
}
