//go:build linux

package cli

import (
	"os"
	"testing"
)

// TestSimFuzzA32 runs `kboost sim --arch arm` on words whose outcome the
// architecture decides (add: emulated in the kernel's slot, confirmed, and
// PC-free, so also confirmed run verbatim out of line; adr r0, . and
// ldr r0, [pc, #4]: confirmed through the kernel's handler, which passes
// PC = addr+8, refuted from a slot without the fix-up; bl: simulated), and
// a short `kboost fuzz --arch arm`.
func TestSimFuzzA32(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-arm-static)")
	}
	runSimCases(t, []simCase{
		{[]string{"sim", "--arch", "arm", "--trials", "2", "02", "00", "81", "e0"},
			[]string{"add\tr0, r1, r2", "mov\tpc, lr", "singlestep (hit path single-step) CONFIRMED"}},
		{[]string{"sim", "--arch", "arm", "--trials", "2", "--path", "boost", "02", "00", "81", "e0"},
			[]string{"CONFIRMED"}},
		{[]string{"sim", "--arch", "arm", "--trials", "2", "08", "00", "4f", "e2"},
			[]string{"sub\tr0, r2, #8", "CONFIRMED"}},
		{[]string{"sim", "--arch", "arm", "--trials", "2", "--path", "boost", "08", "00", "4f", "e2"},
			[]string{"REFUTED", "* r0"}},
		{[]string{"sim", "--arch", "arm", "--trials", "2", "04", "00", "9f", "e5"},
			[]string{"CONFIRMED"}},
		{[]string{"sim", "--arch", "arm", "--trials", "2", "--path", "boost", "04", "00", "9f", "e5"},
			[]string{"REFUTED"}},
		{[]string{"sim", "--arch", "arm", "--trials", "2", "02", "00", "00", "eb"},
			[]string{"emulate CONFIRMED"}},
	}, nil)
	sum, _ := runFuzzJSON(t, "fuzz", "--arch", "arm", "-n", "2000", "--json")
	if sum["policy"] != "linux-6.1-arm" || sum["checks"].(float64) < 1000 || sum["slot_problems"].(float64) != 0 {
		t.Errorf("fuzz summary: policy %v, checks %v, slot problems %v", sum["policy"], sum["checks"], sum["slot_problems"])
	}
}
