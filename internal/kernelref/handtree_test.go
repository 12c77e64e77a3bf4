package kernelref

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A missing hand tree, or one lacking a file the oracle compiles, is
// ErrNoHandTree, not a build failure; the header parser reads what a64Header
// writes for a tree.
func TestHandTreeErrors(t *testing.T) {
	cache := t.TempDir()
	if _, _, err := HandTree(Options{CacheDir: cache}, "6.18"); !errors.Is(err, ErrNoHandTree) {
		t.Fatalf("empty cache: %v, want ErrNoHandTree", err)
	}
	tree := filepath.Join(cache, "hand", "linux-6.18")
	for _, m := range sourceMembersA64[:3] {
		p := filepath.Join(tree, filepath.FromSlash(m))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("VERSION = 6\nPATCHLEVEL = 18\nSUBLEVEL = 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, ProvenanceFile), []byte("repo: example/linux\ncommit: 0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, prov, err := HandTree(Options{CacheDir: cache}, "6.18")
	if err != nil || dir != tree || !strings.Contains(prov, "commit: 0123") {
		t.Fatalf("HandTree = %q, %q, %v", dir, prov, err)
	}
	if _, err := PrepareA64(Options{CacheDir: cache, Tree: tree}); !errors.Is(err, ErrNoHandTree) {
		t.Fatalf("tree lacking %s: %v, want ErrNoHandTree", sourceMembersA64[3], err)
	}
	var b strings.Builder
	inputs, err := treeInputs(tree, sourceMembersA64[:3])
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("#   repo: example/linux\n#   commit: 0123\n")
	for _, l := range inputs {
		b.WriteString("#   " + l + "\n")
	}
	b.WriteString("d503201f\t-\tx\ty\n#   0000000000000000000000000000000000000000000000000000000000000000  after/the/header\n")
	g, err := ReadGoldenInputs(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if g.Provenance["repo"] != "example/linux" || g.Provenance["commit"] != "0123" || len(g.SHA256) != 3 {
		t.Fatalf("parsed %+v", g)
	}
	// sha256 of "VERSION = 6\nPATCHLEVEL = 18\nSUBLEVEL = 0\n", by sha256sum.
	if got := g.SHA256["Makefile"]; got != "679c363a5f8b79a57040ee7b11839ffeba8629c0d5c9c39cd1d3bf6f776a2c4b" {
		t.Errorf("Makefile sha256 %s, sha256sum says 679c363a...", got)
	}
}
