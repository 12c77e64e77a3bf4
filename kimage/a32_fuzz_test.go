package kimage

import (
	"debug/elf"
	"encoding/binary"
	"testing"

	"github.com/kboost/kboost/decode"
)

// armSymsFrom turns fuzz bytes into symbols: 6 bytes each (value u32, a
// name selector, an info byte).
func armSymsFrom(b []byte) []elf.Symbol {
	names := []string{"$a", "$t", "$d", "$a.1", "$t.x", "$d.", "$x", "f", "$ab", "$"}
	var out []elf.Symbol
	for ; len(b) >= 6; b = b[6:] {
		out = append(out, elf.Symbol{Name: names[int(b[4])%len(names)], Value: uint64(binary.LittleEndian.Uint32(b)), Info: b[5]})
	}
	return out
}

func FuzzARMSpans(f *testing.F) {
	f.Add(uint32(0x1000), uint32(0x100), []byte{0x00, 0x10, 0, 0, 0, 0, 0x41, 0x10, 0, 0, 7, 0x12, 0x80, 0x10, 0, 0, 2, 0})
	f.Fuzz(func(t *testing.T, addr, size uint32, b []byte) {
		spans := ARMSpans(uint64(addr), uint64(size), armSymsFrom(b))
		if len(spans) == 0 || spans[0].Start != uint64(addr) {
			t.Fatalf("spans %v do not start at the section (%#x)", spans, addr)
		}
		for i := 1; i < len(spans); i++ {
			if spans[i].Start <= spans[i-1].Start || (spans[i].Arch == spans[i-1].Arch && spans[i].Arch != nil) {
				t.Fatalf("spans %v: not increasing or code spans not merged", spans)
			}
			if spans[i].Start-uint64(addr) >= uint64(size) {
				t.Fatalf("span %v outside the section %#x+%#x", spans[i], addr, size)
			}
		}
		for _, s := range spans {
			if s.Arch != nil && s.Arch != decode.ARM && s.Arch != decode.Thumb {
				t.Fatalf("span %v: not ARM, Thumb or data", s)
			}
		}
	})
}

func TestARMSpans(t *testing.T) {
	fn := func(name string, v uint64) elf.Symbol {
		return elf.Symbol{Name: name, Value: v, Info: elf.ST_INFO(elf.STB_GLOBAL, elf.STT_FUNC)}
	}
	mapSym := func(name string, v uint64) elf.Symbol {
		return elf.Symbol{Name: name, Value: v, Info: elf.ST_INFO(elf.STB_LOCAL, elf.STT_NOTYPE)}
	}
	// No mapping symbols: the block symbols' Thumb bits, ARM before the first.
	got := ARMSpans(0x1000, 0x100, []elf.Symbol{fn("t", 0x1011), fn("a", 0x1040), fn("t2", 0x1081)})
	want := []decode.Span{{Start: 0x1000, Arch: decode.ARM}, {Start: 0x1010, Arch: decode.Thumb}, {Start: 0x1040, Arch: decode.ARM}, {Start: 0x1080, Arch: decode.Thumb}}
	if !equalSpans(got, want) {
		t.Errorf("function symbols: %v, want %v", got, want)
	}
	// Mapping symbols decide from the first on; ".N" forms count; "$x" and
	// "$ab" are not mapping symbols.
	got = ARMSpans(0x1000, 0x100, []elf.Symbol{fn("t", 0x1001), mapSym("$a.0", 0x1020), mapSym("$d", 0x1030), mapSym("$t.5", 0x1038), mapSym("$x", 0x1050), mapSym("$ab", 0x1060)})
	want = []decode.Span{{Start: 0x1000, Arch: decode.Thumb}, {Start: 0x1020, Arch: decode.ARM}, {Start: 0x1030, Arch: nil}, {Start: 0x1038, Arch: decode.Thumb}}
	if !equalSpans(got, want) {
		t.Errorf("mapping symbols: %v, want %v", got, want)
	}
	if k, ok := MappingSymbol("$d.realdata"); !ok || k != 'd' {
		t.Errorf("$d.realdata: %c %v", k, ok)
	}
}

func equalSpans(a, b []decode.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// armFuzzImage is a small ARM Image at 0xc0008000: the banner and processor
// line, a traced function (push {lr}; bl mcount), mcount, init_kprobes
// loading the bounds of a ten-entry NOKPROBE list by MOVW/MOVT, and the list.
func armFuzzImage() ([]byte, *SymTab) {
	const base = 0xC0008000
	img := make([]byte, 0x2000)
	le := binary.LittleEndian
	put := func(off int, w uint32) { le.PutUint32(img[off:], w) }
	put(0, 0xE1A00000) // mov r0, r0
	for k := 0; k < 20; k++ {
		at := 0x100 + 16*k
		put(at, 0xE52DE004)
		mc := uint32(base + 0x800)
		put(at+4, 0xEB000000|(mc-uint32(base+at+4)-8)>>2&0xFFFFFF)
	}
	list := uint32(base + 0x1000)
	put(0x900, 0xE3000000|(list&0xF000)<<4|list&0xFFF) // movw r0, #lo
	put(0x904, 0xE3400000|(list>>16&0xF000)<<4|list>>16&0xFFF)
	end := list + 40
	put(0x908, 0xE3001000|(end&0xF000)<<4|end&0xFFF)
	put(0x90C, 0xE3401000|(end>>16&0xF000)<<4|end>>16&0xFFF)
	for k := 0; k < 10; k++ {
		put(0x1000+4*k, uint32(base+0x100+16*k))
	}
	copy(img[0x1800:], "Linux version 6.1.0-test (x)\x00CPU: %s [%08x] revision %d (ARMv%s), cr=%08lx\x00")
	syms := []Symbol{{Name: "_stext", Addr: base, Type: 'T', Func: true}, {Name: "_etext", Addr: base + 0xA00, Type: 'T'},
		{Name: "__gnu_mcount_nc", Addr: base + 0x800, Size: 4, Type: 'T', Func: true},
		{Name: "init_kprobes", Addr: base + 0x900, Size: 0x10, Type: 'T', Func: true}}
	for k := 0; k < 20; k++ {
		syms = append(syms, Symbol{Name: "f" + string(rune('a'+k)), Addr: base + 0x100 + uint64(16*k), Size: 16, Type: 'T', Func: true})
	}
	return img, NewSymTab(syms)
}

func TestARMImageTables(t *testing.T) {
	img, st := armFuzzImage()
	if !IsARMImage(img) {
		t.Fatal("the test Image is not recognised")
	}
	f, err := OpenBytes(img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindARMImage || f.KernelVersion != "6.1.0-test" {
		t.Fatalf("kind %s release %q", f.Kind, f.KernelVersion)
	}
	f.SetSymbols(st)
	if s, ok := f.Section(".text"); !ok || s.Addr != 0xC0008000 {
		t.Fatalf(".text %+v (placed by the mcount calls at 0xc0008000)", s)
	}
	tabs, err := KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	if n := tabs.Ftrace.Addrs.Len(); n != 20 || !tabs.Ftrace.Addrs.Contains(0xC0008104) {
		t.Errorf("ftrace %d sites %v, want the 20 bl mcount", n, tabs.Ftrace.Addrs.Addrs())
	}
	if rs := tabs.KprobeBlacklist.Ranges.Ranges(); len(rs) != 10 || rs[0].Name != "fa" || rs[9].End != 0xC0008100+16*10 {
		t.Errorf("blacklist %v, want fa..fj", rs)
	}
}

func FuzzARMImage(f *testing.F) {
	img, _ := armFuzzImage()
	f.Add(img)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, st := armFuzzImage()
		if !IsARMImage(b) {
			return
		}
		fl, err := OpenBytes(b)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		fl.SetSymbols(st)
		if _, err := KernelTables(fl); err != nil && !typed(err) {
			t.Fatalf("untyped error %v", err)
		}
		_, _ = FindARMJumpLabels(b, 0xC0008000, [][2]uint64{{0xC0008000, 0xC0008000 + uint64(len(b))}})
		_ = ARMMcountCalls(b, 0xC0008000, 0xC0008800)
		_, _ = ARMImageBase(b, 0xC0008800)
	})
}
