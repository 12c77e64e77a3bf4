package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAuditHeatBySource: the audit report's subsystems are the source
// directories of a -g C program built from three directories (the functions
// are where this test wrote them), the functions without line tables (the C
// runtime's) are counted apart, and all add up to audit --summary's count.
// In Chromium, a click on a directory lists its functions. A file without
// DWARF (the demo) falls back to symbol prefixes and says why.
func TestAuditHeatBySource(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (builds a C program with gcc -g)")
	}
	dir := t.TempDir()
	files := map[string]string{
		"main.c":         "int twice(int); int thrice(int); int deep(int);\nint main(int c, char **v) { (void)v; return twice(c) + thrice(c) + deep(c); }\n",
		"lib/util.c":     "int twice(int x) { return 2 * x; }\nint thrice(int x) { return 3 * x; }\n",
		"lib/sub/deep.c": "int deep(int x) { return x > 3 ? deep(x - 1) + 1 : x; }\n",
	}
	for n, src := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, n)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("gcc", "-g", "-O1", "-o", "prog", "main.c", "lib/util.c", "lib/sub/deep.c")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v: %s", err, out)
	}
	prog := filepath.Join(dir, "prog")
	page := mustRun(t, "audit", prog, "--format", "html")
	var sum struct {
		Functions int `json:"functions"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "audit", prog, "--summary", "--json")), &sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, `<span id="groupby">source directory`) {
		t.Errorf("report of a -g build: not grouped by source directory")
	}
	tiles := map[string]int{}
	total := 0
	for _, m := range regexp.MustCompile(`data-prefix="([^"]*)" data-group="\d+"[^>]*title="[^"]*: (\d+) functions`).FindAllStringSubmatch(page, -1) {
		n, _ := strconv.Atoi(m[2])
		tiles[m[1]] = n
		total += n
	}
	for d, n := range map[string]int{".": 1, "lib": 2, "lib/sub": 1} {
		if tiles[d] != n {
			t.Errorf("subsystem %q: %d functions, want %d (tiles %v)", d, tiles[d], n, tiles)
		}
	}
	if total != sum.Functions || tiles["(no line table)"] == 0 || len(tiles) != 4 {
		t.Errorf("tiles %v: %d functions, audit --summary %d; want the C runtime's under (no line table)", tiles, total, sum.Functions)
	}
	// in the browser, a click on the lib tile lists lib's functions
	b := startBrowser(t)
	loadPage(t, b, "audit.html", page)
	names := evalJS[[]string](t, b, `(function () { document.querySelector('#heat .tile[data-prefix="lib"]').click(); return Array.from(document.querySelectorAll("#ftable a.fn")).map(function (a) { return a.textContent; }).sort(); })()`)
	if strings.Join(names, " ") != "thrice twice" {
		t.Errorf("click on lib: functions %v, want thrice and twice", names)
	}
	demo := mustRun(t, "audit", "--format", "html")
	if !strings.Contains(demo, `<span id="groupby">symbol prefix`) || !strings.Contains(demo, "no DWARF line tables") || strings.Contains(demo, "data-group=") {
		t.Errorf("report of the demo (no DWARF): not the symbol-prefix heat map with its reason")
	}
}
