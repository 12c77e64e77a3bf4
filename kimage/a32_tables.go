package kimage

import (
	"encoding/binary"
	"fmt"
)

// Tables of a 32-bit ARM kernel Image: the text areas from the kallsyms
// markers, the ftrace locations (every bl __gnu_mcount_nc of a text
// function: ARM has no __mcount_loc the Image names without data symbols)
// and the jump-label table found by its shape (FindARMJumpLabels); the
// NOKPROBE_SYMBOL list (_kprobe_blacklist) between the two addresses of it
// init_kprobes loads (armBlacklist).

func armKernelTables(f *File) (*Tables, error) {
	t := &Tables{}
	r := tableReader{f: f, lay: tableLayout{ptr: 4}}
	for _, tt := range a64TextTables {
		x := tt.table(t)
		*x = Table{Name: tt.name}
		r.textRange(x, tt.sec, tt.start, tt.end)
	}
	for _, x := range []*Table{&t.HypText, &t.HypIdmapText} {
		if !x.Known() {
			*x = Table{Name: x.Name, Source: SourceNotApplicable, Note: "32-bit ARM has no KVM hypervisor text since Linux 5.7"}
		}
	}
	t.StaticCall = Table{Name: "static-call sites", Source: SourceNotApplicable, Note: "arm 6.1 has no inline static calls"}
	t.Alternatives = Table{Name: "alternatives", Source: SourceNotApplicable, Note: "arm kprobes do not consult alternatives"}
	t.ExTable = Table{Name: "exception table", Source: SourceNotApplicable, Note: "arm kprobes do not check the exception table"}
	t.Bug = Table{Name: "BUG/WARN sites", Note: "not located in an ARM Image"}
	t.KprobeBlacklist = Table{Name: "NOKPROBE_SYMBOL blacklist", Note: "not located in an ARM Image (kallsyms has no data symbols)"}
	t.Ftrace = Table{Name: "ftrace locations", Note: "no __gnu_mcount_nc in the symbols (pass kallsyms with --symbols)"}
	t.JumpLabel = Table{Name: "jump-label sites", Note: "no text bounds (pass kallsyms with --symbols)"}
	im := f.a32
	if im == nil || im.base == 0 || !t.CoreText.Known() {
		return t, nil
	}
	if m, ok := f.Symbols.ByName("__gnu_mcount_nc"); ok {
		var sites []uint64
		for s := range f.Symbols.All() {
			if !s.Func || s.Size == 0 || s.Module != "" || !t.CoreText.Ranges.Contains(s.Addr) {
				continue
			}
			if code, err := f.ReadAt(s.Addr, int(s.Size)); err == nil {
				sites = append(sites, ARMMcountCalls(code, s.Addr, m.Addr)...)
			}
		}
		t.Ftrace = Table{Name: "ftrace locations", Source: SourceCode, From: "bl __gnu_mcount_nc in text functions", Addrs: NewAddrSet(sites)}
	}
	var text [][2]uint64
	for _, x := range []*Table{&t.CoreText, &t.InitText} {
		for _, rg := range x.Ranges.Ranges() {
			text = append(text, [2]uint64{rg.Start, rg.End})
		}
	}
	armBlacklist(f, &t.KprobeBlacklist)
	if jl, err := FindARMJumpLabels(im.data, im.base, text); err == nil {
		t.JumpLabel = Table{Name: "jump-label sites", Source: SourceCode, From: "__jump_table (found by its shape)", Entry: 12, Addrs: NewAddrSet(jl)}
	} else {
		t.JumpLabel.Note = err.Error()
	}
	return t, nil
}

// armBlacklist finds the NOKPROBE_SYMBOL list of an ARM Image: init_kprobes
// passes __start_kprobe_blacklist and __stop_kprobe_blacklist to
// populate_kprobe_blacklist, loading each from its literal pool or with a
// MOVW/MOVT pair; of the pairs of such addresses, the widest whose every
// word is the start of a text function is the list (an array of function
// addresses).
func armBlacklist(f *File, t *Table) {
	sym, ok := f.Symbols.ByName("init_kprobes")
	if !ok || sym.Size == 0 {
		t.Note = "no init_kprobes in the symbols: the list is located from its code"
		return
	}
	code, err := f.ReadAt(sym.Addr, int(min(sym.Size, 1<<16)))
	if err != nil {
		t.Note = "init_kprobes: " + err.Error()
		return
	}
	im := f.a32
	inImage := func(a uint64) bool { return a%4 == 0 && a >= im.base && a-im.base <= uint64(len(im.data)) }
	var cands []uint64
	var movw [16]uint64
	for off := 0; off+4 <= len(code); off += 4 {
		w := binary.LittleEndian.Uint32(code[off:])
		if inImage(uint64(w)) {
			cands = append(cands, uint64(w)) // a literal-pool word
		}
		imm := uint64(w>>4&0xF000 | w&0xFFF)
		rd := w >> 12 & 15
		switch w & 0x0FF00000 {
		case 0x03000000: // MOVW
			movw[rd] = imm
		case 0x03400000: // MOVT
			if a := imm<<16 | movw[rd]; inImage(a) {
				cands = append(cands, a)
			}
		}
	}
	isFunc := func(a uint64) (Range, bool) {
		s, off, ok := f.Symbols.Lookup(a)
		if !ok || off != 0 || !s.Func || s.Size == 0 {
			return Range{}, false
		}
		return Range{Start: a, End: a + s.Size, Name: s.Name}, true
	}
	var best []Range
	for _, lo := range cands {
		for _, hi := range cands {
			if hi <= lo || (hi-lo)%4 != 0 || (hi-lo)/4 <= uint64(len(best)) {
				continue
			}
			var rs []Range
			for a := lo; a < hi; a += 4 {
				r, ok := isFunc(uint64(binary.LittleEndian.Uint32(im.data[a-im.base:])))
				if !ok {
					rs = nil
					break
				}
				rs = append(rs, r)
			}
			if rs != nil {
				best = rs
			}
		}
	}
	if len(best) < 8 {
		t.Note = fmt.Sprintf("no list of function addresses between two addresses init_kprobes loads (%d candidates)", len(cands))
		return
	}
	*t = Table{Name: t.Name, Source: SourceCode, From: "_kprobe_blacklist (bounds from init_kprobes)", Entry: 4, Ranges: NewRangeSet(best)}
}
