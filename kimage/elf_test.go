package kimage

import (
	"debug/elf"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// TestOpenELFMatchesReadelf compares the section list with GNU readelf and the
// symbols with GNU nm, for both instruction sets.
func TestOpenELFMatchesReadelf(t *testing.T) {
	for _, bits := range []int{64, 32} {
		path := buildKernelLike(t, bits)
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		wantArch := map[int]string{64: "x86-64", 32: "i386"}[bits]
		if f.Kind != KindELF || f.Arch == nil || f.Arch.Name != wantArch {
			t.Fatalf("%d-bit: kind %v arch %v, want ELF %s", bits, f.Kind, f.Arch, wantArch)
		}
		re := readelfSections(t, path)
		if len(re) != len(f.Sections) {
			t.Fatalf("%d-bit: %d sections, readelf shows %d", bits, len(f.Sections), len(re))
		}
		for i, r := range re {
			s := f.Sections[i]
			if s.Name != r.Name || s.Addr != r.Addr || s.Offset != r.Off || s.Size != r.Size {
				t.Errorf("%d-bit section %d: got %s %#x off %#x size %#x; readelf %s %#x off %#x size %#x",
					bits, i, s.Name, s.Addr, s.Offset, s.Size, r.Name, r.Addr, r.Off, r.Size)
			}
			if s.Exec != strings.Contains(r.Flags, "X") || s.Alloc != strings.Contains(r.Flags, "A") ||
				s.Write != strings.Contains(r.Flags, "W") || s.NoBits != (r.Type == "NOBITS") {
				t.Errorf("%d-bit %s: flags exec=%v alloc=%v write=%v nobits=%v; readelf %q %s",
					bits, s.Name, s.Exec, s.Alloc, s.Write, s.NoBits, r.Flags, r.Type)
			}
		}
		// Data must equal the file bytes at the offsets readelf reports.
		raw, _ := os.ReadFile(path)
		for _, r := range re {
			s, _ := f.Section(r.Name)
			d, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			if r.Type == "NOBITS" {
				if d != nil {
					t.Errorf("%s: NOBITS section has data", r.Name)
				}
				continue
			}
			if string(d) != string(raw[r.Off:r.Off+r.Size]) {
				t.Errorf("%d-bit %s: data differs from file bytes", bits, r.Name)
			}
		}
		// Exec sections in file order.
		ex := f.ExecSections()
		for i := 1; i < len(ex); i++ {
			if ex[i].Offset < ex[i-1].Offset {
				t.Errorf("ExecSections not in file order: %s before %s", ex[i-1].Name, ex[i].Name)
			}
		}
		var exNames []string
		for _, r := range re {
			if strings.Contains(r.Flags, "X") && r.Type != "NOBITS" && r.Size > 0 {
				exNames = append(exNames, r.Name)
			}
		}
		if len(ex) != len(exNames) {
			t.Errorf("ExecSections %d, readelf has %d executable sections", len(ex), len(exNames))
		}
		// Symbols per nm.
		nm := nmSymbols(t, path)
		for name, addr := range nm {
			s, ok := f.Symbols.ByName(name)
			if !ok {
				t.Errorf("%d-bit: nm symbol %s missing", bits, name)
				continue
			}
			if s.Addr != addr {
				t.Errorf("%d-bit: %s at %#x, nm says %#x", bits, name, s.Addr, addr)
			}
		}
		fa, _ := f.Symbols.ByName("func_a")
		if !fa.Func || fa.Size == 0 {
			t.Errorf("func_a: %+v, want a sized function", fa)
		}
		// Funcs: the .type @function symbols and global untyped code symbols,
		// not local labels.
		funcs := map[string]bool{}
		for s := range f.Symbols.Funcs() {
			funcs[s.Name] = true
		}
		for _, n := range []string{"func_a", "func_b", "func_c", "func_d", "init_fn"} {
			if !funcs[n] {
				t.Errorf("%d-bit: Funcs lacks %s", bits, n)
			}
		}
		for _, n := range []string{"bug_site", "ex_site", "some_key"} {
			if funcs[n] {
				t.Errorf("%d-bit: Funcs has label/data %s", bits, n)
			}
		}
		if s, off, ok := f.Symbols.Lookup(nm["bug_site"]); !ok || s.Name != "func_a" || off != nm["bug_site"]-nm["func_a"] {
			t.Errorf("Lookup(bug_site) = %s+%#x %v, want func_a+%#x", s.Name, off, ok, nm["bug_site"]-nm["func_a"])
		}
		b, err := f.ReadAt(nm["bug_site"], 2)
		if err != nil || b[0] != 0x0F || b[1] != 0x0B {
			t.Errorf("ReadAt(bug_site) = % x, %v; want ud2", b, err)
		}
		if _, err := f.ReadAt(0x10, 1); !errors.Is(err, ErrAddress) {
			t.Errorf("ReadAt(0x10): %v, want ErrAddress", err)
		}
	}
}

func TestOpenUnsupportedMachine(t *testing.T) {
	path := buildKernelLike(t, 64)
	b, _ := os.ReadFile(path)
	b[0x12], b[0x13] = byte(elf.EM_RISCV), 0
	p2 := t.TempDir() + "/riscv.elf"
	os.WriteFile(p2, b, 0o644)
	_, err := Open(p2)
	if !errors.Is(err, ErrUnsupportedArch) || !strings.Contains(err.Error(), "EM_RISCV") || !strings.Contains(err.Error(), "EM_X86_64") {
		t.Fatalf("Open(riscv ELF) = %v; want ErrUnsupportedArch naming EM_RISCV and the supported machines", err)
	}
}

// TestOpenARM64ELF checks that an EM_AARCH64 ELF opens with the A64 decoder.
func TestOpenARM64ELF(t *testing.T) {
	path := buildKernelLike(t, 64)
	b, _ := os.ReadFile(path)
	b[0x12], b[0x13] = byte(elf.EM_AARCH64), 0
	p2 := t.TempDir() + "/arm64.elf"
	os.WriteFile(p2, b, 0o644)
	f, err := Open(p2)
	if err != nil {
		t.Fatalf("Open(arm64 ELF): %v", err)
	}
	defer f.Close()
	if f.Arch != decode.ARM64 || f.Machine != "EM_AARCH64" {
		t.Fatalf("Open(arm64 ELF): Arch %v Machine %s; want decode.ARM64, EM_AARCH64", f.Arch, f.Machine)
	}
}

func TestOpenUnknown(t *testing.T) {
	_, err := OpenBytes([]byte("hello, world, this is not a kernel"))
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("got %v, want ErrFormat", err)
	}
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("got %T, want *FormatError", err)
	}
}
