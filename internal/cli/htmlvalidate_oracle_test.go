package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every page kind passes html-validate, an HTML validator library independent
// of Chromium's forgiving parser (npm package, pinned in
// internal/render/testdata/validator, installed by scripts/setup.sh with npm
// ci; its rule set is in .htmlvalidate.json there).

// validatorDir is where scripts/setup.sh installs html-validate.
func validatorDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs the html-validate npm package under node)")
	}
	dir, err := filepath.Abs("../render/testdata/validator")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "html-validate", "package.json")); err != nil {
		t.Fatalf("html-validate is not installed in %s: run scripts/setup.sh (npm ci there)", dir)
	}
	return dir
}

type validateReport []struct {
	FilePath string `json:"filePath"`
	Messages []struct {
		RuleID   string `json:"ruleId"`
		Severity int    `json:"severity"`
		Message  string `json:"message"`
		Line     int    `json:"line"`
		Column   int    `json:"column"`
	} `json:"messages"`
	ErrorCount   int `json:"errorCount"`
	WarningCount int `json:"warningCount"`
}

// validatePages writes pages (name -> HTML) to a directory, runs html-validate
// on all of them and fails on every error it reports.
func validatePages(t *testing.T, dir string, pages map[string]string) {
	t.Helper()
	tmp := t.TempDir()
	pages[controlPage] = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/><title>broken</title></head><body><p><div>a block in a paragraph</div></p></body></html>`
	args := []string{filepath.Join(dir, "node_modules", "html-validate", "bin", "html-validate.mjs"),
		"--config", filepath.Join(dir, ".htmlvalidate.json"), "--formatter", "json=" + filepath.Join(tmp, "report.json")}
	for name, page := range pages {
		p := filepath.Join(tmp, name+".html")
		if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	// a file, not stdout: node cuts a large piped stdout short at exit
	js, rerr := os.ReadFile(filepath.Join(tmp, "report.json"))
	var rep validateReport
	if jerr := json.Unmarshal(js, &rep); rerr != nil || jerr != nil {
		t.Fatalf("html-validate: %v (%v, %v): %s %s", err, rerr, jerr, out.String(), errb.String())
	}
	errs, control := 0, 0
	byRule := map[string]int{}
	for _, f := range rep {
		for _, m := range f.Messages {
			if m.Severity < 2 {
				continue
			}
			if strings.HasSuffix(f.FilePath, controlPage+".html") {
				control++
				continue
			}
			errs++
			byRule[m.RuleID]++
			if errs <= 30 {
				t.Errorf("%s:%d:%d: %s (%s)", filepath.Base(f.FilePath), m.Line, m.Column, m.Message, m.RuleID)
			}
		}
	}
	if control == 0 {
		t.Fatalf("html-validate found nothing wrong in the broken control page (exit %v): is it validating?", err)
	}
	t.Logf("html-validate: %d pages, %d errors %v (and %d in the broken control page)", len(pages)-1, errs, byRule, control)
}

// controlPage is a page html-validate must reject (a <div> in a <p>): the
// test's proof that the validator ran and reads the pages.
const controlPage = "control-broken"

// servePages fetches the explorer's page kinds: the index, a function (alone
// and compared), an instruction, its simulation, the opcode map and an error.
func servePages(t *testing.T, ex *explorer, fn, policy2 string, pages map[string]string) {
	t.Helper()
	srv := httptest.NewServer(ex.handler())
	defer srv.Close()
	get := func(path string) string {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pages["serve-index"] = get("/?q=" + fn)
	href := regexp.MustCompile(`href="(/func\?[^"]+)"`).FindStringSubmatch(pages["serve-index"])
	if href == nil {
		t.Fatalf("explorer index: no function link for %q", fn)
	}
	fpath := strings.ReplaceAll(href[1], "&amp;", "&")
	pages["serve-func"] = get(fpath)
	pages["serve-compare"] = get(fpath + "&compare=" + policy2)
	ins := regexp.MustCompile(`href="(/insn\?[^"]+)"`).FindAllStringSubmatch(pages["serve-func"], -1)
	if len(ins) < 2 {
		t.Fatalf("explorer function page: %d instruction links", len(ins))
	}
	ipath := strings.ReplaceAll(ins[1][1], "&amp;", "&")
	pages["serve-insn"] = get(ipath)
	pages["serve-sim"] = get(strings.Replace(ipath, "/insn?", "/sim?", 1))
	pages["serve-opcodes"] = get("/opcodes")
	pages["serve-error"] = get("/func?addr=0x1&policy=%3Cb%3E")
}

func TestHTMLValidate(t *testing.T) {
	dir := validatorDir(t)
	for _, tc := range pictureCases {
		t.Run(tc.arch, func(t *testing.T) {
			pages := map[string]string{}
			pages["opcodes"] = mustRun(t, "opcodes", "--arch", tc.arch, "--format", "html")
			if tc.diff != "" {
				pages["opcodes-diff"] = mustRun(t, "opcodes", "--arch", tc.arch, "--format", "html", "--diff", tc.diff)
			}
			pages["explain"] = mustRun(t, append([]string{"explain", "--arch", tc.arch, "--words", "--format", "html"}, tc.insn...)...)
			pages["sim"] = mustRun(t, append([]string{"sim", "--arch", tc.arch, "--trials", "2", "--words", "--format", "html"}, tc.insn...)...)
			var ex *explorer
			var err error
			switch tc.arch {
			case "thumb":
				elf := thumbELF(t)
				pages["audit"] = mustRun(t, "audit", elf, "--format", "html")
				ex, err = openExplorer([]string{elf}, "", "")
				if err == nil {
					servePages(t, ex, "f_add", "linux-6.1-arm", pages)
				}
			case "x86-64":
				pages["audit"] = mustRun(t, "audit", "--format", "html")
				ex, err = openExplorer(nil, "", "")
				if err == nil {
					servePages(t, ex, "", "uprobes-x86", pages)
					// an optimizable site (main+9): the optprobe's detour buffer
					pages["serve-insn-optprobe"] = explorerGet(t, ex, "/insn?addr=0x401000&off=9")
					pages["serve-sim-optprobe"] = explorerGet(t, ex, "/sim?addr=0x401000&off=9")
					parseXML(t, pages["serve-insn-optprobe"])
				}
			default:
				deb, ks := debianARM64(t)
				pages["audit"] = mustRun(t, "audit", deb, "--symbols", ks, "--policy", "linux-6.1-arm64", "--func", "vfs_r*", "--format", "html")
				ex, err = openExplorer([]string{deb}, ks, "")
				if err == nil {
					servePages(t, ex, "vfs_read", "boost-arm64", pages)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			ex.f.Close()
			for name, p := range pages {
				if !strings.HasPrefix(p, "<!DOCTYPE html>") {
					t.Errorf("%s: not an HTML page: %.80q", name, p)
				}
			}
			validatePages(t, dir, pages)
		})
	}
}
