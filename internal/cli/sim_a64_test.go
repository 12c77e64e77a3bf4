//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimFuzzA64 runs `kboost sim --arch arm64` on words whose outcome the
// architecture decides (add: PC-free, confirmed boosted; adr: reads the PC,
// refuted when forced through a boosted slot, confirmed simulated; a load
// through a scratch pointer confirmed single-stepped), and a short
// `kboost fuzz --arch arm64` under boost-arm64.
func TestSimFuzzA64(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-aarch64-static)")
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"sim", "--arch", "arm64", "--policy", "boost-arm64", "--trials", "2", "20", "00", "02", "8b"},
			[]string{"add x0, x1, x2", "B back to addr+4 = 0xffff800008010004", "boost CONFIRMED"}},
		{[]string{"sim", "--arch", "arm64", "--trials", "2", "20", "00", "40", "f9"},
			[]string{"BRK #6", "singlestep (hit path single-step) CONFIRMED"}},
		{[]string{"sim", "--arch", "arm64", "--trials", "2", "00", "00", "00", "10"},
			[]string{"emulate CONFIRMED"}},
		{[]string{"sim", "--arch", "arm64", "--trials", "2", "--force", "boost", "00", "00", "00", "10"},
			[]string{"REFUTED", "* x0"}},
		{[]string{"sim", "--arch", "arm64", "--policy", "boost-arm64", "--slot", "0xffff700000000000", "20", "00", "02", "8b"},
			[]string{"singlestep"}},
	} {
		out, stderr, code := run(t, tc.args...)
		if code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, code, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
	findings := filepath.Join(t.TempDir(), "f.jsonl")
	out, stderr, code := run(t, "fuzz", "--arch", "arm64", "--policy", "boost-arm64", "-n", "3000", "--json", "--out", findings)
	var sum map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &sum) != nil {
		t.Fatalf("fuzz: exit %d: %s %s", code, out, stderr)
	}
	if sum["cases"].(float64) != 3000 || sum["unsafe_boosts"].(float64) != 0 || sum["checks"].(float64) < 1000 || sum["arch"] != "arm64" {
		t.Errorf("fuzz summary: %s", out)
	}
}
