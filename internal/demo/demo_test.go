package demo

import (
	"bytes"
	"debug/elf"
	"os"
	"regexp"
	"testing"
)

// TestEmbeddedMatchesSource checks that every function defined in demo.c is a
// function symbol of the embedded ELF (so demo.elf was built from this source).
func TestEmbeddedMatchesSource(t *testing.T) {
	src, err := os.ReadFile("src/demo.c")
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(ELF))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			have[s.Name] = true
		}
	}
	re := regexp.MustCompile(`(?m)^(?:__attribute__\(\([^)]*\)\) )?(?:static )?(?:u64|int|void) (\w+)\(`)
	n := 0
	for _, m := range re.FindAllSubmatch(src, -1) {
		n++
		if !have[string(m[1])] {
			t.Errorf("function %s of demo.c is not in demo.elf: run internal/demo/src/build.sh", m[1])
		}
	}
	if n < 5 {
		t.Fatalf("found only %d functions in demo.c", n)
	}
}
