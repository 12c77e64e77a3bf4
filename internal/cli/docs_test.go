package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/browser"
)

// docPictures are the screenshots in docs/pictures (docs/pictures.md, README):
// each is the page kboost writes for these arguments, taken by
// scripts/screenshots.sh (KBOOST_SCREENSHOTS=1 TestDocsScreenshots), which
// records the page's SHA-256 next to the PNG. TestDocsPicturesFresh renders
// the pages again and fails when one differs from what was photographed.
var docPictures = []struct {
	name string
	args []string
	cpu  bool   // runs code (sim): needs the sandbox
	frag string // URL fragment the screenshot is taken with
	// serve: the page is the explorer's (of the demo) at this path, not a
	// command's output
	serve string
}{
	{name: "opcodes-x86-64", args: []string{"opcodes", "--format", "html", "--map", "one"}},
	{name: "opcodes-diff-kprobes-uprobes", args: []string{"opcodes", "--format", "html", "--map", "one", "--diff", "linux-6.1,uprobes-x86"}},
	{name: "opcodes-arm64", args: []string{"opcodes", "--arch", "arm64", "--format", "html"}},
	{name: "explain-riprel", args: []string{"explain", "--format", "html", "--slot", "0xffffffffa0000000", "48", "8b", "05", "10", "00", "00", "00"}},
	{name: "sim-riprel", args: []string{"sim", "--format", "html", "--trials", "2", "48", "8b", "05", "10", "00", "00", "00"}, cpu: true},
	{name: "audit-demo", args: []string{"audit", "--format", "html"}, frag: "#f3"},
	{name: "serve-listing", serve: "/func?addr=0x401070&policy=linux-6.1&compare=uprobes-x86"},
	{name: "serve-insn", serve: "/insn?addr=0x401070&off=26&policy=linux-6.1"},
	{name: "serve-optprobe", serve: "/insn?addr=0x401000&off=9&policy=linux-6.1", frag: "#optprobe"},
}

func docPicturesDir() string { return filepath.Join("..", "..", "docs", "pictures") }

func pageHash(page string) string {
	h := sha256.Sum256([]byte(page))
	return hex.EncodeToString(h[:])
}

// docPage is a command's page, or the explorer's page at path.
func docPage(t *testing.T, args []string, path string) (page, errs string, code int) {
	t.Helper()
	if path == "" {
		return run(t, args...)
	}
	ex, err := openExplorer(nil, "", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.f.Close()
	srv := httptest.NewServer(ex.handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return string(b), "", 0
}

func TestDocsPicturesFresh(t *testing.T) {
	for _, p := range docPictures {
		out, errs, code := docPage(t, p.args, p.serve)
		if code != 0 {
			if p.cpu && strings.Contains(errs, "not supported") {
				t.Logf("%s: no sandbox here: %s", p.name, errs)
				continue
			}
			t.Fatalf("%s: kboost %v: exit %d: %s", p.name, p.args, code, errs)
		}
		base := filepath.Join(docPicturesDir(), p.name)
		want, err := os.ReadFile(base + ".sha256")
		if err != nil {
			t.Errorf("%s: %v (run scripts/screenshots.sh)", p.name, err)
			continue
		}
		if got := pageHash(out); strings.Fields(string(want))[0] != got {
			t.Errorf("%s: the page changed since its screenshot (sha256 %s, recorded %s): run scripts/screenshots.sh and look at the PNGs", p.name, got, strings.TrimSpace(string(want)))
		}
		b, err := os.ReadFile(base + ".png")
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
			continue
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s.png: %v", p.name, err)
		} else if r := img.Bounds(); r.Dx() < 400 || r.Dy() < 200 {
			t.Errorf("%s.png: %dx%d: too small to be the page", p.name, r.Dx(), r.Dy())
		}
	}
}

// TestDocsScreenshots takes the screenshots (scripts/screenshots.sh).
func TestDocsScreenshots(t *testing.T) {
	if os.Getenv("KBOOST_SCREENSHOTS") == "" {
		t.Skip("scripts/screenshots.sh sets KBOOST_SCREENSHOTS=1")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := browser.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, p := range docPictures {
		out, errs, code := docPage(t, p.args, p.serve)
		if code != 0 {
			t.Fatalf("%s: %s", p.name, errs)
		}
		tmp := filepath.Join(t.TempDir(), p.name+".html")
		if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		loadURL(t, b, "file://"+tmp+p.frag)
		shot, err := b.Screenshot(100)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Join(docPicturesDir(), p.name)
		if err := os.WriteFile(base+".png", shot, 0o644); err != nil {
			t.Fatal(err)
		}
		what := strings.Join(p.args, " ")
		if p.serve != "" {
			what = "kboost serve: " + p.serve
		}
		if err := os.WriteFile(base+".sha256", []byte(pageHash(out)+"  "+what+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %d bytes", base, len(shot))
	}
}
