//go:build linux && amd64

package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/internal/schemacheck"
)

// TestProbeRows runs the probe part with small loops (this test binary is
// no kboost: the rows run a kboost built from ./cmd/kboost) and validates
// the result against schemas/bench.json; each kboost row's stops per hit
// are the mechanism's (none for a jump, one per boosted hit, two per
// single-stepped one).
func TestProbeRows(t *testing.T) {
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 (ptrace, the kernel's uprobe)")
	}
	kb := buildKboost(t)
	calls := map[string]int64{"": 1000, "jump": 1000, "boost": 1000, "singlestep": 1000, "uprobe": 1000}
	r, err := Run(Options{Kboost: kb, Runs: 1, SkipBuild: true, Calls: calls})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	if err := schemacheck.Validate("bench", b); err != nil {
		t.Error(err)
	}
	want := map[string]float64{probeJump: 0, probeJumpHits: 0, probeBoost: 1, probeSingle: 2}
	for _, p := range r.Probes {
		if w, ok := want[p.Name]; ok && p.StopsPerHit != w {
			t.Errorf("%s: %v stops per hit, want %v", p.Name, p.StopsPerHit, w)
		}
	}
	var tab bytes.Buffer
	WriteTable(&tab, r)
	for _, s := range []string{probeNative, probeJump, probeBoost, probeSingle} { // the figures of 1,000 calls are noise: not checked
		if !strings.Contains(tab.String(), s) {
			t.Errorf("the table has no %q:\n%s", s, tab.String())
		}
	}
}

// buildKboost builds ./cmd/kboost into the test's directory.
func buildKboost(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kboost")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/kboost").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}
