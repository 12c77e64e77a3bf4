package kimage

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
)

// arm64 Linux 6.1 kernel tables.
//
// Debian's arm64 kernel has no CONFIG_KALLSYMS_ALL: kallsyms names text only,
// so the bounds of __ex_table, __jump_table, __bug_table, __mcount_loc and the
// kprobe blacklist are not symbols. The kernel's own code names them: the
// function that walks a table loads its bounds with ADRP+ADD pairs. For each
// table, arm64Specs names those functions (anchors); the addresses their
// ADRP+ADD pairs form are the candidate bounds, and the table is the widest
// candidate pair whose every entry has the table's shape (sites in kernel
// text, the instruction the table describes at the site, relocated pointers
// where the table holds absolute addresses). A bound pair that does not pass
// leaves the table missing, never guessed.
//
// Entry formats (arm64, 6.1):
//   - exception_table_entry {s32 insn, fixup; s16 type, data}: 12 bytes,
//     relative to each field, sorted by insn at build time; type 0..4.
//   - jump_entry {s32 code, target; s64 key}: 16 bytes, all relative
//     (HAVE_ARCH_JUMP_LABEL_RELATIVE), key's low 2 bits are flags; the code
//     word is a NOP or a B (JUMP_LABEL_NOP_SIZE 4).
//   - bug_entry {s32 bug_addr; s32 file; u16 line, flags} with
//     GENERIC_BUG_RELATIVE_POINTERS and DEBUG_BUGVERBOSE: 12 bytes; the word at
//     bug_addr is BRK #0x800 (BUG_BRK_IMM).
//   - __mcount_loc (with FTRACE_MCOUNT_USE_PATCHABLE_FUNCTION_ENTRY the
//     linker script puts __patchable_function_entries there): one absolute
//     pointer per function, which ftrace_call_adjust turns into the ftrace
//     record (a64FtraceAdjust): the first of the two entry NOPs + 4 with
//     DYNAMIC_FTRACE_WITH_REGS (6.1) or WITH_ARGS; with
//     DYNAMIC_FTRACE_WITH_CALL_OPS (6.12, 7.2: -fpatchable-function-entry=4,2)
//     the pointer is the first of two NOPs before the function, 8-byte
//     aligned, and the record is 12 bytes on (16 past a BTI when
//     ARM64_BTI_KERNEL); a misaligned pointer gives no record.
//   - _kprobe_blacklist (NOKPROBE_SYMBOL): one absolute pointer per function.
//
// Absolute pointers are read through .rela.dyn (see a64_image.go).

const (
	a64NOP       = 0xD503201F
	a64BMask     = 0xFC000000
	a64BOp       = 0x14000000
	a64BugBRK    = 0xD4210000 // BRK #0x800
	a64ExEntry   = 12
	a64JumpEntry = 16
	a64PtrEntry  = 8
	a64ExTypeMax = 5 // EX_TYPE_LOAD_UNALIGNED_ZEROPAD (4 in 6.1 and 6.12; 7.2 adds EX_TYPE_UACCESS_CPY before it)
	// a64MaxTable bounds a table (bytes): the largest, __mcount_loc, is about
	// 8 bytes per function.
	a64MaxTable = 16 << 20
)

// a64View answers what an arm64 table validator asks of the Image: text
// ranges, words and relocated pointers, all by link address.
type a64View struct {
	im         *arm64Image
	text, init Range // _stext.._etext, _sinittext.._einittext
	exit       Range // __exittext_begin..__exittext_end, when kallsyms names them (6.12)
	bugEntry   int
	mcount     a64FtraceAdjust
}

// a64FtraceAdjust is arm64's ftrace_call_adjust for one configuration.
type a64FtraceAdjust struct {
	entryNOPs bool // DYNAMIC_FTRACE_WITH_REGS or WITH_ARGS: patchable entry NOPs
	callOps   bool // DYNAMIC_FTRACE_WITH_CALL_OPS: two NOPs before the function
	btiKernel bool // ARM64_BTI_KERNEL: the function may start with a BTI
}

// a64FtraceConfig reads the adjustment's configuration. A config without
// either option (none given: an Image alone) is taken as 6.1's
// DYNAMIC_FTRACE_WITH_REGS.
func a64FtraceConfig(c *KConfig) a64FtraceAdjust {
	a := a64FtraceAdjust{entryNOPs: true}
	if c == nil {
		return a
	}
	_, regsSet := c.Value("DYNAMIC_FTRACE_WITH_REGS")
	_, argsSet := c.Value("DYNAMIC_FTRACE_WITH_ARGS")
	if regsSet || argsSet {
		a.entryNOPs = c.Bool("DYNAMIC_FTRACE_WITH_REGS") || c.Bool("DYNAMIC_FTRACE_WITH_ARGS")
	}
	a.callOps = a.entryNOPs && c.Bool("DYNAMIC_FTRACE_WITH_CALL_OPS")
	a.btiKernel = c.Bool("ARM64_BTI_KERNEL")
	return a
}

// record is the ftrace record of the __mcount_loc pointer p, 0 for none.
func (m a64FtraceAdjust) record(v *a64View, p uint64) uint64 {
	switch {
	case !m.entryNOPs:
		return p // the bl _mcount itself
	case !m.callOps:
		return p + 4
	case p%8 != 0:
		return 0 // "Misaligned patch-site": the kernel drops it
	}
	r := p + 12
	if w, ok := v.word(p + 8); ok && m.btiKernel && isA64BTI(w) {
		r += 4
	}
	return r
}

// isA64BTI: BTI, BTI c, j or jc (HINT #32, #34, #36, #38).
func isA64BTI(w uint32) bool { return w&0xFFFFFF3F == 0xD503241F }

func (v *a64View) inText(a uint64) bool {
	return (a >= v.text.Start && a < v.text.End) || (a >= v.init.Start && a < v.init.End)
}

// inCode reports whether a may hold code a table names: core or init text, or
// the rest of the init text segment after _einittext (.exit.text, whose BUG
// and jump-label sites the tables list too, and .altinstructions), which ends
// at the next SEGMENT_ALIGN (64 KiB) boundary, or at __exittext_end where
// kallsyms names it (6.12 and later put .exit.text, unaligned, before
// .altinstructions).
func (v *a64View) inCode(a uint64) bool {
	const segAlign = 64 << 10
	return v.inText(a) || (v.init.End > 0 && a >= v.init.End && a < (v.init.End+segAlign-1)&^(segAlign-1)) ||
		(a >= v.exit.Start && a < v.exit.End)
}

func (v *a64View) bytes(a uint64, n int) ([]byte, bool) {
	o, ok := v.im.fileOff(v.im.base, a, n)
	if !ok || n < 0 {
		return nil, false
	}
	return v.im.data[o : o+uint64(n)], true
}

func (v *a64View) word(a uint64) (uint32, bool) {
	b, ok := v.bytes(a, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// rel is field + s32 displacement.
func rel(field uint64, b []byte) uint64 {
	return field + uint64(int64(int32(binary.LittleEndian.Uint32(b))))
}

// a64Spec is one arm64 table: where its bounds are used, its entry size, what
// a valid entry looks like, and the site an entry names.
type a64Spec struct {
	table   func(*Tables) *Table
	name    string
	bounds  string   // the symbols the bounds stand for, for Table.From
	anchors []string // functions whose ADRP+ADD pairs name the bounds
	entry   func(v *a64View) int
	// valid reports whether the entry e at link address a has the table's
	// shape; prev is the previous entry's site (for sorted tables), first says
	// there is none.
	valid func(v *a64View, a uint64, e []byte, prev uint64, first bool) bool
	site  func(v *a64View, a uint64, e []byte) uint64
}

var arm64Specs = []a64Spec{
	{
		table: func(t *Tables) *Table { return &t.ExTable },
		name:  "exception table", bounds: "__start___ex_table..__stop___ex_table",
		anchors: []string{"search_kernel_exception_table", "sort_main_extable"},
		entry:   func(*a64View) int { return a64ExEntry },
		valid: func(v *a64View, a uint64, e []byte, prev uint64, first bool) bool {
			insn, fixup := rel(a, e), rel(a+4, e[4:])
			typ := int16(binary.LittleEndian.Uint16(e[8:]))
			return v.inCode(insn) && insn&3 == 0 && v.inCode(fixup) && fixup&3 == 0 &&
				typ >= 0 && typ <= a64ExTypeMax && (first || insn >= prev)
		},
		site: func(v *a64View, a uint64, e []byte) uint64 { return rel(a, e) },
	},
	{
		table: func(t *Tables) *Table { return &t.JumpLabel },
		name:  "jump-label sites", bounds: "__start___jump_table..__stop___jump_table",
		anchors: []string{"jump_label_init"},
		entry:   func(*a64View) int { return a64JumpEntry },
		valid: func(v *a64View, a uint64, e []byte, _ uint64, _ bool) bool {
			code, target := rel(a, e), rel(a+4, e[4:])
			key := a + 8 + binary.LittleEndian.Uint64(e[8:])
			w, ok := v.word(code)
			keyOK := key >= v.im.base && key-v.im.base < v.im.imageSize && !v.inCode(key)
			return ok && v.inCode(code) && code&3 == 0 && (w == a64NOP || w&a64BMask == a64BOp) &&
				v.inCode(target) && target&3 == 0 && keyOK
		},
		site: func(v *a64View, a uint64, e []byte) uint64 { return rel(a, e) },
	},
	{
		table: func(t *Tables) *Table { return &t.Bug },
		name:  "BUG/WARN sites", bounds: "__start___bug_table..__stop___bug_table",
		anchors: []string{"find_bug", "module_find_bug"},
		entry:   func(v *a64View) int { return v.bugEntry },
		valid: func(v *a64View, a uint64, e []byte, _ uint64, _ bool) bool {
			s := rel(a, e)
			w, ok := v.word(s)
			return ok && v.inCode(s) && s&3 == 0 && w == a64BugBRK
		},
		site: func(v *a64View, a uint64, e []byte) uint64 { return rel(a, e) },
	},
	{
		table: func(t *Tables) *Table { return &t.Ftrace },
		name:  "ftrace locations", bounds: "__start_mcount_loc..__stop_mcount_loc",
		anchors: []string{"ftrace_init"},
		entry:   func(*a64View) int { return a64PtrEntry },
		valid: func(v *a64View, a uint64, e []byte, _ uint64, _ bool) bool {
			p, ok := v.im.pointer(a)
			if !ok {
				return false
			}
			if p == 0 {
				// A discarded function: ftrace_process_locs skips NULL
				// entries. 6.12's build-time sort moves them to the
				// front, each with an R_AARCH64_RELATIVE of addend 0.
				return true
			}
			w, ok := v.word(p)
			return ok && v.inText(p) && p&3 == 0 && w == a64NOP
		},
		site: func(v *a64View, a uint64, e []byte) uint64 {
			p, _ := v.im.pointer(a)
			if p == 0 {
				return 0
			}
			return v.mcount.record(v, p)
		},
	},
	{
		table: func(t *Tables) *Table { return &t.KprobeBlacklist },
		name:  "NOKPROBE_SYMBOL blacklist", bounds: "__start_kprobe_blacklist..__stop_kprobe_blacklist",
		anchors: []string{"init_kprobes", "populate_kprobe_blacklist"},
		entry:   func(*a64View) int { return a64PtrEntry },
		valid: func(v *a64View, a uint64, e []byte, _ uint64, _ bool) bool {
			p, ok := v.im.pointer(a)
			if ok && p == 0 && !v.im.relocated(a) {
				return true // a discarded function: populate_kprobe_blacklist skips it
			}
			// Functions anywhere in the text segments, including the code
			// between _etext and the init text (.rodata.text: trampolines,
			// hibernate, kexec), which kprobes then skips as not text.
			return ok && v.im.relocated(a) && p >= v.text.Start && (p < v.text.End || v.inCode(p) || (v.init.Start > 0 && p < v.init.Start)) && p&3 == 0
		},
		site: func(v *a64View, a uint64, e []byte) uint64 { p, _ := v.im.pointer(a); return p },
	},
}

// a64TextTables are the arm64 text ranges kprobes care about, from kallsyms.
var a64TextTables = []struct {
	table      func(*Tables) *Table
	name, sec  string
	start, end string
}{
	{func(t *Tables) *Table { return &t.CoreText }, "core text", ".text", "_stext", "_etext"},
	{func(t *Tables) *Table { return &t.InitText }, "init text", ".init.text", "_sinittext", "_einittext"},
	{func(t *Tables) *Table { return &t.KprobesText }, ".kprobes.text", ".kprobes.text", "__kprobes_text_start", "__kprobes_text_end"},
	{func(t *Tables) *Table { return &t.NoinstrText }, ".noinstr.text", ".noinstr.text", "__noinstr_text_start", "__noinstr_text_end"},
	{func(t *Tables) *Table { return &t.EntryText }, "entry text", ".entry.text", "__entry_text_start", "__entry_text_end"},
	{func(t *Tables) *Table { return &t.IRQEntryText }, "irqentry text", ".irqentry.text", "__irqentry_text_start", "__irqentry_text_end"},
	{func(t *Tables) *Table { return &t.SoftIRQEntryText }, "softirqentry text", ".softirqentry.text", "__softirqentry_text_start", "__softirqentry_text_end"},
	{func(t *Tables) *Table { return &t.IdmapText }, "idmap text", ".idmap.text", "__idmap_text_start", "__idmap_text_end"},
	{func(t *Tables) *Table { return &t.HypText }, "hyp text", ".hyp.text", "__hyp_text_start", "__hyp_text_end"},
	{func(t *Tables) *Table { return &t.HypIdmapText }, "hyp idmap text", ".hyp.idmap.text", "__hyp_idmap_text_start", "__hyp_idmap_text_end"},
}

// arm64KernelTables reads the tables of an arm64 Image (or an arm64 vmlinux
// ELF with symbols: the anchors work the same on its sections).
func arm64KernelTables(f *File) (*Tables, error) {
	t := &Tables{}
	r := tableReader{f: f, lay: tableLayout{ptr: 8, bugRelative: true}}
	for _, tt := range a64TextTables {
		x := tt.table(t)
		*x = Table{Name: tt.name}
		r.textRange(x, tt.sec, tt.start, tt.end)
	}
	t.StaticCall = Table{Name: "static-call sites", Source: SourceNotApplicable, Note: "arm64 6.1 has no inline static calls (HAVE_STATIC_CALL_INLINE)"}
	t.Alternatives = Table{Name: "alternatives", Source: SourceNotApplicable, Note: "arm64 kprobes do not consult .altinstructions"}

	rel, verbose := true, true
	if f.Config != nil {
		if _, ok := f.Config.Value("GENERIC_BUG_RELATIVE_POINTERS"); ok {
			rel = f.Config.Bool("GENERIC_BUG_RELATIVE_POINTERS")
		}
		if _, ok := f.Config.Value("DEBUG_BUGVERBOSE"); ok {
			verbose = f.Config.Bool("DEBUG_BUGVERBOSE")
		}
	}
	v := &a64View{im: f.a64, bugEntry: bugEntrySize(8, rel, verbose), mcount: a64FtraceConfig(f.Config)}
	if t.CoreText.Known() {
		v.text = t.CoreText.Ranges.Ranges()[0]
	}
	if t.InitText.Known() {
		v.init = t.InitText.Ranges.Ranges()[0]
	}
	b, ok1 := f.Symbols.ByName("__exittext_begin")
	e, ok2 := f.Symbols.ByName("__exittext_end")
	if ok1 && ok2 && e.Addr > b.Addr {
		v.exit = Range{Start: b.Addr, End: e.Addr}
	}
	if v.im == nil {
		for _, s := range arm64Specs {
			*s.table(t) = Table{Name: s.name, Note: "not an arm64 Image: the arm64 tables are located in Image files"}
		}
	} else {
		if v.im.base == 0 || f.Config != nil {
			v.im.findBase(f.Config)
		}
		for _, s := range arm64Specs {
			x := s.table(t)
			*x = Table{Name: s.name, Entry: s.entry(v)}
			if err := a64Locate(f, v, s, x); err != nil {
				return nil, err
			}
		}
		if !rel {
			t.Bug.Source, t.Bug.Addrs = SourceMissing, AddrSet{}
			t.Bug.Note = "CONFIG_GENERIC_BUG_RELATIVE_POINTERS is off: absolute bug_entry layout not modelled for arm64"
		}
	}
	a64WidenBlacklist(f, t)
	t.FtraceEntryNOP = true
	t.FtraceOpsLiteral = v.mcount.callOps
	t.Refused = []*Table{&t.KprobeBlacklist, &t.KprobesText, &t.NoinstrText, &t.EntryText, &t.IRQEntryText,
		&t.IdmapText, &t.HypText, &t.HypIdmapText}
	for _, x := range t.Refused[1:] {
		a64WidenArea(f, x)
	}
	return t, nil
}

// a64Locate finds spec s's table from its anchors' ADRP+ADD pairs.
func a64Locate(f *File, v *a64View, s a64Spec, t *Table) error {
	if f.Symbols.Len() == 0 {
		t.Note = "no symbols (pass kallsyms with --symbols): the table is located from the code of " + strings.Join(s.anchors, ", ")
		return nil
	}
	var cands []uint64
	var found []string
	for _, name := range s.anchors {
		sym, ok := f.Symbols.ByName(name)
		if !ok || sym.Size == 0 {
			continue
		}
		code, ok := v.bytes(sym.Addr, int(min(sym.Size, 1<<16)))
		if !ok {
			continue
		}
		found = append(found, name)
		cands = append(cands, A64AddrRefs(code, sym.Addr)...)
	}
	if len(found) == 0 {
		t.Note = fmt.Sprintf("none of %s in the symbols: cannot locate %s", strings.Join(s.anchors, ", "), s.bounds)
		return nil
	}
	start, stop, ok := a64BestPair(v, s, cands)
	if !ok {
		t.Note = fmt.Sprintf("no address pair used by %s bounds a well-formed %s", strings.Join(found, ", "), s.name)
		return nil
	}
	t.Source, t.From = SourceCode, fmt.Sprintf("%s (%#x..%#x, from %s)", s.bounds, start, stop, strings.Join(found, ", "))
	n := s.entry(v)
	var addrs []uint64
	for a := start; a < stop; a += uint64(n) {
		e, _ := v.bytes(a, n)
		if x := s.site(v, a, e); x != 0 {
			addrs = append(addrs, x)
		}
	}
	t.Addrs = NewAddrSet(addrs)
	return nil
}

// a64BestPair returns the widest [start, stop) among the candidate addresses
// in which every entry is valid.
func a64BestPair(v *a64View, s a64Spec, cands []uint64) (start, stop uint64, ok bool) {
	sort.Slice(cands, func(i, j int) bool { return cands[i] < cands[j] })
	cands = dedup(cands)
	n := uint64(s.entry(v))
	if n == 0 {
		return 0, 0, false
	}
	for i, a := range cands {
		// The longest valid run of entries from a.
		var run uint64
		var prev uint64
		for run < a64MaxTable {
			e, okb := v.bytes(a+run, int(n))
			if !okb || !s.valid(v, a+run, e, prev, run == 0) {
				break
			}
			prev = s.site(v, a+run, e)
			run += n
		}
		for j := len(cands) - 1; j > i; j-- {
			b := cands[j]
			if b-a <= run && (b-a)%n == 0 {
				if b-a > stop-start {
					start, stop, ok = a, b, true
				}
				break
			}
		}
	}
	return start, stop, ok
}

func dedup(s []uint64) []uint64 {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// A64AddrRefs lists the addresses an A64 function forms with ADRP+ADD pairs
// (ADRP Xd, page; ADD Xd', Xd, #imm{, lsl #12}), in code order: how kernel
// code takes the address of a linker-script symbol. code is the function's
// bytes at link address pc.
func A64AddrRefs(code []byte, pc uint64) []uint64 {
	var page [32]uint64
	var valid [32]bool
	var out []uint64
	for i := 0; i+4 <= len(code); i += 4 {
		w := binary.LittleEndian.Uint32(code[i:])
		at := pc + uint64(i)
		switch {
		case w&0x9F000000 == 0x90000000: // ADRP
			imm := int64(((w>>29)&3)|((w>>5)&0x7FFFF)<<2) << 43 >> 43 // 21-bit signed
			d := w & 31
			page[d], valid[d] = (at&^0xFFF)+uint64(imm<<12), true
		case w&0xFF800000 == 0x91000000: // ADD (immediate), 64-bit
			n, d := (w>>5)&31, w&31
			imm := uint64((w >> 10) & 0xFFF)
			if w&(1<<22) != 0 {
				imm <<= 12
			}
			if n != 31 && valid[n] {
				out = append(out, page[n]+imm)
			}
			if d != 31 && d != n {
				valid[d] = false
			}
		}
	}
	return out
}

// a64WidenBlacklist turns the NOKPROBE_SYMBOL addresses into the functions
// holding them (kprobe_add_ksym_blacklist); addresses outside the kernel text
// (core and init) are skipped, as the kernel skips them.
func a64WidenBlacklist(f *File, tabs *Tables) {
	t := &tabs.KprobeBlacklist
	if !t.Known() {
		return
	}
	isText := func(a uint64) bool {
		for _, x := range []*Table{&tabs.CoreText, &tabs.InitText} {
			for _, r := range x.Ranges.Ranges() {
				if a >= r.Start && a < r.End {
					return true
				}
			}
		}
		return false
	}
	var rs []Range
	var unresolved int
	for _, a := range t.Addrs.Addrs() {
		if !isText(a) {
			continue
		}
		sym, off, ok := f.Symbols.Lookup(a)
		if !ok || sym.Size == 0 {
			unresolved++
			continue
		}
		rs = append(rs, Range{Start: a - off, End: a - off + sym.Size, Name: sym.Name})
	}
	t.Ranges = NewRangeSet(rs)
	if unresolved > 0 {
		t.Note = fmt.Sprintf("%d addresses without a sized symbol skipped", unresolved)
	}
}

// a64WidenArea widens a text area to whole functions, as
// kprobe_add_area_blacklist does: from the function holding its start to the
// end of the function holding its last byte.
func a64WidenArea(f *File, t *Table) {
	if !t.Known() || t.Ranges.Len() != 1 {
		return
	}
	r := t.Ranges.Ranges()[0]
	if r.End <= r.Start {
		return
	}
	start, end := r.Start, r.End
	if _, off, ok := f.Symbols.Lookup(r.Start); ok {
		start = r.Start - off
	}
	if s, off, ok := f.Symbols.Lookup(r.End - 1); ok && s.Size > 0 {
		end = r.End - 1 - off + s.Size
	}
	t.Ranges = NewRangeSet([]Range{{Start: start, End: end, Name: t.Name}})
}
