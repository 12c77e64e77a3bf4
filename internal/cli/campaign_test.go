package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// smallSamples points kboost's cache at a directory whose only "vmlinux"
// is /bin/true, so that fuzz start-up samples a few thousand instructions
// instead of a kernel's (the case mix is the same).
func smallSamples(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("runs x86-64 on the CPU")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "vmlinux"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/bin/true", filepath.Join(dir, "vmlinux", "true.elf")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// counts drops what depends on time and place from a fuzz --json summary
// or checkpoint: what is left must be equal for equal campaigns.
func counts(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for _, k := range []string{"elapsed_seconds", "checks_per_second", "cases_per_second", "cpu_seconds", "checks_per_cpu_second",
		"interrupted", "shard", "merged_shards", "emulator"} {
		delete(m, k)
	}
	return m
}

// findingLines returns the finding records of a findings file, in order,
// failing the test on any line that is not whole JSON.
func findingLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends in a partial line: %q", path, b[max(0, len(b)-80):])
	}
	var out []string
	for i, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("%s:%d: %v: %q", path, i+1, err, l)
		}
		if rec["record"] == nil {
			out = append(out, l)
		}
	}
	return out
}

func diffCounts(a, b map[string]any) []string {
	var d []string
	for k := range a {
		if fmt.Sprint(a[k]) != fmt.Sprint(b[k]) {
			d = append(d, fmt.Sprintf("%s: %v vs %v", k, a[k], b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: missing vs %v", k, b[k]))
		}
	}
	sort.Strings(d)
	return d
}

// TestFuzzShardsMerge: the four shards of a campaign, merged, are the
// unsharded campaign: the same counts and the same findings, in the same
// order; merging their --json summaries gives the same counts but for
// distinct_findings, which is summed there. For x86-64 and for i386 (on
// the path i386Path says).
func TestFuzzShardsMerge(t *testing.T) {
	t.Setenv("KBOOST_CACHE", smallSamples(t))
	for _, arch := range []string{"x86-64", "i386"} {
		t.Run(arch, func(t *testing.T) { fuzzShardsMerge(t, arch) })
	}
}

func fuzzShardsMerge(t *testing.T, arch string) {
	dir := t.TempDir()
	const n = "1500"
	stable := stableTimeout(t, arch)
	fuzz := func(out string, extra ...string) []byte {
		t.Helper()
		args := append([]string{"fuzz", "--arch", arch, "-n", n, "--seed", "11", "--json", "--quiet", "--out", out}, stable...)
		stdout, stderr, code := run(t, append(args, extra...)...)
		if code != 0 {
			t.Fatalf("fuzz %v: exit %d: %s", extra, code, stderr)
		}
		return []byte(stdout)
	}
	whole := filepath.Join(dir, "whole.jsonl")
	wholeOut := fuzz(whole)
	if arch == "i386" {
		var sum map[string]any
		json.Unmarshal(wholeOut, &sum)
		wantI386Emulator(t, i386Path(t), sum)
	}
	want := counts(t, wholeOut)
	var files, sums []string
	for k := range 4 {
		f := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", k))
		s := filepath.Join(dir, fmt.Sprintf("s%d.json", k))
		if err := os.WriteFile(s, fuzz(f, "--shard", fmt.Sprintf("%d/4", k)), 0o644); err != nil {
			t.Fatal(err)
		}
		files, sums = append(files, f), append(sums, s)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	stdout, stderr, code := run(t, append([]string{"merge", "--json", "-o", merged}, files...)...)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	if d := diffCounts(want, counts(t, []byte(stdout))); len(d) > 0 {
		t.Errorf("merged shards' counts differ from the unsharded run's: %v", d)
	}
	if w, m := findingLines(t, whole), findingLines(t, merged); !slices.Equal(w, m) {
		t.Errorf("merged findings differ: %d unsharded, %d merged", len(w), len(m))
	} else if len(w) == 0 {
		t.Errorf("no findings to compare")
	}
	stdout, stderr, code = run(t, append([]string{"merge"}, sums...)...)
	if code != 0 {
		t.Fatalf("merge summaries: exit %d: %s", code, stderr)
	}
	got := counts(t, []byte(stdout))
	if got["distinct_findings"].(float64) < want["distinct_findings"].(float64) {
		t.Errorf("summed distinct_findings %v < %v", got["distinct_findings"], want["distinct_findings"])
	}
	delete(got, "distinct_findings")
	w2 := maps2(want)
	delete(w2, "distinct_findings")
	if d := diffCounts(w2, got); len(d) > 0 {
		t.Errorf("merged summaries' counts differ from the unsharded run's: %v", d)
	}
	// resuming a finished campaign runs nothing and reports its totals; a
	// flag that contradicts the campaign's header is a usage mistake
	stdout, stderr, code = run(t, "fuzz", "--resume", whole, "--json", "--quiet")
	if code != 0 {
		t.Fatalf("resume of a finished campaign: exit %d: %s", code, stderr)
	} else if d := diffCounts(want, counts(t, []byte(stdout))); len(d) > 0 {
		t.Errorf("resume of a finished campaign: %v", d)
	}
	if _, stderr, code := run(t, "fuzz", "--resume", whole, "--seed", "12"); code != 2 || !strings.Contains(stderr, "has --seed 11") {
		t.Errorf("resume with another --seed: exit %d: %s", code, stderr)
	}
	// a shard given twice, or shards of another campaign, are refused
	if _, stderr, code := run(t, "merge", files[0], files[0]); code != 1 || !strings.Contains(stderr, "shard 0/4 is in both") {
		t.Errorf("merge of one shard twice: exit %d: %s", code, stderr)
	}
	if _, stderr, code := run(t, "merge", files[0], sums[1]); code != 2 {
		t.Errorf("merge of a findings file and a summary: exit %d: %s", code, stderr)
	}
}

func maps2(m map[string]any) map[string]any {
	o := map[string]any{}
	for k, v := range m {
		o[k] = v
	}
	return o
}

// TestShardUsage: --shard takes K/N with 0 <= K < N; anything else is a
// usage mistake (exit 2) naming the form.
func TestShardUsage(t *testing.T) {
	for _, bad := range []string{"4/4", "1", "-1/2", "0/0", "a/b", "1/2/3"} {
		for _, cmd := range [][]string{{"fuzz", "-n", "64"}, {"audit"}} {
			_, stderr, code := run(t, append(cmd, "--shard", bad)...)
			if code != 2 || !strings.Contains(stderr, "--shard") {
				t.Errorf("%s --shard %s: exit %d: %s", cmd[0], bad, code, stderr)
			}
		}
	}
	f := filepath.Join(t.TempDir(), "x.jsonl")
	os.WriteFile(f, []byte(`{"kind":"length"}`+"\n"), 0o644)
	if _, stderr, code := run(t, "fuzz", "--resume", f); code != 1 || !strings.Contains(stderr, "not a kboost fuzz findings file") {
		t.Errorf("--resume of a file without a header: exit %d: %s", code, stderr)
	}
}

// TestAuditShards: the four shards of an audit of the demo program are,
// together, the unsharded audit's records, each once.
func TestAuditShards(t *testing.T) {
	lines := func(args ...string) []string {
		stdout, stderr, code := run(t, append([]string{"audit", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("audit %v: exit %d: %s", args, code, stderr)
		}
		return strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	}
	want := lines()
	var got []string
	nonEmpty := 0
	for k := range 4 {
		ls := lines("--shard", fmt.Sprintf("%d/4", k))
		if len(ls) > 0 && ls[0] != "" {
			got = append(got, ls...)
			nonEmpty++
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(want, got) {
		t.Errorf("shards' records differ from the unsharded audit's: %d vs %d records", len(got), len(want))
	}
	if nonEmpty < 2 {
		t.Errorf("only %d of 4 shards have functions", nonEmpty)
	}
}

// TestAuditShardSummaries: merging the --summary --json of an audit's four
// shards gives the unsharded audit's summary (but the time taken).
func TestAuditShardSummaries(t *testing.T) {
	dir := t.TempDir()
	summary := func(args ...string) string {
		stdout, stderr, code := run(t, append([]string{"audit", "--summary", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("audit %v: exit %d: %s", args, code, stderr)
		}
		return stdout
	}
	var files []string
	for k := range 4 {
		f := filepath.Join(dir, fmt.Sprintf("a%d.json", k))
		if err := os.WriteFile(f, []byte(summary("--shard", fmt.Sprintf("%d/4", k))), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	stdout, stderr, code := run(t, append([]string{"merge"}, files...)...)
	if code != 0 {
		t.Fatalf("merge: exit %d: %s", code, stderr)
	}
	want, got := counts(t, []byte(summary())), counts(t, []byte(stdout))
	delete(want, "seconds")
	delete(got, "seconds")
	if d := diffCounts(want, got); len(d) > 0 {
		t.Errorf("merged audit summaries differ from the unsharded audit's: %v", d)
	}
}
