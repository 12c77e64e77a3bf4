package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"image/png"
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
}{
	{name: "opcodes-x86-64", args: []string{"opcodes", "--format", "html", "--map", "one"}},
	{name: "opcodes-diff-kprobes-uprobes", args: []string{"opcodes", "--format", "html", "--map", "one", "--diff", "linux-6.1,uprobes-x86"}},
	{name: "opcodes-arm64", args: []string{"opcodes", "--arch", "arm64", "--format", "html"}},
	{name: "explain-riprel", args: []string{"explain", "--format", "html", "--slot", "0xffffffffa0000000", "48", "8b", "05", "10", "00", "00", "00"}},
	{name: "sim-riprel", args: []string{"sim", "--format", "html", "--trials", "2", "48", "8b", "05", "10", "00", "00", "00"}, cpu: true},
	{name: "audit-demo", args: []string{"audit", "--format", "html"}, frag: "#f3"},
}

func docPicturesDir() string { return filepath.Join("..", "..", "docs", "pictures") }

func pageHash(page string) string {
	h := sha256.Sum256([]byte(page))
	return hex.EncodeToString(h[:])
}

func TestDocsPicturesFresh(t *testing.T) {
	for _, p := range docPictures {
		out, errs, code := run(t, p.args...)
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
		out := mustRun(t, p.args...)
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
		if err := os.WriteFile(base+".sha256", []byte(pageHash(out)+"  "+strings.Join(p.args, " ")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s.png: %d bytes", base, len(shot))
	}
}
