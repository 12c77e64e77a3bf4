package kimage

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/kboost/kboost/internal/memhint"
)

// Source says where a kernel table came from.
type Source int

const (
	SourceMissing Source = iota // not found: the audit must say "unknown", not guess
	SourceSection               // an ELF section of that name
	SourceSymbols               // bounds from __start_X/__stop_X-style symbols
	// SourceCode: bounds found in the kernel's code (the ADRP+ADD pairs of the
	// function that walks the table), checked entry by entry (arm64 Images).
	SourceCode
	// SourceNotApplicable: the architecture has no such table (known, empty).
	SourceNotApplicable
)

var sourceNames = [...]string{"missing", "section", "symbols", "code", "n/a"}

func (s Source) String() string {
	if s >= 0 && int(s) < len(sourceNames) {
		return sourceNames[s]
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// Table is one kernel table: a set of site addresses (Addrs) or address ranges
// (Ranges), with its provenance.
type Table struct {
	Name   string // "exception table", "BUG/WARN sites", ...
	Source Source
	From   string // the section or symbol names it was read from
	Note   string // why it is missing, or what was skipped
	Entry  int    // entry size in bytes for array tables, else 0
	Addrs  AddrSet
	Ranges RangeSet
}

// Known reports whether the table was found.
func (t *Table) Known() bool { return t.Source != SourceMissing }

// Len is the number of addresses, or of ranges for a range-only table.
func (t *Table) Len() int {
	if t.Addrs.Len() > 0 {
		return t.Addrs.Len()
	}
	return t.Ranges.Len()
}

func (t *Table) String() string {
	if !t.Known() {
		return fmt.Sprintf("%s: missing (%s)", t.Name, t.Note)
	}
	s := fmt.Sprintf("%s: %d from %s %s", t.Name, t.Len(), t.Source, t.From)
	if t.Note != "" {
		s += " (" + t.Note + ")"
	}
	return s
}

// Tables are the x86 Linux (6.1 layout) tables that make kprobes refuse or treat
// an address specially. Site tables hold exact addresses (a jump-label site is
// 2 or 5 bytes long, a static call 5: decode there for the length); range tables
// hold [start, end) ranges. All addresses are in the ELF's (link-time) space.
type Tables struct {
	ExTable    Table // exception-table instruction addresses (Addrs)
	Bug        Table // BUG()/WARN() ud2 addresses (Addrs)
	JumpLabel  Table // static-key (jump label) code sites (Addrs)
	StaticCall Table // inline static-call sites (Addrs)
	// Alternatives: original-instruction ranges patched at boot (Ranges, merged
	// where they overlap) and their start addresses (Addrs).
	Alternatives Table
	// KprobeBlacklist: functions listed with NOKPROBE_SYMBOL, as symbol ranges.
	KprobeBlacklist  Table
	KprobesText      Table // .kprobes.text (__kprobes functions)
	NoinstrText      Table // .noinstr.text
	EntryText        Table // entry code
	IRQEntryText     Table
	SoftIRQEntryText Table
	InitText         Table // __init code, freed after boot

	// Tables read for some architectures only (arm64); zero (Name "") elsewhere.

	// Ftrace: the kernel's ftrace record addresses (__mcount_loc entries after
	// ftrace_call_adjust).
	Ftrace Table
	// FtraceEntryNOP: the kernel rewrites the NOP before each ftrace record
	// at boot (arm64's ftrace_init_nop); elsewhere (arm: the records are the
	// bl __gnu_mcount_nc themselves) it is false.
	FtraceEntryNOP bool
	// FtraceOpsLiteral: the 8 bytes at ALIGN_DOWN(record - 12, 8), two NOPs
	// before the function, hold the record's ftrace_ops pointer, which
	// ftrace_init_nop sets to &ftrace_nop_ops at boot (arm64
	// DYNAMIC_FTRACE_WITH_CALL_OPS).
	FtraceOpsLiteral bool
	CoreText         Table // _stext.._etext (core_kernel_text after boot)
	IdmapText        Table // .idmap.text
	HypText          Table // .hyp.text (KVM nVHE hypervisor)
	HypIdmapText     Table // .hyp.idmap.text
	// Refused lists, when non-nil, every table whose addresses or ranges the
	// architecture's kprobe blacklist holds (populate_kprobe_blacklist and
	// arch_populate_kprobe_blacklist), areas widened to whole functions.
	Refused []*Table
}

// All lists every table the architecture has, for reports.
func (t *Tables) All() []*Table {
	all := []*Table{&t.ExTable, &t.Bug, &t.JumpLabel, &t.StaticCall, &t.Alternatives,
		&t.KprobeBlacklist, &t.KprobesText, &t.NoinstrText, &t.EntryText,
		&t.IRQEntryText, &t.SoftIRQEntryText, &t.InitText,
		&t.Ftrace, &t.CoreText, &t.IdmapText, &t.HypText, &t.HypIdmapText}
	out := all[:0]
	for _, x := range all {
		if x.Name != "" {
			out = append(out, x)
		}
	}
	return out
}

// tableLayout is the per-architecture shape of the tables (x86 Linux 6.1).
type tableLayout struct {
	ptr         int  // pointer size
	bugRelative bool // default of CONFIG_GENERIC_BUG_RELATIVE_POINTERS
}

var x86Layouts = map[string]tableLayout{
	"x86-64": {ptr: 8, bugRelative: true},
	"i386":   {ptr: 4, bugRelative: false},
}

// Fixed entry sizes (x86, 6.1): struct exception_table_entry {int insn, fixup,
// data}; struct alt_instr {s32 instr_offset, repl_offset; u16 cpuid; u8 instrlen,
// replacementlen} packed; struct static_call_site {s32 addr, key}; struct
// jump_entry {s32 code, target; long key}.
const (
	exEntrySize   = 12
	altEntrySize  = 12
	altLenOff     = 10
	scEntrySize   = 8
	scFlagsMask   = 3 // STATIC_CALL_SITE_TAIL | STATIC_CALL_SITE_INIT, in key
	jumpFixedSize = 8
)

// bugEntrySize is sizeof(struct bug_entry) for a configuration.
func bugEntrySize(ptr int, relative, verbose bool) int {
	addr := ptr
	if relative {
		addr = 4
	}
	size := addr
	if verbose {
		size += addr + 2 // file pointer (or s32 displacement) + line
	}
	size += 2 // flags
	align := addr
	if size%align != 0 {
		size += align - size%align
	}
	return size
}

// archTables holds the table readers of the architectures whose layout is not
// x86's (x86Layouts); each is a function of the File.
var archTables = map[string]func(f *File) (*Tables, error){
	"arm64": arm64KernelTables, // a64_tables.go
	"arm":   armKernelTables,   // a32_tables.go
	"thumb": armKernelTables,
}

// KernelTables reads the special-site tables of a Linux kernel image (x86-64,
// i386, arm64). A table that cannot be located has Source == SourceMissing and
// a Note; tables whose data exist but are malformed make KernelTables fail.
func KernelTables(f *File) (*Tables, error) {
	if f.Arch == nil {
		return nil, fmt.Errorf("kernel tables: %w", ErrUnsupportedArch)
	}
	if read, ok := archTables[f.Arch.Name]; ok {
		return read(f)
	}
	lay, ok := x86Layouts[f.Arch.Name]
	if !ok {
		return nil, fmt.Errorf("kernel tables for %s: %w", f.Arch.Name, ErrUnsupportedArch)
	}
	t := &Tables{}
	r := tableReader{f: f, lay: lay}

	t.ExTable = Table{Name: "exception table", Entry: exEntrySize}
	if err := r.relSites(&t.ExTable, "__ex_table", "__start___ex_table", "__stop___ex_table", exEntrySize, 0, 0); err != nil {
		return nil, err
	}

	rel, verbose := lay.bugRelative, true
	t.Bug = Table{Name: "BUG/WARN sites"}
	var bugNote string
	if f.Config != nil {
		if _, ok := f.Config.Value("GENERIC_BUG_RELATIVE_POINTERS"); ok {
			rel = f.Config.Bool("GENERIC_BUG_RELATIVE_POINTERS")
		}
		if _, ok := f.Config.Value("DEBUG_BUGVERBOSE"); ok {
			verbose = f.Config.Bool("DEBUG_BUGVERBOSE")
		}
		if _, ok := f.Config.Value("GENERIC_BUG"); ok && !f.Config.Bool("GENERIC_BUG") {
			bugNote = "CONFIG_GENERIC_BUG is off"
		}
	} else {
		bugNote = "no config: assumed DEBUG_BUGVERBOSE=y"
	}
	t.Bug.Entry = bugEntrySize(lay.ptr, rel, verbose)
	if rel && lay.ptr == 8 && r.bugFormat(t.Bug.Entry) {
		t.Bug.Entry += 4 // s32 bug_entry::format
	}
	if rel {
		if err := r.relSites(&t.Bug, "__bug_table", "__start___bug_table", "__stop___bug_table", t.Bug.Entry, 0, 0); err != nil {
			return nil, err
		}
	} else {
		if err := r.ptrSites(&t.Bug, "__bug_table", "__start___bug_table", "__stop___bug_table", t.Bug.Entry); err != nil {
			return nil, err
		}
	}
	if bugNote != "" && t.Bug.Note == "" {
		t.Bug.Note = bugNote
	}

	t.JumpLabel = Table{Name: "jump-label sites", Entry: jumpFixedSize + lay.ptr}
	if err := r.relSites(&t.JumpLabel, "__jump_table", "__start___jump_table", "__stop___jump_table", t.JumpLabel.Entry, 0, 0); err != nil {
		return nil, err
	}

	t.StaticCall = Table{Name: "static-call sites", Entry: scEntrySize}
	if err := r.relSites(&t.StaticCall, ".static_call_sites", "__start_static_call_sites", "__stop_static_call_sites", scEntrySize, 0, 0); err != nil {
		return nil, err
	}

	t.Alternatives = Table{Name: "alternatives", Entry: altEntrySize}
	if err := r.altRanges(&t.Alternatives); err != nil {
		return nil, err
	}

	t.KprobeBlacklist = Table{Name: "NOKPROBE_SYMBOL blacklist", Entry: lay.ptr}
	if err := r.blacklist(&t.KprobeBlacklist); err != nil {
		return nil, err
	}

	for _, tr := range []struct {
		t          *Table
		name, sec  string
		start, end string
	}{
		{&t.KprobesText, ".kprobes.text", ".kprobes.text", "__kprobes_text_start", "__kprobes_text_end"},
		{&t.NoinstrText, ".noinstr.text", ".noinstr.text", "__noinstr_text_start", "__noinstr_text_end"},
		{&t.EntryText, "entry text", ".entry.text", "__entry_text_start", "__entry_text_end"},
		{&t.IRQEntryText, "irqentry text", ".irqentry.text", "__irqentry_text_start", "__irqentry_text_end"},
		{&t.SoftIRQEntryText, "softirqentry text", ".softirqentry.text", "__softirqentry_text_start", "__softirqentry_text_end"},
		{&t.InitText, "init text", ".init.text", "_sinittext", "_einittext"},
	} {
		*tr.t = Table{Name: tr.name}
		r.textRange(tr.t, tr.sec, tr.start, tr.end)
	}
	return t, nil
}

type tableReader struct {
	f   *File
	lay tableLayout
}

// locate finds a table's bytes and address: the named section, else the
// start/stop symbols. ok=false leaves t marked missing with a note.
func (r *tableReader) locate(t *Table, sec, start, stop string) (data []byte, addr uint64, ok bool, err error) {
	if s, found := r.f.Section(sec); found && !s.NoBits {
		d, err := s.Data()
		if err != nil {
			return nil, 0, false, err
		}
		t.Source, t.From = SourceSection, sec
		return d, s.Addr, true, nil
	}
	if r.f.Symbols.Len() == 0 {
		t.Note = fmt.Sprintf("no section %s and no symbols (pass a System.map or kallsyms with --symbols)", sec)
		return nil, 0, false, nil
	}
	a, ok1 := r.f.Symbols.ByName(start)
	b, ok2 := r.f.Symbols.ByName(stop)
	if !ok1 || !ok2 {
		t.Note = fmt.Sprintf("no section %s and no %s/%s symbols (kallsyms needs CONFIG_KALLSYMS_ALL)", sec, start, stop)
		return nil, 0, false, nil
	}
	if b.Addr < a.Addr {
		return nil, 0, false, corrupt(t.Name, -1, "%s (%#x) is below %s (%#x)", stop, b.Addr, start, a.Addr)
	}
	t.Source, t.From = SourceSymbols, start+".."+stop
	if a.Addr == b.Addr {
		return nil, a.Addr, true, nil
	}
	d, err := r.f.ReadAt(a.Addr, int(b.Addr-a.Addr))
	if err != nil {
		return nil, 0, false, fmt.Errorf("%s: reading %s..%s: %w", t.Name, start, stop, err)
	}
	return d, a.Addr, true, nil
}

func checkMultiple(t *Table, n, entry int) error {
	if n%entry != 0 {
		return corrupt(t.Name, -1, "size %d from %s is not a multiple of the %d-byte entry (wrong config?)", n, t.From, entry)
	}
	return nil
}

func s32(b []byte) int64 { return int64(int32(binary.LittleEndian.Uint32(b))) }

// relSites reads entries whose field at fieldOff is an s32 displacement from
// the field itself to the site; mask clears flag bits in the result.
func (r *tableReader) relSites(t *Table, sec, start, stop string, entry, fieldOff int, mask uint64) error {
	d, base, ok, err := r.locate(t, sec, start, stop)
	if err != nil || !ok {
		return err
	}
	if err := checkMultiple(t, len(d), entry); err != nil {
		return err
	}
	addrs := make([]uint64, 0, len(d)/entry)
	memhint.Prefault(addrs)
	for off := 0; off+entry <= len(d); off += entry {
		field := base + uint64(off+fieldOff)
		a := r.wrap(field + uint64(s32(d[off+fieldOff:])))
		addrs = append(addrs, a&^mask)
	}
	t.Addrs = NewAddrSet(addrs)
	return nil
}

// ptrSites reads entries starting with an absolute pointer to the site.
func (r *tableReader) ptrSites(t *Table, sec, start, stop string, entry int) error {
	d, _, ok, err := r.locate(t, sec, start, stop)
	if err != nil || !ok {
		return err
	}
	if err := checkMultiple(t, len(d), entry); err != nil {
		return err
	}
	addrs := make([]uint64, 0, len(d)/entry)
	memhint.Prefault(addrs)
	for off := 0; off+entry <= len(d); off += entry {
		addrs = append(addrs, r.ptr(d[off:]))
	}
	t.Addrs = NewAddrSet(addrs)
	return nil
}

func (r *tableReader) ptr(b []byte) uint64 {
	if r.lay.ptr == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	return uint64(binary.LittleEndian.Uint32(b))
}

// wrap truncates an address to the pointer size.
func (r *tableReader) wrap(a uint64) uint64 {
	if r.lay.ptr == 4 {
		return a & 0xFFFFFFFF
	}
	return a
}

func (r *tableReader) altRanges(t *Table) error {
	d, base, ok, err := r.locate(t, ".altinstructions", "__alt_instructions", "__alt_instructions_end")
	if err != nil || !ok {
		return err
	}
	size, lenOff := altLayout(r.f.KernelVersion, len(d))
	t.Entry = size
	if err := checkMultiple(t, len(d), size); err != nil {
		return err
	}
	rs := make([]Range, 0, len(d)/size)
	starts := make([]uint64, 0, len(d)/size)
	memhint.Prefault(rs)
	memhint.Prefault(starts)
	empty := 0
	for off := 0; off+size <= len(d); off += size {
		a := r.wrap(base + uint64(off) + uint64(s32(d[off:])))
		n := uint64(d[off+lenOff])
		if n == 0 {
			empty++
			continue
		}
		rs = append(rs, Range{Start: a, End: a + n})
		starts = append(starts, a)
	}
	t.Ranges = NewRangeSet(rs)
	t.Addrs = NewAddrSet(starts)
	if empty > 0 {
		t.Note = fmt.Sprintf("%d entries with instrlen 0 skipped", empty)
	}
	return nil
}

// bugFormat says whether x86-64's bug_entry holds the format displacement
// after bug_addr (HAVE_ARCH_BUG_FORMAT: in the 7.2.13 source, not in
// 6.12.117; an unreadable release is taken as older). For a release
// between those the table's size decides: a multiple of size+4, not of size.
func (r *tableReader) bugFormat(size int) bool {
	var major, minor int
	if _, err := fmt.Sscanf(r.f.KernelVersion, "%d.%d", &major, &minor); err != nil || major < 6 || (major == 6 && minor <= 12) {
		return false
	}
	if major >= 7 {
		return true
	}
	sec, ok := r.f.Section("__bug_table")
	return ok && sec.Size%uint64(size) != 0 && sec.Size%uint64(size+4) == 0
}

// alt_instr after Linux 6.1 (read in the 6.12.117 and 7.2.13 sources): the
// u16 cpuid became a u32 of cpuid:16 and flags:16, so entries are 14 bytes,
// instrlen at 12. Releases between 6.1 and 6.12 are taken to have it too.
const (
	altEntrySize62 = 14
	altLenOff62    = 12
)

// altLayout is the alt_instr size and instrlen offset for a kernel release
// (uname -r form); without a readable release, the one whose size divides
// the table (6.1's when both do).
func altLayout(release string, n int) (size, lenOff int) {
	var major, minor int
	if _, err := fmt.Sscanf(release, "%d.%d", &major, &minor); err == nil {
		if major > 6 || (major == 6 && minor > 1) {
			return altEntrySize62, altLenOff62
		}
		return altEntrySize, altLenOff
	}
	if n%altEntrySize != 0 && n%altEntrySize62 == 0 {
		return altEntrySize62, altLenOff62
	}
	return altEntrySize, altLenOff
}

// blacklist reads the NOKPROBE_SYMBOL address array and widens each address to
// the function holding it, as the kernel does with kallsyms at boot.
func (r *tableReader) blacklist(t *Table) error {
	d, _, ok, err := r.locate(t, "_kprobe_blacklist", "__start_kprobe_blacklist", "__stop_kprobe_blacklist")
	if err != nil || !ok {
		return err
	}
	if err := checkMultiple(t, len(d), r.lay.ptr); err != nil {
		return err
	}
	var rs []Range
	var unresolved []string
	for off := 0; off+r.lay.ptr <= len(d); off += r.lay.ptr {
		a := r.ptr(d[off:])
		sym, symOff, ok := r.f.Symbols.Lookup(a)
		if !ok || sym.Size == 0 {
			unresolved = append(unresolved, fmt.Sprintf("%#x", a))
			continue
		}
		start := a - symOff
		rs = append(rs, Range{Start: start, End: start + sym.Size, Name: sym.Name})
	}
	t.Ranges = NewRangeSet(rs)
	if len(unresolved) > 0 {
		if len(unresolved) > 5 {
			unresolved = append(unresolved[:5], "...")
		}
		t.Note = fmt.Sprintf("%d addresses without a sized symbol skipped: %s", len(unresolved), strings.Join(unresolved, " "))
	}
	return nil
}

// textRange reads a [start, end) text range from symbols, or an ELF section.
func (r *tableReader) textRange(t *Table, sec, start, end string) {
	a, ok1 := r.f.Symbols.ByName(start)
	b, ok2 := r.f.Symbols.ByName(end)
	if ok1 && ok2 {
		t.Source, t.From = SourceSymbols, start+".."+end
		t.Ranges = NewRangeSet([]Range{{Start: a.Addr, End: b.Addr, Name: t.Name}})
		return
	}
	if s, ok := r.f.Section(sec); ok {
		t.Source, t.From = SourceSection, sec
		t.Ranges = NewRangeSet([]Range{{Start: s.Addr, End: s.Addr + s.Size, Name: t.Name}})
		return
	}
	if r.f.Symbols.Len() == 0 {
		t.Note = fmt.Sprintf("no symbols %s/%s (pass a System.map or kallsyms with --symbols)", start, end)
	} else {
		t.Note = fmt.Sprintf("symbols %s/%s not found", start, end)
	}
}
