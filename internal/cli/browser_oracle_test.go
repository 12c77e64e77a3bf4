package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kboost/kboost/internal/browser"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
)

// The pictures in a real browser: Debian's headless Chromium loads each page
// kind, reports no console error, and shows what kboost's own JSON says.

func startBrowser(t *testing.T) *browser.Browser {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs Debian's chromium, headless)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	b, err := browser.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// mustRun runs kboost and fails unless it exits 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := run(t, args...)
	if code != 0 {
		t.Fatalf("kboost %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// loadPage writes page to a file, loads it and fails on console errors.
func loadPage(t *testing.T, b *browser.Browser, name, page string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	loadURL(t, b, "file://"+path)
}

func loadURL(t *testing.T, b *browser.Browser, url string) {
	t.Helper()
	if _, err := b.Load(url, 30*time.Second); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Fatalf("%s: console errors:\n%s", url, strings.Join(errs, "\n"))
	}
}

func evalJS[T any](t *testing.T, b *browser.Browser, expr string) T {
	t.Helper()
	v, err := browser.Eval[T](b, expr)
	if err != nil {
		t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// gridCells reads every grid cell the page shows: key -> verdict, letter.
const gridCellsJS = `Array.from(document.querySelectorAll("g.cell")).map(function (g) { return [g.dataset.key, g.dataset.verdict, g.dataset.letter, g.dataset.class]; })`

type opcodesDoc struct {
	Maps map[string][]struct {
		Opcode, Kind, Verdict string
		Group                 map[string]string
	} `json:"maps"`
	Rows []struct {
		Cells []struct {
			Code string `json:"code"`
		} `json:"cells"`
	} `json:"rows"`
}

func opcodesJSON(t *testing.T, arch, policy string) *opcodesDoc {
	t.Helper()
	args := []string{"opcodes", "--arch", arch, "--json"}
	if policy != "" {
		args = append(args, "--policy", policy)
	}
	js := new(opcodesDoc)
	if err := json.Unmarshal([]byte(mustRun(t, args...)), js); err != nil {
		t.Fatal(err)
	}
	return js
}

func checkGridAgainstJSON(t *testing.T, arch string, cells [][]string) {
	t.Helper()
	got := map[string][]string{}
	for _, c := range cells {
		got[c[0]] = c[1:]
	}
	js := opcodesJSON(t, arch, "")
	want := 0
	for m, cs := range js.Maps {
		for _, c := range cs {
			want++
			g, ok := got[m+":"+c.Opcode]
			if !ok {
				t.Errorf("%s %s:%s: no cell in the page", arch, m, c.Opcode)
				continue
			}
			if g[0] != c.Verdict {
				t.Errorf("%s %s:%s: page verdict %q, JSON %q", arch, m, c.Opcode, g[0], c.Verdict)
			}
			if c.Kind != "op" && g[2] != c.Kind {
				t.Errorf("%s %s:%s: page kind %q, JSON %q", arch, m, c.Opcode, g[2], c.Kind)
			}
			distinct := map[string]bool{}
			for _, v := range c.Group {
				distinct[v] = true
			}
			if (g[1] == "g") != (len(distinct) > 1) {
				t.Errorf("%s %s:%s: letter %q, JSON group verdicts %v", arch, m, c.Opcode, g[1], c.Group)
			}
		}
	}
	for r, row := range js.Rows {
		for c, cell := range row.Cells {
			want++
			var key string
			for k := range got {
				if strings.HasSuffix(k, fmt.Sprintf(":%d:%d", r, c)) {
					key = k
				}
			}
			if g := got[key]; key == "" || g[1] != cell.Code {
				t.Errorf("%s row %d col %d: page %v, JSON code %q", arch, r, c, got[key], cell.Code)
			}
		}
	}
	if want == 0 || len(got) != want {
		t.Errorf("%s: %d cells in the page, %d in the JSON", arch, len(got), want)
	}
}

var pictureCases = []struct {
	arch  string
	insn  []string // explain and sim, with --words (no-op on x86)
	diff  string
	probe string
}{
	{arch: "x86-64", insn: []string{"48", "8b", "05", "10", "00", "00", "00"}, diff: "linux-6.1,uprobes-x86"},
	{arch: "arm64", insn: []string{"8b020020"}, diff: "linux-6.1-arm64,boost-arm64"},
	{arch: "thumb", insn: []string{"4408"}},
}

func TestBrowserPictures(t *testing.T) {
	b := startBrowser(t)
	for _, tc := range pictureCases {
		t.Run(tc.arch, func(t *testing.T) {
			// opcode grid, HTML and SVG
			loadPage(t, b, "opcodes.html", mustRun(t, "opcodes", "--arch", tc.arch, "--format", "html"))
			cells := evalJS[[][]string](t, b, gridCellsJS)
			checkGridAgainstJSON(t, tc.arch, cells)
			svg := mustRun(t, "opcodes", "--arch", tc.arch, "--format", "svg")
			parseXML(t, svg)
			loadPage(t, b, "opcodes.svg", svg)
			if n := evalJS[int](t, b, `document.documentElement.namespaceURI === "http://www.w3.org/2000/svg" && document.getElementsByTagName("parsererror").length === 0 ? document.querySelectorAll("g.cell").length : -1`); n != len(cells) {
				t.Errorf("SVG in the browser: %d cells, HTML %d", n, len(cells))
			}
			if tc.diff != "" && tc.arch == "x86-64" {
				loadPage(t, b, "diff.html", mustRun(t, "opcodes", "--arch", tc.arch, "--format", "html", "--diff", tc.diff))
				// a marked cell is one whose verdicts (plain form, or by /reg)
				// differ in the two policies' JSON
				marked := map[string]bool{}
				for _, k := range evalJS[[]string](t, b, `Array.from(document.querySelectorAll("g.cell")).filter(function (g) { return g.querySelector("rect.differs") !== null; }).map(function (g) { return g.dataset.key; })`) {
					marked[k] = true
				}
				pols := strings.Split(tc.diff, ",")
				j1, j2 := opcodesJSON(t, tc.arch, pols[0]), opcodesJSON(t, tc.arch, pols[1])
				n := 0
				for m, cs := range j1.Maps {
					for i, c := range cs {
						d := j2.Maps[m][i]
						want := c.Verdict != d.Verdict || c.Kind != d.Kind || !cmp.Equal(c.Group, d.Group)
						if want {
							n++
						}
						if marked[m+":"+c.Opcode] != want {
							t.Errorf("diff view %s:%s: marked %v, JSON %v vs %v", m, c.Opcode, marked[m+":"+c.Opcode], c, d)
						}
					}
				}
				if n == 0 {
					t.Errorf("diff %s: no differing cell", tc.diff)
				}
			}
			if tc.diff != "" && tc.arch != "x86-64" {
				// ARM: a cell is marked when its letter differs in the two
				// policies' JSON
				loadPage(t, b, "diff.html", mustRun(t, "opcodes", "--arch", tc.arch, "--format", "html", "--diff", tc.diff))
				marked := evalJS[[]bool](t, b, `Array.from(document.querySelectorAll("g.cell")).map(function (g) { return g.querySelector("rect.differs") !== null; })`)
				pols := strings.Split(tc.diff, ",")
				j1, j2 := opcodesJSON(t, tc.arch, pols[0]), opcodesJSON(t, tc.arch, pols[1])
				i, n := 0, 0
				for r, row := range j1.Rows {
					for c, cell := range row.Cells {
						want := cell.Code != j2.Rows[r].Cells[c].Code
						if want {
							n++
						}
						if i >= len(marked) || marked[i] != want {
							t.Errorf("diff view row %d col %d: marked %v, JSON %q vs %q", r, c, i < len(marked) && marked[i], cell.Code, j2.Rows[r].Cells[c].Code)
						}
						i++
					}
				}
				if n == 0 || i != len(marked) {
					t.Errorf("diff %s: %d differing cells, %d cells in the JSON, %d in the page", tc.diff, n, i, len(marked))
				}
			}
			// explain
			args := append([]string{"explain", "--arch", tc.arch, "--words"}, tc.insn...)
			var ex struct {
				Steps   []json.RawMessage `json:"steps"`
				Verdict string            `json:"verdict"`
			}
			if err := json.Unmarshal([]byte(mustRun(t, append(args, "--json")...)), &ex); err != nil {
				t.Fatal(err)
			}
			loadPage(t, b, "explain.html", mustRun(t, append(args, "--format", "html")...))
			if v := evalJS[string](t, b, `document.querySelector("#verdict [data-verdict]").dataset.verdict`); v != ex.Verdict {
				t.Errorf("explain page verdict %q, JSON %q", v, ex.Verdict)
			}
			if n := evalJS[int](t, b, `document.querySelectorAll("table.rules tr").length - 1`); n != len(ex.Steps) {
				t.Errorf("explain page: %d rules, JSON %d steps", n, len(ex.Steps))
			}
			parseXML(t, mustRun(t, append(args, "--format", "svg")...))
			// sim: the conclusion and the states
			sargs := append([]string{"sim", "--arch", tc.arch, "--trials", "2", "--words"}, tc.insn...)
			var sim struct {
				Conclusion string            `json:"conclusion"`
				Trials     []json.RawMessage `json:"shown_states"`
				JumpBack   string            `json:"jump_back"`
			}
			if err := json.Unmarshal([]byte(mustRun(t, append(sargs, "--json")...)), &sim); err != nil {
				t.Fatal(err)
			}
			loadPage(t, b, "sim.html", mustRun(t, append(sargs, "--format", "html")...))
			if c := evalJS[string](t, b, `document.getElementById("conclusion").textContent`); c != sim.Conclusion {
				t.Errorf("sim page conclusion %q, JSON %q", c, sim.Conclusion)
			}
			if n := evalJS[int](t, b, `document.querySelectorAll("div.trial").length`); n != len(sim.Trials) {
				t.Errorf("sim page: %d states, JSON %d", n, len(sim.Trials))
			}
			if n := evalJS[int](t, b, `document.querySelectorAll("ol.hitsteps li").length`); n < 4 {
				t.Errorf("sim page: %d hit steps", n)
			}
			if sim.JumpBack != "" {
				if n := evalJS[int](t, b, `document.querySelectorAll("path.jumpback").length`); n != 1 {
					t.Errorf("sim page: %d jump-back arrows (jump back to %s)", n, sim.JumpBack)
				}
			}
			parseXML(t, mustRun(t, append(sargs, "--format", "svg")...))
		})
	}
}

// checkReport loads an audit report and compares its counts with
// `audit --summary --json` of the same arguments.
func checkReport(t *testing.T, b *browser.Browser, args ...string) {
	t.Helper()
	page := mustRun(t, append(append([]string{"audit"}, args...), "--format", "html")...)
	var sum struct {
		Functions   int            `json:"functions"`
		Boundaries  int            `json:"boundaries"`
		Optimizable int            `json:"optimizable"`
		Errors      int            `json:"errors"`
		Verdicts    map[string]int `json:"verdicts"`
		Errnos      map[string]int `json:"errnos"`
		Rules       map[string]int `json:"rules"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, append(append([]string{"audit"}, args...), "--summary", "--json")...)), &sum); err != nil {
		t.Fatal(err)
	}
	loadPage(t, b, "audit.html", page)
	if evalJS[string](t, b, `document.body.dataset.ready`) != "1" {
		t.Fatal("the report's script did not finish")
	}
	counts := evalJS[map[string]map[string]int](t, b, `(function () {
		function read(sel, attr) { var m = {}; document.querySelectorAll(sel).forEach(function (e) { m[e.getAttribute(attr)] = parseInt(e.textContent, 10); }); return m; }
		return {totals: read("[data-count]", "data-count"), verdicts: read("#verdicts [data-verdict]", "data-verdict"),
			errnos: read("#errnos [data-errno]", "data-errno"), rules: read("#rules [data-rule]", "data-rule")};
	})()`)
	want := map[string]map[string]int{
		"totals":   {"functions": sum.Functions, "boundaries": sum.Boundaries, "optimizable": sum.Optimizable, "errors": sum.Errors},
		"verdicts": sum.Verdicts, "errnos": sum.Errnos, "rules": sum.Rules,
	}
	if d := cmp.Diff(want, counts); d != "" {
		t.Errorf("report counts differ from audit --summary --json (-summary +page):\n%s", d)
	}
	// the searchable list and a listing
	if n := evalJS[int](t, b, `document.querySelectorAll("#ftable tr").length`); n != min(sum.Functions, 300) {
		t.Errorf("function list: %d rows, want %d", n, min(sum.Functions, 300))
	}
	name := evalJS[string](t, b, `(function () { var a = document.querySelector("#ftable a.fn"); a.click(); return a.textContent; })()`)
	rows := evalJS[int](t, b, `document.querySelectorAll("#listing table tr").length - 1`)
	var lines int
	for _, l := range strings.Split(mustRun(t, append(append([]string{"audit"}, args...), "--json")...), "\n") {
		var rec struct {
			Func string `json:"func"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Func == name {
			lines++
		}
	}
	if rows != min(lines, 5000) || rows == 0 {
		t.Errorf("listing of %s: %d rows, audit --json has %d boundaries", name, rows, lines)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Errorf("console errors after clicking: %v", errs)
	}
}

func TestBrowserAuditReport(t *testing.T) {
	b := startBrowser(t)
	t.Run("x86-64", func(t *testing.T) { checkReport(t, b) })
	t.Run("arm64", func(t *testing.T) {
		deb, ks := debianARM64(t)
		checkReport(t, b, deb, "--symbols", ks, "--policy", "linux-6.1-arm64", "--func", "vfs_*")
	})
	t.Run("thumb", func(t *testing.T) { checkReport(t, b, thumbELF(t)) })
}

// thumbELF assembles and links a small Thumb-2 executable (EM_ARM, with
// the mapping symbols as assembles them) with GNU binutils for ARM.
func thumbELF(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "t.s")
	os.WriteFile(src, []byte(`	.syntax unified
	.thumb
	.text
	.global f_add
	.type f_add, %function
	.thumb_func
f_add:
	push {r4, lr}
	adds r0, r0, r1
	cmp r0, #10
	it gt
	movgt r0, #10
	ldr r4, [r1, #4]
	bl f_leaf
	pop {r4, pc}
	.size f_add, .-f_add
	.global f_leaf
	.type f_leaf, %function
	.thumb_func
f_leaf:
	mov.w r2, #0x1000
	add r0, r0, r2
	bx lr
	.size f_leaf, .-f_leaf
`), 0o644)
	obj, bin := filepath.Join(dir, "t.o"), filepath.Join(dir, "thumb.elf")
	for _, c := range [][]string{{"arm-linux-gnueabi-as", "-march=armv7-a", "-o", obj, src}, {"arm-linux-gnueabi-ld", "-e", "f_add", "-o", bin, obj}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s (scripts/setup.sh installs binutils-arm-linux-gnueabi)", c, err, out)
		}
	}
	return bin
}

var arm64Files struct {
	sync.Once
	img, kallsyms string
	err           error
}

// debianARM64 is Debian's arm64 kernel Image and kallsyms, from the cache when
// an earlier run left them there (asking apt for the newest version takes
// ~25 s each), else fetched.
func debianARM64(t *testing.T) (img, kallsyms string) {
	t.Helper()
	arm64Files.Do(func() {
		imgs, _ := filepath.Glob(filepath.Join(kimage.CacheDir(), "vmlinux", "linux-image-*-arm64_*_arm64.image"))
		kss, _ := filepath.Glob(filepath.Join(kimage.CacheDir(), "kallsyms", "linux-image-*-arm64_*_arm64.txt"))
		if len(imgs) > 0 && len(kss) > 0 {
			sort.Strings(imgs)
			sort.Strings(kss)
			img, ks := imgs[len(imgs)-1], kss[len(kss)-1]
			if strings.TrimSuffix(filepath.Base(img), ".image") == strings.TrimSuffix(filepath.Base(ks), ".txt") {
				arm64Files.img, arm64Files.kallsyms = img, ks
				return
			}
		}
		arm64Files.img, arm64Files.kallsyms = fetchARM64(t)
	})
	if arm64Files.img == "" {
		t.Fatal("no arm64 kernel")
	}
	return arm64Files.img, arm64Files.kallsyms
}

func fetchARM64(t *testing.T) (deb, kallsyms string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-arm64")
	if err != nil {
		t.Fatal(err)
	}
	// the Image, decompressed once into the cache: opening the .deb would
	// decompress it each time
	img := filepath.Join(kimage.CacheDir(), "vmlinux", strings.TrimSuffix(filepath.Base(deb), ".deb")+".image")
	if _, err := os.Stat(img); err != nil {
		dk, err := kimage.ReadDeb(deb)
		if err != nil {
			t.Fatal(err)
		}
		raw := dk.Vmlinuz
		if kimage.IsGzipARM64Image(raw) {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if raw, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if err := writeAtomic(img, raw); err != nil {
			t.Fatal(err)
		}
	}
	deb = img
	if kallsyms, err = vm.DebianKallsyms(ctx, "linux-image-arm64"); err != nil {
		t.Fatal(err)
	}
	return deb, kallsyms
}

// TestBrowserExplorer clicks through `kboost serve`: a function, then an
// instruction, whose page must show the verdict the listing showed.
func TestBrowserExplorer(t *testing.T) {
	b := startBrowser(t)
	for _, tc := range []struct {
		name string
		args []string
		fn   string
	}{{name: "x86-64"}, {name: "arm64", fn: "vfs_read"}, {name: "thumb", fn: "f_add"}} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.name == "thumb" {
				args = []string{thumbELF(t)}
			}
			if tc.name == "arm64" {
				deb, ks := debianARM64(t)
				args = []string{deb}
				ex, err := openExplorer(args, ks, "")
				if err != nil {
					t.Fatal(err)
				}
				clickThrough(t, b, ex, tc.fn)
				return
			}
			ex, err := openExplorer(args, "", "")
			if err != nil {
				t.Fatal(err)
			}
			clickThrough(t, b, ex, tc.fn)
		})
	}
}

func clickThrough(t *testing.T, b *browser.Browser, ex *explorer, fn string) {
	t.Helper()
	defer ex.f.Close()
	srv := httptest.NewServer(ex.handler())
	defer srv.Close()
	loadURL(t, b, srv.URL+"/?q="+fn)
	if err := b.Click("#funcs a.fn", "table#listing", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Fatalf("function page: console errors %v", errs)
	}
	row := evalJS[[]string](t, b, `(function () { var r = document.querySelectorAll("#listing tr.insn")[1]; return [r.dataset.off, r.querySelector("[data-verdict]").dataset.verdict, r.querySelector("a.insn").getAttribute("href")]; })()`)
	if err := b.Click(`#listing a.insn[href="`+row[2]+`"]`, "#verdict", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if errs := b.Errors(); len(errs) > 0 {
		t.Fatalf("instruction page: console errors %v", errs)
	}
	got := evalJS[[]string](t, b, `[document.querySelector("#verdict [data-verdict]").dataset.verdict, document.querySelector("h1").textContent, String(document.querySelectorAll("table.rules tr").length - 1)]`)
	if got[0] != row[1] {
		t.Errorf("instruction %s: page verdict %q, listing %q", row[0], got[0], row[1])
	}
	if !strings.Contains(got[1], row[0]) || got[2] == "0" {
		t.Errorf("instruction page for %s: title %q, %s rules", row[0], got[1], got[2])
	}
}
