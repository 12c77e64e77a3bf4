//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/campaign"
	"github.com/kboost/kboost/kernelsim/fuzz"
)

// TestSimThumbBadInput checks the Thumb-specific usage errors (no
// emulator needed: they are refused before it starts).
func TestSimThumbBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--arch", "thumb", "01"}, "a Thumb instruction is 2 or 4 bytes"},
		{[]string{"sim", "--arch", "thumb", "01", "eb"}, "a 32-bit Thumb instruction needs a second halfword"},
		{[]string{"sim", "--arch", "thumb", "--it", "eq", "10", "b1"}, "cannot be the last instruction of an IT block"},
		{[]string{"sim", "--arch", "thumb", "--it", "xx", "88", "18"}, "--it \"xx\""},
		{[]string{"sim", "--arch", "arm", "--it", "eq", "02", "00", "81", "e0"}, "--it is for --arch thumb"},
		{[]string{"sim", "--arch", "thumb", "--addr", "0xc0100001", "88", "18"}, "2-byte aligned"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestSimFuzzThumb runs `kboost sim --arch thumb` on instructions whose
// outcome the architecture decides (adds: emulated in the kernel's slot
// and confirmed, also inside an IT block where it sets no flags; adr and
// ldr literal: simulated with PC = Align(addr+4, 4), confirmed, refuted
// from a slot without the fix-up; bl: simulated; push: STMDB r9! in the
// slot), and a short `kboost fuzz --arch thumb`.
func TestSimFuzzThumb(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-arm-static)")
	}
	runSimCases(t, []simCase{
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "88", "18"},
			[]string{"70 47", "singlestep (hit path single-step) CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "3", "--it", "eq", "88", "18"},
			[]string{"ends an IT eq block", "CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "--path", "boost", "88", "18"},
			[]string{"CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "01", "a0"},
			[]string{"emulate CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "--path", "boost", "01", "a0"},
			[]string{"REFUTED", "* r0"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "--addr", "0xc0100002", "01", "48"},
			[]string{"emulate CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "00", "f0", "02", "f8"},
			[]string{"emulate CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "--path", "boost", "00", "f0", "02", "f8"},
			[]string{"REFUTED", "* lr"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "10", "b5"},
			[]string{"29 e9 10 01", "CONFIRMED"}},
		{[]string{"sim", "--arch", "thumb", "--trials", "2", "01", "eb", "02", "00"},
			[]string{"CONFIRMED"}},
	}, nil)
	sum, _ := runFuzzJSON(t, "fuzz", "--arch", "thumb", "-n", "2000", "--json")
	if sum["policy"] != "linux-6.1-thumb" || sum["arch"] != "thumb" || sum["checks"].(float64) < 1000 || sum["slot_problems"].(float64) != 0 {
		t.Errorf("fuzz summary: policy %v, checks %v, slot problems %v", sum["policy"], sum["checks"], sum["slot_problems"])
	}
}

// TestOracleFuzzThumb is the Thumb differential fuzz of issue 5: 200,000
// cases of `kboost fuzz --arch thumb` under linux-6.1-thumb, every
// emulated or simulated hit checked against the instruction run in place
// under qemu-arm. The policy's slots must all be the kernel's
// [insn, bx lr] (0 slot-model problems); divergences are findings about
// the kernel (each with a reproducer and the sim flags that place it),
// logged here. KBOOST_THUMB_FUZZ_N overrides the case count.
func TestOracleFuzzThumb(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-arm-static for a few minutes)")
	}
	n := "200000"
	if v := os.Getenv("KBOOST_THUMB_FUZZ_N"); v != "" {
		n = v
	}
	findings := filepath.Join(t.TempDir(), "thumb.jsonl")
	start := time.Now()
	out, stderr, code := run(t, "fuzz", "--arch", "thumb", "-n", n, "--json", "--quiet", "--out", findings)
	if code != 0 {
		t.Fatalf("fuzz: exit %d: %s", code, stderr)
	}
	var sum struct {
		fuzz.Stats
		Arch, Policy string
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("fuzz --json: %v\n%s", err, out)
	}
	t.Logf("%d cases, %d checks in %v (%.0f checks/s): verdicts %v; kernel divergences %d, not verifiable %d, inconclusive %d, nondeterministic %d, unreproducible %d, distinct findings %d",
		sum.Cases, sum.Checks, time.Since(start).Round(time.Second), sum.ChecksPerSecond, sum.Verdicts, sum.PolicyDivergences, sum.NotVerifiable, sum.Inconclusive,
		sum.Nondeterministic, sum.Unreproducible, sum.FindingKeys)
	if sum.Policy != "linux-6.1-thumb" || sum.Arch != "thumb" || n == "200000" && sum.Cases != 200000 {
		t.Errorf("summary: %s", out)
	}
	if sum.SlotProblems != 0 {
		t.Errorf("%d slot-model problems: the policy's slot is not [insn, bx lr]", sum.SlotProblems)
	}
	// every executed case is checked on 3 states; at least half the cases
	// are executed (the others are refused by the policy)
	if sum.Checks < sum.Cases {
		t.Errorf("only %d checks for %d cases", sum.Checks, sum.Cases)
	}
	// the findings file: the campaign's header, findings, checkpoints
	st, err := campaign.Load(findings)
	if err != nil {
		t.Fatal(err)
	}
	if st.Header.Arch != "thumb" || st.Header.Cases != sum.Cases {
		t.Errorf("findings file header %+v, want thumb and %d cases", st.Header, sum.Cases)
	}
	kinds := map[string]int{}
	for i := range st.Findings {
		fd := &st.Findings[i]
		kinds[fd.Kind]++
		if fd.Kind == "policy-divergence" && (fd.Reproducer == nil || fd.Reproducer.Bytes == "" || !strings.Contains(fd.Note, "kboost sim --arch thumb")) {
			t.Errorf("finding %s without a reproducer: %+v", fd.Key, fd)
		}
		t.Logf("%s %s (%s) %s: %s; %s", fd.Kind, fd.Bytes, fd.Asm, strconv.Itoa(fd.DivergedTrials)+"/"+strconv.Itoa(fd.Trials)+" diverged", fd.Key, fd.Note)
	}
	if kinds["slot-model"] != 0 {
		t.Errorf("%d slot-model findings", kinds["slot-model"])
	}
}
