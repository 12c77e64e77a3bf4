package vm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The x86 record cache's key: the same package contents, guest binary,
// machine and arguments find the same file; a change to any of them (the
// package's bytes under the same name included) another.
func TestX86RecordPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KBOOST_CACHE", filepath.Join(dir, "cache"))
	deb := filepath.Join(dir, "linux-image-6.1.0-57-amd64_6.1.192-3_amd64.deb")
	guestBin := filepath.Join(dir, "guest")
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(deb, "package one")
	write(guestBin, "guest one")
	cfg := Config{GuestBinary: guestBin, MemoryMB: 1024, Append: []string{"clocksource=hpet"}}
	args := []byte(`{"sample":300,"seed":1}`)
	path := func(cfg Config, args []byte) string {
		p, err := x86RecordPath(deb, cfg, args)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := path(cfg, args)
	if !strings.HasPrefix(filepath.Base(base), "linux-image-6.1.0-57-amd64_6.1.192-3_amd64-x86-") || filepath.Dir(base) != filepath.Join(dir, "cache", "verify") {
		t.Fatalf("cache path %s", base)
	}
	if again := path(cfg, args); again != base {
		t.Errorf("same inputs: %s, then %s", base, again)
	}
	seen := map[string]string{base: "base"}
	differ := func(what, p string) {
		if prev, ok := seen[p]; ok {
			t.Errorf("%s: same cache file as %s (%s)", what, prev, p)
		}
		seen[p] = what
	}
	differ("seed 2", path(cfg, []byte(`{"sample":300,"seed":2}`)))
	c := cfg
	c.QEMUArgs = []string{"-cpu", "max"}
	differ("-cpu max", path(c, args))
	c = cfg
	c.MemoryMB = 2048
	differ("2 GB", path(c, args))
	write(guestBin, "guest two")
	differ("another guest", path(cfg, args))
	write(deb, "package two")
	differ("another package of the same name", path(cfg, args))
}
