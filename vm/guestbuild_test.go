package vm

import (
	"context"
	"debug/elf"
	"os"
	"testing"
)

// TestBuildGuest builds the guest for both x86 guests into an empty cache and
// checks the binaries with debug/elf: static (no interpreter), right machine and
// class; a second build is a cache hit.
func TestBuildGuest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the guest with the go command")
	}
	t.Setenv("KBOOST_CACHE", t.TempDir())
	for _, c := range []struct {
		arch    *Arch
		machine elf.Machine
		class   elf.Class
	}{{AMD64, elf.EM_X86_64, elf.ELFCLASS64}, {I386, elf.EM_386, elf.ELFCLASS32}} {
		p, err := BuildGuest(context.Background(), DefaultGuestPackage, c.arch)
		if err != nil {
			t.Fatal(err)
		}
		st1, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != c.machine || f.Class != c.class || f.Type != elf.ET_EXEC {
			t.Errorf("%s: %v %v %v", c.arch, f.Machine, f.Class, f.Type)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s: guest is dynamically linked (%v)", c.arch, prog.Type)
			}
		}
		f.Close()
		p2, err := BuildGuest(context.Background(), DefaultGuestPackage, c.arch)
		if err != nil || p2 != p {
			t.Fatalf("%s: second build %q, %v; first %q", c.arch, p2, err, p)
		}
		if st2, _ := os.Stat(p2); !st2.ModTime().Equal(st1.ModTime()) {
			t.Errorf("%s: second build rewrote the binary instead of using the cache", c.arch)
		}
	}
}
