//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
)

// TestOracleDiffVersionTable: the README's table of what changes between
// Debian's amd64 kernels is what `kboost diff` computes from the packages
// (their kallsyms from one boot each, cached).
func TestOracleDiffVersionTable(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's 6.1, 6.12 and 7.2 amd64 kernels, boots each once)")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| ([0-9.]+) → ([0-9.]+) \| ([0-9,]+) \| ([0-9,]+) \| ([0-9,]+) \|`)
	rows := row.FindAllStringSubmatch(string(readme), -1)
	if len(rows) != 2 {
		t.Fatalf("%d version rows in the README, want 6.1 → 6.12 and 6.12 → 7.2", len(rows))
	}
	ctx := context.Background()
	kernel := func(upstream string) (deb, syms string) {
		t.Helper()
		v := upstream[:strings.LastIndexByte(upstream, '.')] // 6.12.117 -> 6.12
		var err error
		if v == "6.1" {
			deb, err = kimage.FetchDebianKernel(ctx, "linux-image-amd64")
		} else {
			deb, err = kimage.FetchDebianKernelVersion(ctx, "linux-image-amd64", v)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(deb, "_"+upstream) {
			t.Fatalf("Debian's %s package is now %s: rerun kboost diff and update the README's version table", v, deb)
		}
		if syms, err = vm.DebKallsyms(ctx, deb, vm.Config{}); err != nil {
			t.Fatal(err)
		}
		return deb, syms
	}
	num := func(s string) int {
		n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, r := range rows {
		debA, symA := kernel(r[1])
		debB, symB := kernel(r[2])
		out, stderr, code := run(t, "diff", "--json", "--summary", debA, debB, "--symbols", symA+","+symB)
		if code != 0 {
			t.Fatalf("diff %s %s: exit %d: %s", r[1], r[2], code, stderr)
		}
		var sum struct {
			Compared, Matched, Changed int
		}
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if sum.Compared != num(r[3]) || sum.Matched != num(r[4]) || sum.Changed != num(r[5]) {
			t.Errorf("%s → %s: diff gives %d functions, %d points, %d changed; the README says %s, %s, %s", r[1], r[2], sum.Compared, sum.Matched, sum.Changed, r[3], r[4], r[5])
		}
		t.Logf("%s → %s: %d functions, %d points matched, %d changed", r[1], r[2], sum.Compared, sum.Matched, sum.Changed)
	}
}
