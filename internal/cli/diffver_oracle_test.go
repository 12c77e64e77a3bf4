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

// TestOracleDiffVersionTable: the README's tables of what changes between
// Debian's amd64 kernels and between its arm64 kernels are what `kboost diff`
// computes from the packages (their kallsyms from one boot each, cached).
func TestOracleDiffVersionTable(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's 6.1, 6.12 and 7.2 amd64 and arm64 kernels, boots each once)")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// Each table starts with a "| Debian ARCH |" header; its rows follow.
	header := regexp.MustCompile(`(?m)^\| Debian (amd64|arm64) \|`)
	row := regexp.MustCompile(`(?m)^\| ([0-9.]+) → ([0-9.]+) \| ([0-9,]+) \| ([0-9,]+) \| ([0-9,]+) \|`)
	type versionRow struct{ arch, a, b, funcs, points, changed string }
	var rows []versionRow
	hs := header.FindAllStringSubmatchIndex(string(readme), -1)
	for i, h := range hs {
		end := len(readme)
		if i+1 < len(hs) {
			end = hs[i+1][0]
		}
		arch := string(readme[h[2]:h[3]])
		for _, r := range row.FindAllStringSubmatch(string(readme[h[1]:end]), -1) {
			rows = append(rows, versionRow{arch, r[1], r[2], r[3], r[4], r[5]})
		}
	}
	count := map[string]int{}
	for _, r := range rows {
		count[r.arch]++
	}
	if count["amd64"] != 2 || count["arm64"] < 1 {
		t.Fatalf("version rows in the README: %v, want amd64 6.1 → 6.12 and 6.12 → 7.2, and arm64's", count)
	}
	ctx := context.Background()
	kernel := func(arch, upstream string) (deb, syms string) {
		t.Helper()
		v := upstream[:strings.LastIndexByte(upstream, '.')] // 6.12.117 -> 6.12
		meta := "linux-image-" + arch
		var err error
		if v == "6.1" {
			deb, err = kimage.FetchDebianKernel(ctx, meta)
		} else {
			deb, err = kimage.FetchDebianKernelVersion(ctx, meta, v)
		}
		if err != nil {
			t.Fatal(err)
		}
		if syms, err = vm.DebKallsyms(ctx, deb, vm.Config{}); err != nil {
			t.Fatal(err)
		}
		return deb, syms
	}
	// debUpstream is the upstream version in a package's file name
	// (linux-image-6.12.118+deb12-amd64_6.12.118-1~deb12u1_amd64.deb -> 6.12.118).
	debUpstream := regexp.MustCompile(`_([0-9]+\.[0-9]+\.[0-9]+)[-+~]`)
	upstreamOf := func(deb string) string {
		if m := debUpstream.FindStringSubmatch(deb); m != nil {
			return m[1]
		}
		return deb
	}
	num := func(s string) int {
		n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, r := range rows {
		debA, symA := kernel(r.arch, r.a)
		debB, symB := kernel(r.arch, r.b)
		out, stderr, code := run(t, "diff", "--json", "--summary", debA, debB, "--symbols", symA+","+symB)
		if code != 0 {
			t.Fatalf("diff %s %s %s: exit %d: %s", r.arch, r.a, r.b, code, stderr)
		}
		var sum struct {
			Compared, Matched, Changed int
		}
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		// When Debian has moved on, the row is recomputed for the packages it
		// serves now and the failure prints the row to put in the README.
		ua, ub := upstreamOf(debA), upstreamOf(debB)
		if ua != r.a || ub != r.b || sum.Compared != num(r.funcs) || sum.Matched != num(r.points) || sum.Changed != num(r.changed) {
			t.Errorf("Debian %s %s → %s: the README says %s, %s, %s; Debian's packages now give | %s → %s | %s | %s | %s | (update the row and its notes)",
				r.arch, r.a, r.b, r.funcs, r.points, r.changed, ua, ub, commas(sum.Compared), commas(sum.Matched), commas(sum.Changed))
		}
		t.Logf("%s %s → %s: %d functions, %d points matched, %d changed", r.arch, r.a, r.b, sum.Compared, sum.Matched, sum.Changed)
	}
}

// commas writes n with thousands separators, as the README's tables do.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
