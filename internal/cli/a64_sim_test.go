//go:build linux

package cli

import (
	"os"
	"path/filepath"
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
	runSimCases(t, []simCase{
		{[]string{"sim", "--arch", "arm64", "--policy", "boost-arm64", "--trials", "2", "20", "00", "02", "8b"},
			[]string{"add x0, x1, x2", "B back to addr+4 = 0xffff800008010004", "boost CONFIRMED"}},
		{[]string{"sim", "--arch", "arm64", "--trials", "2", "20", "00", "40", "f9"},
			[]string{"BRK #6", "singlestep (hit path single-step) CONFIRMED"}},
		{[]string{"sim", "--arch", "arm64", "--trials", "2", "00", "00", "00", "10"},
			[]string{"emulate CONFIRMED"}},
		{[]string{"sim", "--arch", "arm64", "--trials", "2", "--path", "boost", "00", "00", "00", "10"},
			[]string{"REFUTED", "* x0"}},
		{[]string{"sim", "--arch", "arm64", "--policy", "boost-arm64", "--slot", "0xffff700000000000", "20", "00", "02", "8b"},
			[]string{"singlestep"}},
	}, nil)
	findings := filepath.Join(t.TempDir(), "f.jsonl")
	sum, out := runFuzzJSON(t, "fuzz", "--arch", "arm64", "--policy", "boost-arm64", "-n", "3000", "--json", "--out", findings)
	if sum["cases"].(float64) != 3000 || sum["unsafe_boosts"].(float64) != 0 || sum["checks"].(float64) < 1000 || sum["arch"] != "arm64" {
		t.Errorf("fuzz summary: %s", out)
	}
}
