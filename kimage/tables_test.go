package kimage

import (
	"bufio"
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// nmSizes returns name -> size per `nm -S`.
func nmSizes(t *testing.T, path string) map[string]uint64 {
	out := run(t, "", needTool(t, "nm"), "-S", "--defined-only", path)
	m := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 {
			v, _ := strconv.ParseUint(f[1], 16, 64)
			m[f[3]] = v
		}
	}
	return m
}

func TestKernelTablesSynthetic(t *testing.T) {
	for _, bits := range []int{64, 32} {
		path := buildKernelLike(t, bits)
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		nm := nmSymbols(t, path)
		sizes := nmSizes(t, path)
		tb, err := KernelTables(f)
		if err != nil {
			t.Fatalf("%d-bit: %v", bits, err)
		}
		one := func(tab *Table, want uint64, src Source) {
			t.Helper()
			if tab.Source != src {
				t.Errorf("%d-bit %s: source %v, want %v (%s)", bits, tab.Name, tab.Source, src, tab.Note)
			}
			if got := tab.Addrs.Addrs(); len(got) != 1 || got[0] != want {
				t.Errorf("%d-bit %s: %#x, want [%#x]", bits, tab.Name, got, want)
			}
			if !tab.Addrs.Contains(want) || tab.Addrs.Contains(want+1) || !tab.Addrs.Any(want-1, want+1) || tab.Addrs.Any(want+1, want+10) {
				t.Errorf("%d-bit %s: membership queries wrong", bits, tab.Name)
			}
		}
		one(&tb.ExTable, nm["ex_site"], SourceSection)
		one(&tb.Bug, nm["bug_site"], SourceSection)
		one(&tb.JumpLabel, nm["jl_site"], SourceSymbols)
		one(&tb.StaticCall, nm["sc_site"], SourceSymbols)
		one(&tb.Alternatives, nm["alt_site"], SourceSection)
		rng := func(tab *Table, lo, hi uint64, src Source) {
			t.Helper()
			if tab.Source != src {
				t.Errorf("%d-bit %s: source %v, want %v (%s)", bits, tab.Name, tab.Source, src, tab.Note)
			}
			rs := tab.Ranges.Ranges()
			if len(rs) != 1 || rs[0].Start != lo || rs[0].End != hi {
				t.Errorf("%d-bit %s: %+v, want [%#x,%#x)", bits, tab.Name, rs, lo, hi)
				return
			}
			if !tab.Ranges.Contains(lo) || !tab.Ranges.Contains(hi-1) || tab.Ranges.Contains(hi) || tab.Ranges.Contains(lo-1) {
				t.Errorf("%d-bit %s: Contains wrong at the edges", bits, tab.Name)
			}
			if !tab.Ranges.Overlaps(lo-4, lo+1) || tab.Ranges.Overlaps(hi, hi+5) {
				t.Errorf("%d-bit %s: Overlaps wrong", bits, tab.Name)
			}
		}
		rng(&tb.Alternatives, nm["alt_site"], nm["alt_site"]+3, SourceSection)
		rng(&tb.KprobeBlacklist, nm["func_b"], nm["func_b"]+sizes["func_b"], SourceSymbols)
		rng(&tb.EntryText, nm["__entry_text_start"], nm["__entry_text_end"], SourceSymbols)
		rng(&tb.KprobesText, nm["__kprobes_text_start"], nm["__kprobes_text_end"], SourceSymbols)
		var initSec readelfSection
		for _, s := range readelfSections(t, path) {
			if s.Name == ".init.text" {
				initSec = s
			}
		}
		rng(&tb.InitText, initSec.Addr, initSec.Addr+initSec.Size, SourceSection)
		for _, tab := range []*Table{&tb.NoinstrText, &tb.IRQEntryText, &tb.SoftIRQEntryText} {
			if tab.Known() || tab.Note == "" {
				t.Errorf("%d-bit %s: %v, want missing with a note", bits, tab.Name, tab)
			}
		}

		// A config whose bug_entry size does not divide the table is refused.
		cfg, _ := ParseKConfig([]byte("# CONFIG_DEBUG_BUGVERBOSE is not set\n"))
		f.Config = cfg
		if _, err := KernelTables(f); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "multiple") {
			t.Errorf("%d-bit: KernelTables with BUGVERBOSE=n: %v, want a size mismatch error", bits, err)
		}

		// Without symbols the symbol-located tables are missing, not guessed.
		f.Config = nil
		f.Symbols = NewSymTab(nil)
		tb, err = KernelTables(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tab := range []*Table{&tb.JumpLabel, &tb.StaticCall, &tb.KprobeBlacklist, &tb.EntryText} {
			if tab.Known() || !strings.Contains(tab.Note, "no symbols") {
				t.Errorf("%d-bit no symbols: %v, want missing: no symbols", bits, tab)
			}
		}
		if !tb.ExTable.Known() || !tb.Bug.Known() {
			t.Errorf("%d-bit no symbols: section tables lost", bits)
		}
	}
}

func TestBugEntrySize(t *testing.T) {
	// sizeof(struct bug_entry) per include/asm-generic/bug.h, computed by hand:
	// relative: s32 addr [s32 file, u16 line] u16 flags; absolute: pointers.
	for _, c := range []struct {
		ptr          int
		rel, verbose bool
		want         int
	}{
		{8, true, true, 12}, {8, true, false, 8}, {8, false, true, 24}, {8, false, false, 16},
		{4, false, true, 12}, {4, false, false, 8}, {4, true, true, 12},
	} {
		if got := bugEntrySize(c.ptr, c.rel, c.verbose); got != c.want {
			t.Errorf("bugEntrySize(%d,%v,%v) = %d, want %d", c.ptr, c.rel, c.verbose, got, c.want)
		}
	}
}

// struct alt_instr: 12 bytes in 6.1 (u16 cpuid), 14 in 6.12 and 7.2 (u32
// ft_flags), instrlen after the flags.
func TestAltLayout(t *testing.T) {
	for _, c := range []struct {
		release      string
		n            int
		size, lenOff int
	}{
		{"6.1.0-57-amd64", 120, 12, 10},
		{"6.12.117+deb12-amd64", 132440, 14, 12},
		{"7.2.13+deb14-amd64", 140, 14, 12},
		{"", 132440, 14, 12}, // only 14 divides it
		{"", 168, 12, 10},    // both do: 6.1's
	} {
		if s, o := altLayout(c.release, c.n); s != c.size || o != c.lenOff {
			t.Errorf("%q (%d bytes): size %d, instrlen at %d; want %d, %d", c.release, c.n, s, o, c.size, c.lenOff)
		}
	}
}

// x86-64's bug_entry gained an s32 format (HAVE_ARCH_BUG_FORMAT) after 6.12:
// 7.2's is 16 bytes with DEBUG_BUGVERBOSE, 6.12's 12.
func TestBugFormat(t *testing.T) {
	for _, c := range []struct {
		release string
		secSize uint64
		want    bool
	}{
		{"7.2.13+deb14-amd64", 176512, true},
		{"6.12.117+deb12-amd64", 176512 - 176512%12, false},
		{"6.1.0-57-amd64", 48, false},
		{"6.15.2", 176512, true}, // between: 16 divides it, 12 does not
		{"6.15.2", 48, false},    // both do
		{"", 176512, false},      // unknown: the older layout
	} {
		r := tableReader{f: &File{KernelVersion: c.release, Sections: []Section{{Name: "__bug_table", Size: c.secSize}}}}
		if got := r.bugFormat(12); got != c.want {
			t.Errorf("%q (%d bytes): format %v, want %v", c.release, c.secSize, got, c.want)
		}
	}
}
