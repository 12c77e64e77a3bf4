package kimage

import (
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

const sampleMap = `ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000070 T secondary_startup_64
ffffffff81000070 t secondary_alias
ffffffff81001000 t helper
ffffffff81001040 T do_thing
ffffffff81002000 D some_data
ffffffff81002100 d other_data
0000000000000000 A __per_cpu_start
0000000000001000 A fixed_percpu_data
ffffffffc0000000 t mod_fn	[mymod]
ffffffffc0000080 t mod_fn2	[mymod]
ffffffffc0001000 t other_mod_fn	[othermod]
ffffffff81001100 T last_text
`

func TestParseSymbolMap(t *testing.T) {
	st, err := ParseSymbolMap(strings.NewReader(sampleMap))
	if err != nil {
		t.Fatal(err)
	}
	if st.Len() != 14 {
		t.Fatalf("Len %d, want 14", st.Len())
	}
	cases := []struct {
		addr uint64
		name string
		off  uint64
		ok   bool
	}{
		{0xffffffff81000000, "startup_64", 0, true}, // the global function alias is preferred over _text? both T: first in file
		{0xffffffff81000010, "startup_64", 0x10, true},
		{0xffffffff81000070, "secondary_startup_64", 0, true},
		{0xffffffff81000fff, "secondary_startup_64", 0xf8f, true},
		{0xffffffff81001041, "do_thing", 1, true},
		{0xffffffff81001100, "last_text", 0, true},
		{0xffffffff81001101, "", 0, false}, // the last text symbol has no known size
		{0xffffffffc0000010, "mod_fn", 0x10, true},
		{0xffffffffc0000081, "", 0, false}, // past the last symbol of its module
		{0xffffffffc0000100, "", 0, false}, // past the module's last symbol
		{0xffffffff81002050, "some_data", 0x50, true},
		{0x500, "", 0, false}, // absolute symbols are not containers
		{0x1000, "fixed_percpu_data", 0, true},
	}
	for _, c := range cases {
		s, off, ok := st.Lookup(c.addr)
		if c.name == "startup_64" && c.addr == 0xffffffff81000000 {
			// Aliases: either name is right; it must be one of the two T symbols.
			if !ok || (s.Name != "_text" && s.Name != "startup_64") || off != 0 {
				t.Errorf("Lookup(%#x) = %s+%#x %v", c.addr, s.Name, off, ok)
			}
			continue
		}
		if c.name == "startup_64" {
			if !ok || (s.Name != "_text" && s.Name != "startup_64") || off != c.off {
				t.Errorf("Lookup(%#x) = %s+%#x %v, want _text/startup_64+%#x", c.addr, s.Name, off, ok, c.off)
			}
			continue
		}
		if ok != c.ok || (ok && (s.Name != c.name || off != c.off)) {
			t.Errorf("Lookup(%#x) = %s+%#x %v, want %s+%#x %v", c.addr, s.Name, off, ok, c.name, c.off, c.ok)
		}
	}
	// Sizes: distance to the next different address in the same region.
	for name, want := range map[string]uint64{
		"secondary_startup_64": 0xf90, "secondary_alias": 0xf90, "helper": 0x40,
		"do_thing": 0xc0, "last_text": 0, "mod_fn": 0x80, "mod_fn2": 0, "other_mod_fn": 0,
		"some_data": 0x100, "__per_cpu_start": 0,
	} {
		s, ok := st.ByName(name)
		if !ok || s.Size != want {
			t.Errorf("%s: size %#x (found %v), want %#x", name, s.Size, ok, want)
		}
	}
	if s, _ := st.ByName("mod_fn"); s.Module != "mymod" || !s.Func {
		t.Errorf("mod_fn: %+v", s)
	}
	var funcs []string
	for s := range st.Funcs() {
		funcs = append(funcs, s.Name)
	}
	// One name per address; data and absolute symbols excluded.
	if len(funcs) != 8 {
		t.Errorf("Funcs: %v, want 8 distinct-address text symbols", funcs)
	}
	if _, ok := st.ByName("nope"); ok {
		t.Error("ByName(nope) found")
	}
}

func TestParseSymbolMapErrors(t *testing.T) {
	_, err := ParseSymbolMap(strings.NewReader("ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"))
	if !errors.Is(err, ErrPlaceholderMap) {
		t.Errorf("placeholder: %v", err)
	}
	_, err = ParseSymbolMap(strings.NewReader("0000000000000000 T _text\n0000000000000000 t foo\n"))
	if !errors.Is(err, ErrKptrRestrict) || !strings.Contains(err.Error(), "kptr_restrict=0") || !strings.Contains(err.Error(), "root") {
		t.Errorf("all-zero: %v", err)
	}
	for _, bad := range []string{"zzzz T foo\n", "ffffffff81000000 TT foo\n", "ffffffff81000000 T\n", "ffffffff81000000 T foo bar baz\n", "ffffffff81000000 T foo mod\n"} {
		_, err := ParseSymbolMap(strings.NewReader(bad))
		var fe *FormatError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &fe) || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v, want a FormatError naming line 1", bad, err)
		}
	}
}

// TestLookupMatchesLinearScan checks Lookup against a brute-force scan over a
// random map file (an independent implementation of the same definition).
func TestLookupMatchesLinearScan(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	var b strings.Builder
	type ent struct {
		addr uint64
		name string
	}
	var ents []ent
	base := uint64(0xffffffff81000000)
	for i := 0; i < 2000; i++ {
		a := base + uint64(rng.Intn(1<<20))
		n := fmt.Sprintf("f%d", i)
		ents = append(ents, ent{a, n})
		fmt.Fprintf(&b, "%016x t %s\n", a, n)
	}
	st, err := ParseSymbolMap(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(ents, func(i, j int) bool { return ents[i].addr < ents[j].addr })
	maxA := ents[len(ents)-1].addr
	for k := 0; k < 20000; k++ {
		q := base - 16 + uint64(rng.Intn(1<<20+32))
		// Brute force: the greatest address <= q, bounded by the next address.
		var at uint64
		found := false
		for _, e := range ents {
			if e.addr <= q {
				at, found = e.addr, true
			}
		}
		wantOK := found && (q == at || q < maxA) && !(at == maxA && q != at)
		s, off, ok := st.Lookup(q)
		if ok != wantOK {
			t.Fatalf("Lookup(%#x) ok=%v, want %v", q, ok, wantOK)
		}
		if ok && (s.Addr != at || off != q-at) {
			t.Fatalf("Lookup(%#x) = %s@%#x+%#x, want symbol at %#x", q, s.Name, s.Addr, off, at)
		}
	}
}

func TestParsePoint(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Point
		err  bool
	}{
		{"vfs_read", Point{Sym: "vfs_read"}, false},
		{"vfs_read+8", Point{Sym: "vfs_read", Off: 8}, false},
		{"vfs_read+0x10", Point{Sym: "vfs_read", Off: 16}, false},
		{"vfs_read+010", Point{Sym: "vfs_read", Off: 8}, false},
		{"0xffffffff81000000", Point{Addr: 0xffffffff81000000, IsAddr: true}, false},
		{"ffffffff81000010", Point{Addr: 0xffffffff81000010, IsAddr: true}, false},
		{"c1000000", Point{Addr: 0xc1000000, IsAddr: true}, false},
		{"deadbeefcafe", Point{Addr: 0xdeadbeefcafe, IsAddr: true}, false},
		{"abc", Point{Sym: "abc"}, false},
		{"", Point{}, true},
		{"+4", Point{}, true},
		{"f+x", Point{}, true},
		{"f+", Point{}, true},
		{"0xzz", Point{}, true},
	} {
		p, err := ParsePoint(c.in)
		if (err != nil) != c.err || (!c.err && p != c.want) {
			t.Errorf("ParsePoint(%q) = %+v, %v; want %+v err=%v", c.in, p, err, c.want, c.err)
		}
	}
	st, _ := ParseSymbolMap(strings.NewReader(sampleMap))
	p, _ := ParsePoint("do_thing+0x3")
	a, s, off, err := st.Resolve(p)
	if err != nil || a != 0xffffffff81001043 || s.Name != "do_thing" || off != 3 {
		t.Errorf("Resolve(do_thing+0x3) = %#x %s %d %v", a, s.Name, off, err)
	}
	p, _ = ParsePoint("missing+1")
	if _, _, _, err := st.Resolve(p); !errors.Is(err, ErrNoSymbol) {
		t.Errorf("Resolve(missing): %v", err)
	}
}

func TestShiftAndSetSymbols(t *testing.T) {
	st, _ := ParseSymbolMap(strings.NewReader(sampleMap))
	sh := st.Shift(0x1000000)
	s, _ := sh.ByName("do_thing")
	if s.Addr != 0xffffffff82001040 {
		t.Errorf("shifted do_thing at %#x", s.Addr)
	}
	if a, _ := sh.ByName("fixed_percpu_data"); a.Addr != 0x1000 {
		t.Errorf("absolute symbol moved to %#x", a.Addr)
	}
	f := &File{Sections: []Section{{Name: ".text", Addr: 0xffffffff81000000, Size: 0x2000, Alloc: true, Exec: true}}, Symbols: NewSymTab(nil)}
	if slide := f.SetSymbols(sh); slide != -0x1000000 {
		t.Errorf("slide %#x", slide)
	}
	if s, _ := f.Symbols.ByName("do_thing"); s.Addr != 0xffffffff81001040 {
		t.Errorf("after SetSymbols do_thing at %#x", s.Addr)
	}
}

// TestByNameFirstOfDuplicates checks the name index against a linear scan on
// a table where names repeat (local symbols of different files do): ByName
// returns the first symbol in address order with the name, and nothing for
// names that are absent.
func TestByNameFirstOfDuplicates(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	var syms []Symbol
	for i := 0; i < 50000; i++ {
		name := fmt.Sprintf("f%d", rng.Intn(20000)) // ~2.5 symbols per name
		syms = append(syms, Symbol{Name: name, Addr: 0x1000 + uint64(i)*16, Type: 't', Func: true})
	}
	st := NewSymTab(syms)
	first := map[string]uint64{}
	for s := range st.All() {
		if _, ok := first[s.Name]; !ok {
			first[s.Name] = s.Addr
		}
	}
	st.ByName("warm-up: the first look-up scans, later ones use the index")
	for name, addr := range first {
		if s, ok := st.ByName(name); !ok || s.Addr != addr {
			t.Fatalf("ByName(%q) = %#x %v, want %#x", name, s.Addr, ok, addr)
		}
	}
	for i := 20000; i < 21000; i++ {
		if s, ok := st.ByName(fmt.Sprintf("f%d", i)); ok {
			t.Fatalf("ByName(f%d) found %+v", i, s)
		}
	}
}
