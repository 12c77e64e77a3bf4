package kimage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// arm64 CPU alternatives (Linux 6.1, arch/arm64/kernel/alternative.c).
//
// The kernel rewrites some of its instructions at boot, depending on the
// CPU: each entry of .altinstructions (__alt_instructions..
// __alt_instructions_end) is a struct alt_instr of 12 bytes,
//
//	s32 orig_offset  original instructions, relative to the field
//	s32 alt_offset   replacement instructions (or a callback), relative to the field
//	u16 cpufeature   the cpucap number; bit 15 (ARM64_CB_BIT) marks a callback
//	u8  orig_len     bytes of original instructions
//	u8  alt_len      bytes of replacement (== orig_len; 0 for a callback)
//
// __apply_alternatives walks the table in order (once for the boot CPU's
// capabilities, once for the rest) and, for every entry whose cpucap the
// system has, copies the replacement over the original, fixing up each
// replacement word as get_alt_insn does: an immediate branch (B, BL, B.cond,
// CBZ/CBNZ, TBZ/TBNZ) whose target lies outside the replacement
// [alt, alt+alt_len] is re-aimed at the same target from its new place; an
// ADRP keeps addressing the same 4 KiB page; a literal load there would be a
// kernel BUG. A callback entry (alt_len 0) calls the function alt_offset
// names with the original instructions instead; alt_cb_patch_nops, the
// commonest (alternative_has_cap_likely/unlikely, e.g. LSE atomics), writes
// NOPs; kvm_update_va_mask writes NOPs on a VHE system (a64Callbacks). The
// other callbacks compute their instructions from run-time state (KVM's VA
// layout, the Spectre mitigation chosen, the SMCCC conduit) and are not
// modelled: their sites keep the file's bytes, marked AltCallbackUnmodelled.
//
// The cpucap numbers are the positions in arch/arm64/tools/cpucaps, which
// changes between stable releases; A64CapNames checks the numbering against
// the Image's own capability descriptors (arm64_features[], arm64_errata[]:
// a relocated desc pointer at offset 0, the u16 capability at offset 8).

const (
	a64AltEntry = 12
	// A64CapCallback is ARM64_CB_BIT: the entry's replacement is a callback.
	A64CapCallback = 1 << 15
	// a64NoCapsMax bounds the cpucap numbers a set holds (6.1 has 86).
	a64NoCapsMax = 256
	// a64CapDescCap is the offset of capability in struct
	// arm64_cpu_capabilities (after the desc pointer).
	a64CapDescCap = 8
	a64AltMaxLen  = 255
)

// A64Cap is an arm64 cpucap number (ARM64_<NAME> in asm/cpucaps.h).
type A64Cap uint16

// A64CapSet is a set of cpucaps.
type A64CapSet struct{ bits [a64NoCapsMax / 64]uint64 }

// Add puts c in the set.
func (s *A64CapSet) Add(c A64Cap) {
	if c < a64NoCapsMax {
		s.bits[c/64] |= 1 << (c % 64)
	}
}

// Has reports whether c is in the set.
func (s *A64CapSet) Has(c A64Cap) bool { return c < a64NoCapsMax && s.bits[c/64]&(1<<(c%64)) != 0 }

// Caps lists the set in increasing order.
func (s *A64CapSet) Caps() []A64Cap {
	var out []A64Cap
	for i, w := range s.bits {
		for ; w != 0; w &= w - 1 {
			b := 0
			for w&(1<<b) == 0 {
				b++
			}
			out = append(out, A64Cap(i*64+b))
		}
	}
	return out
}

//go:generate go run ./internal/cpuspec/cpugen -o a64_cpucaps.go spec/a64-cpucaps-6.1.spec spec/a64-cpucaps-6.12.spec spec/a64-cpucaps-7.2.spec

// a64CapSpec is one version's cpucap numbering (a64_cpucaps.go, generated
// from spec/a64-cpucaps-*.spec, which kimage/internal/cpuspec derives from
// the kernel's arch/arm64/tools/cpucaps, cpufeature.c and cpu_errata.c).
type a64CapSpec struct {
	version string
	names   []string
	descs   []a64CapDesc
}

// a64CapDesc is a capability description the kernel logs ("CPU features:
// detected: DESC") and the cpucap of the descriptor carrying it.
type a64CapDesc struct{ desc, name string }

// a64Caps61Old is the numbering of earlier 6.1 stables (6.1.176, Debian's
// 6.1.0-50): erratum 2457168 had a cpucap of its own in sorted place, later
// renamed BROKEN_AMU_CONSTCNT and moved to the end.
func a64Caps61Old() []string {
	var out []string
	for _, n := range a64Caps61 {
		switch n {
		case "WORKAROUND_BROKEN_AMU_CONSTCNT":
			continue
		case "WORKAROUND_2658417":
			out = append(out, "WORKAROUND_2457168")
		}
		out = append(out, n)
	}
	return out
}

// a64CapWitnesses are capability descriptions (the desc strings of
// arm64_features[] and arm64_errata[]) whose cpucap numbers tell the
// numberings apart.
var a64CapWitnesses = []struct{ desc, name string }{
	{"LSE atomic instructions", "HAS_LSE_ATOMICS"},
	{"Kernel page table isolation (KPTI)", "UNMAP_KERNEL_AT_EL0"},
	{"ARM erratum 2658417", "WORKAROUND_2658417"},
	{"ARM erratum 2457168", "WORKAROUND_2457168"},
	{"ARM erratum 832075", "WORKAROUND_DEVICE_LOAD_ACQUIRE"},
	{"ARM erratum 2966298", "WORKAROUND_SPECULATIVE_UNPRIV_LOAD"},
	{"Broken AMU AMEVCNTR01 (const counter)", "WORKAROUND_BROKEN_AMU_CONSTCNT"},
}

// A64CapNames names the cpucaps of one kernel.
type A64CapNames struct {
	Names []string // by number, without the ARM64_ prefix
	From  string   // which numbering and how it was checked
	// described returns the cpucaps whose capability descriptors in the
	// Image carry this description (the text the kernel logs as "CPU
	// features: detected: DESC"); nil when there is no Image.
	described func(desc string) []A64Cap
}

// BootLogMarker starts the kernel's boot-log line for each cpucap it
// detects: "CPU features: detected: <description>".
const BootLogMarker = "CPU features: detected: "

// Described returns the cpucaps whose descriptors carry desc (a boot-log
// description such as "ARM erratum 832075"), none if unknown.
func (n *A64CapNames) Described(desc string) []A64Cap {
	desc = strings.TrimSpace(desc)
	if i := strings.Index(desc, BootLogMarker); i >= 0 {
		desc = strings.TrimSpace(desc[i+len(BootLogMarker):])
	}
	if desc == "" {
		return nil
	}
	if n.described != nil {
		return n.described(desc)
	}
	// No Image: the descriptions of the numbering's own source.
	var out []A64Cap
	for _, d := range n.specDescs() {
		if c, ok := n.Lookup(d.name); ok && d.desc == desc {
			out = append(out, c)
		}
	}
	return out
}

// specDescs are the capability descriptions of the kernel source n's
// numbering was generated from, nil for another numbering.
func (n *A64CapNames) specDescs() []a64CapDesc {
	for _, s := range a64CapSpecs {
		if slices.Equal(s.names, n.Names) {
			return s.descs
		}
	}
	return nil
}

// Name is the cpucap's name ("WORKAROUND_DEVICE_LOAD_ACQUIRE"), or "cpucap
// #N" for a number the list does not have.
func (n *A64CapNames) Name(c A64Cap) string {
	if int(c) < len(n.Names) {
		return n.Names[c]
	}
	return fmt.Sprintf("cpucap #%d", c)
}

// Lookup finds a cpucap by name, with or without the ARM64_ prefix, in any case.
func (n *A64CapNames) Lookup(name string) (A64Cap, bool) {
	name = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(name)), "ARM64_")
	for i, x := range n.Names {
		if strings.ToUpper(x) == name {
			return A64Cap(i), true
		}
	}
	return 0, false
}

// A64CapsAlways are the cpucaps every arm64 system has once booted
// (has_always: ALWAYS_BOOT, ALWAYS_SYSTEM).
var A64CapsAlways = []string{"ALWAYS_BOOT", "ALWAYS_SYSTEM"}

// a64CapsImplied are the cpucaps without a description of their own (the
// boot log never names them) that the kernel sets whenever one of the listed
// cpucaps is set (has_address_auth_metacap, has_generic_auth).
var a64CapsImplied = map[string][]string{
	"HAS_ADDRESS_AUTH": {"HAS_ADDRESS_AUTH_ARCH_QARMA5", "HAS_ADDRESS_AUTH_ARCH_QARMA3", "HAS_ADDRESS_AUTH_IMP_DEF"},
	"HAS_GENERIC_AUTH": {"HAS_GENERIC_AUTH_ARCH_QARMA5", "HAS_GENERIC_AUTH_ARCH_QARMA3", "HAS_GENERIC_AUTH_IMP_DEF"},
}

// ParseCaps reads a --cpu-caps list: comma-separated cpucap names, or "none",
// or a kernel log: every "CPU features: detected: DESC" line of it names the
// cpucaps whose descriptors in the Image carry DESC (other lines are
// ignored). In a list, an item that is no cpucap name may be such a
// description too. The result always holds A64CapsAlways, and the cpucaps
// the kernel derives from the listed ones (HAS_ADDRESS_AUTH from any
// HAS_ADDRESS_AUTH_*, the same for HAS_GENERIC_AUTH).
func (n *A64CapNames) ParseCaps(list string) (A64CapSet, error) {
	if strings.Contains(list, BootLogMarker) {
		return n.parseBootLog(list)
	}
	var s A64CapSet
	for _, name := range A64CapsAlways {
		if c, ok := n.Lookup(name); ok {
			s.Add(c)
		}
	}
	list = strings.TrimSpace(list)
	if list == "" || strings.EqualFold(list, "none") {
		return s, nil
	}
	for _, name := range strings.Split(list, ",") {
		if strings.TrimSpace(name) == "" {
			continue
		}
		c, ok := n.Lookup(name)
		if !ok {
			desc := n.Described(name)
			if len(desc) == 0 {
				return s, &CapError{Name: strings.TrimSpace(name), Known: n.Names}
			}
			for _, c := range desc {
				s.Add(c)
			}
			continue
		}
		s.Add(c)
	}
	n.addImplied(&s)
	return s, nil
}

// parseBootLog is ParseCaps for a kernel log. A detected feature that no
// descriptor carries is no alternatives cpucap (the Image patches nothing
// for it) and is skipped; a log with no detected line at all is an error.
func (n *A64CapNames) parseBootLog(log string) (A64CapSet, error) {
	s, _ := n.ParseCaps("none")
	if n.described == nil && n.specDescs() == nil {
		return s, &CapError{Name: "CPU features: detected: ...", Known: n.Names, Why: "boot-log descriptions need the Image's capability descriptors or a numbering generated from a kernel source"}
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, BootLogMarker) {
			for _, c := range n.Described(line) {
				s.Add(c)
			}
		}
	}
	n.addImplied(&s)
	return s, nil
}

func (n *A64CapNames) addImplied(s *A64CapSet) {
	for meta, from := range a64CapsImplied {
		for _, name := range from {
			if c, ok := n.Lookup(name); ok && s.Has(c) {
				if m, ok := n.Lookup(meta); ok {
					s.Add(m)
				}
			}
		}
	}
}

// CapError is an unknown cpucap name.
type CapError struct {
	Name  string
	Known []string
	Why   string // "" an unknown name
}

func (e *CapError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("arm64 cpucaps %q: %s", e.Name, e.Why)
	}
	return fmt.Sprintf("unknown arm64 cpucap %q: want names from arch/arm64/tools/cpucaps (%s), or the kernel's boot-log descriptions (\"ARM erratum 832075\", or a dmesg file), comma-separated, or none", e.Name, strings.Join(e.Known, ", "))
}

// A64Alt is one alt_instr.
type A64Alt struct {
	Entry    uint64 // link address of the entry
	Orig     uint64 // first original instruction
	Repl     uint64 // replacement instructions, or the callback function
	Cap      A64Cap // without ARM64_CB_BIT
	Callback bool
	OrigLen  int
	AltLen   int
}

// ParseA64Alternatives parses an arm64 .altinstructions table whose first
// entry is at link address addr. Malformed entries (a length that is not a
// multiple of 12, an empty or unaligned original, a replacement length the
// kernel would BUG_ON) give a *FormatError wrapping ErrCorrupt.
func ParseA64Alternatives(b []byte, addr uint64) ([]A64Alt, error) {
	if len(b)%a64AltEntry != 0 {
		return nil, corrupt("arm64 .altinstructions", int64(len(b)), "size %d is not a multiple of %d (struct alt_instr)", len(b), a64AltEntry)
	}
	alts := make([]A64Alt, 0, len(b)/a64AltEntry)
	for o := 0; o < len(b); o += a64AltEntry {
		e := b[o : o+a64AltEntry]
		at := addr + uint64(o)
		feat := binary.LittleEndian.Uint16(e[8:])
		a := A64Alt{
			Entry: at, Orig: rel(at, e), Repl: rel(at+4, e[4:]),
			Cap: A64Cap(feat &^ A64CapCallback), Callback: feat&A64CapCallback != 0,
			OrigLen: int(e[10]), AltLen: int(e[11]),
		}
		switch {
		case a.OrigLen%4 != 0:
			// orig_len 0 occurs (7.2): __apply_alternatives patches no
			// instruction for it.
			return nil, corrupt("arm64 .altinstructions", int64(o), "entry %d: orig_len %d is not a multiple of 4", o/a64AltEntry, a.OrigLen)
		case a.Orig%4 != 0:
			return nil, corrupt("arm64 .altinstructions", int64(o), "entry %d: original instructions at %#x are not 4-byte aligned", o/a64AltEntry, a.Orig)
		case a.Callback && a.AltLen != 0:
			return nil, corrupt("arm64 .altinstructions", int64(o), "entry %d: callback entry with alt_len %d (the kernel BUGs unless 0)", o/a64AltEntry, a.AltLen)
		case !a.Callback && a.AltLen != a.OrigLen:
			return nil, corrupt("arm64 .altinstructions", int64(o), "entry %d: alt_len %d != orig_len %d (the kernel BUGs)", o/a64AltEntry, a.AltLen, a.OrigLen)
		case !a.Callback && a.Repl%4 != 0:
			return nil, corrupt("arm64 .altinstructions", int64(o), "entry %d: replacement at %#x is not 4-byte aligned", o/a64AltEntry, a.Repl)
		}
		alts = append(alts, a)
	}
	return alts, nil
}

// A64Alternatives is the alternatives table of an arm64 kernel, ready to
// patch its functions' bytes as the kernel does at boot.
type A64Alternatives struct {
	Alts  []A64Alt // table order (the order the kernel applies them)
	From  string   // where the table was found
	Caps  *A64CapNames
	order []int // indices of Alts sorted by Orig
	read  func(a uint64, n int) ([]byte, bool)
	// callbacks names the callback functions by address.
	callbacks map[uint64]string
}

// Callback names the callback function of a (the kallsyms name), or its address.
func (t *A64Alternatives) Callback(a *A64Alt) string {
	if n, ok := t.callbacks[a.Repl]; ok {
		return n
	}
	return fmt.Sprintf("%#x", a.Repl)
}

// a64AltAnchors are the functions that load &kernel_alternatives (a const
// struct alt_region of two relocated pointers, __alt_instructions and
// __alt_instructions_end) with ADRP+ADD.
var a64AltAnchors = []string{"__apply_alternatives_multi_stop", "apply_boot_alternatives", "alternative_is_applied"}

// ARM64Alternatives finds and parses the alternatives table of an arm64
// Image: from the __alt_instructions/__alt_instructions_end symbols when
// kallsyms has them (CONFIG_KALLSYMS_ALL), else from the alt_region
// struct the kernel's own patching code addresses (see a64AltAnchors). It
// also settles the cpucap numbering (A64CapNames).
func ARM64Alternatives(f *File) (*A64Alternatives, error) {
	im := f.a64
	if im == nil {
		return nil, fmt.Errorf("%s: %w: CPU alternatives are read from arm64 Image files only", f.Path, ErrFormat)
	}
	if f.Symbols.Len() == 0 {
		return nil, fmt.Errorf("%s: %w: give --symbols (kallsyms) to locate the alternatives table", f.Path, ErrNoSymbol)
	}
	if im.base == 0 || f.Config != nil {
		im.findBase(f.Config)
	}
	read := func(a uint64, n int) ([]byte, bool) {
		o, ok := im.fileOff(im.base, a, n)
		if !ok || n < 0 {
			return nil, false
		}
		return im.data[o : o+uint64(n)], true
	}
	var text []Range
	for _, p := range [][2]string{{"_stext", "_etext"}, {"_sinittext", "_einittext"}} {
		s, ok1 := f.Symbols.ByName(p[0])
		e, ok2 := f.Symbols.ByName(p[1])
		if ok1 && ok2 && e.Addr > s.Addr {
			text = append(text, Range{Start: s.Addr, End: e.Addr})
		}
	}
	if len(text) == 0 {
		return nil, fmt.Errorf("%s: %w: kallsyms lacks _stext/_etext, needed to check the alternatives table", f.Path, ErrNoSymbol)
	}
	// Code ends at the end of the init text segment (.altinstructions and
	// .exit.text follow _einittext in it).
	lo, hi := text[0].Start, text[len(text)-1].End
	const segAlign = 64 << 10
	hi = (hi + 2*segAlign - 1) &^ (segAlign - 1)
	if e, ok := f.Symbols.ByName("__inittext_end"); ok && e.Addr > hi {
		hi = e.Addr // kallsyms names the init text segment's end (7.2)
	}
	inCode := func(a uint64) bool { return a >= lo && a < hi }
	try := func(start, end uint64) ([]A64Alt, bool) {
		if end <= start || end-start > a64MaxTable || (end-start)%a64AltEntry != 0 {
			return nil, false
		}
		b, ok := read(start, int(end-start))
		if !ok {
			return nil, false
		}
		alts, err := ParseA64Alternatives(b, start)
		if err != nil {
			return nil, false
		}
		for _, a := range alts {
			if !inCode(a.Orig) || !inCode(a.Repl) {
				return nil, false
			}
		}
		return alts, true
	}
	t := &A64Alternatives{read: read, callbacks: map[uint64]string{}}
	s, ok1 := f.Symbols.ByName("__alt_instructions")
	e, ok2 := f.Symbols.ByName("__alt_instructions_end")
	if ok1 && ok2 {
		alts, ok := try(s.Addr, e.Addr)
		if !ok {
			return nil, corrupt("arm64 .altinstructions", -1, "__alt_instructions..__alt_instructions_end (%#x..%#x) is not a table of well-formed alt_instr entries", s.Addr, e.Addr)
		}
		t.Alts, t.From = alts, fmt.Sprintf("__alt_instructions..__alt_instructions_end (%#x..%#x, kallsyms)", s.Addr, e.Addr)
	} else {
		var found []string
		for _, name := range a64AltAnchors {
			sym, ok := f.Symbols.ByName(name)
			if !ok || sym.Size == 0 {
				continue
			}
			code, ok := read(sym.Addr, int(min(sym.Size, 1<<16)))
			if !ok {
				continue
			}
			found = append(found, name)
			for _, c := range A64AddrRefs(code, sym.Addr) {
				if !im.relocated(c) || !im.relocated(c+8) {
					continue
				}
				start, _ := im.pointer(c)
				end, _ := im.pointer(c + 8)
				if alts, ok := try(start, end); ok && len(alts) > len(t.Alts) {
					t.Alts = alts
					t.From = fmt.Sprintf("__alt_instructions..__alt_instructions_end (%#x..%#x, from the alt_region at %#x used by %s)", start, end, c, name)
				}
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: %w: none of %s, which locate the alternatives table", f.Path, ErrNoSymbol, strings.Join(a64AltAnchors, ", "))
		}
		if t.Alts == nil {
			return nil, corrupt(f.Path, -1, "no alt_region used by %s bounds a well-formed alternatives table", strings.Join(found, ", "))
		}
	}
	t.order = make([]int, len(t.Alts))
	for i := range t.order {
		t.order[i] = i
	}
	sort.SliceStable(t.order, func(i, j int) bool { return t.Alts[t.order[i]].Orig < t.Alts[t.order[j]].Orig })
	for _, a := range t.Alts {
		if _, done := t.callbacks[a.Repl]; a.Callback && !done {
			if s, off, ok := f.Symbols.Lookup(a.Repl); ok && off == 0 {
				t.callbacks[a.Repl] = preferredName(f, s)
			}
		}
	}
	t.Caps = a64CapNumbering(im, f.KernelVersion)
	t.Caps.described = func(desc string) []A64Cap {
		return a64DescCaps(im, []struct{ desc, name string }{{desc, ""}})[0]
	}
	return t, nil
}

// preferredName is s's name, preferring the kernel's over the KVM nVHE alias
// (__kvm_nvhe_X) at the same address.
func preferredName(f *File, s Symbol) string {
	if n, ok := strings.CutPrefix(s.Name, "__kvm_nvhe_"); ok {
		if o, ok := f.Symbols.ByName(n); ok && o.Addr == s.Addr {
			return n
		}
	}
	return s.Name
}

// a64CapLists are the cpucap numberings kboost knows, oldest first.
func a64CapLists() []struct {
	names []string
	from  string
} {
	return []struct {
		names []string
		from  string
	}{
		{a64Caps61, "Linux 6.1.192 arch/arm64/tools/cpucaps"},
		{a64Caps61Old(), "Linux 6.1 arch/arm64/tools/cpucaps before erratum 2457168 became BROKEN_AMU_CONSTCNT"},
		{a64Caps612, "Linux 6.12.117 arch/arm64/tools/cpucaps"},
		{a64Caps72, "Linux 7.2.13 arch/arm64/tools/cpucaps"},
	}
}

// A64CapList is the cpucap numbering of Linux version v ("6.1", "6.12",
// "7.2": the releases kboost models), nil for another.
func A64CapList(v string) []string {
	for _, c := range a64CapLists() {
		if strings.HasPrefix(c.from, "Linux "+v+".") {
			return c.names
		}
	}
	return nil
}

// a64CapNumbering picks the cpucap numbering the Image's capability
// descriptors agree with: of those whose every witness found in the Image
// has its number, the kernel release's own (release "7.2.13+deb14-arm64"),
// else the one checked against the most.
func a64CapNumbering(im *arm64Image, release string) *A64CapNames {
	seen := a64DescCaps(im, a64CapWitnesses)
	var best *A64CapNames
	bestChecked := 0
	for _, cand := range a64CapLists() {
		own := release != "" && strings.HasPrefix(cand.from, "Linux "+kernelMajorMinor(release)+".")
		n := &A64CapNames{Names: cand.names}
		agree, checked := true, 0
		for i, w := range a64CapWitnesses {
			nums := seen[i]
			if len(nums) == 0 {
				continue
			}
			c, ok := n.Lookup(w.name)
			if !ok {
				agree = false
				break
			}
			hit := false
			for _, x := range nums {
				hit = hit || x == c
			}
			if !hit {
				agree = false
				break
			}
			checked++
		}
		if agree && checked > 0 && own {
			n.From = fmt.Sprintf("%s (the kernel's release; checked against %d capability descriptors in the Image)", cand.from, checked)
			return n
		}
		if agree && checked > bestChecked {
			n.From = fmt.Sprintf("%s (checked against %d capability descriptors in the Image)", cand.from, checked)
			best, bestChecked = n, checked
		}
	}
	if best != nil {
		return best
	}
	return &A64CapNames{Names: a64Caps61, From: "Linux 6.1.192 arch/arm64/tools/cpucaps (unchecked: the Image's capability descriptors match no known 6.1 numbering)"}
}

// a64DescCaps returns, for each description, the capability numbers of the
// arm64_cpu_capabilities entries whose desc points at it.
func a64DescCaps(im *arm64Image, descs []struct{ desc, name string }) [][]A64Cap {
	out := make([][]A64Cap, len(descs))
	want := map[uint64]int{}
	for i, d := range descs {
		pat := append([]byte(d.desc), 0)
		for o := 0; ; {
			k := bytes.Index(im.data[o:], pat)
			if k < 0 {
				break
			}
			want[im.base+uint64(o+k)] = i
			o += k + 1
		}
	}
	if len(want) == 0 {
		return out
	}
	add := func(i int, slot uint64) {
		if o, ok := im.fileOff(im.base, slot+a64CapDescCap, 2); ok {
			out[i] = append(out[i], A64Cap(binary.LittleEndian.Uint16(im.data[o:])))
		}
	}
	for _, r := range im.rela {
		if i, ok := want[r.addend]; ok {
			add(i, r.off)
		}
	}
	// RELR (7.2): the pointer's value is in the Image itself.
	for _, a := range im.relr {
		if v, ok := im.pointer(a); ok {
			if i, ok := want[v]; ok {
				add(i, a)
			}
		}
	}
	return out
}

// A64AltStatus is what the kernel does with one alternative on a system.
type A64AltStatus uint8

const (
	// AltNotApplied: the system lacks the cpucap; the original instructions stay.
	AltNotApplied A64AltStatus = iota
	// AltApplied: the replacement was copied (with branches and ADRP fixed up).
	AltApplied
	// AltNops: the entry's callback turned the original instructions into
	// NOPs (alt_cb_patch_nops; kvm_update_va_mask with VHE).
	AltNops
	// AltCallbackUnmodelled: another callback rewrites the instructions at
	// boot from run-time state; the bytes are left as in the file.
	AltCallbackUnmodelled
	// AltUnpatchable: the replacement holds an instruction get_alt_insn
	// refuses (a literal load or ADR: the kernel would BUG), or its bytes are
	// not in the file.
	AltUnpatchable
)

var altStatusNames = [...]string{"not applied", "applied", "patched to NOPs by its callback", "patched at boot by a callback, not modelled", "not patchable"}

func (s A64AltStatus) String() string {
	if int(s) < len(altStatusNames) {
		return altStatusNames[s]
	}
	return fmt.Sprintf("A64AltStatus(%d)", uint8(s))
}

// A64AltSite is one alternative met by Apply and what became of it.
type A64AltSite struct {
	Alt    *A64Alt
	Status A64AltStatus
}

// Sites returns the alternatives whose original instructions overlap
// [addr, addr+n), by address.
func (t *A64Alternatives) Sites(addr, n uint64) []*A64Alt {
	i := sort.Search(len(t.order), func(i int) bool {
		return t.Alts[t.order[i]].Orig+a64AltMaxLen >= addr
	})
	var out []*A64Alt
	for ; i < len(t.order); i++ {
		a := &t.Alts[t.order[i]]
		if a.Orig >= addr+n {
			break
		}
		if a.Orig+uint64(a.OrigLen) > addr {
			out = append(out, a)
		}
	}
	return out
}

// Apply rewrites b, the bytes at link address addr, the way
// __apply_alternatives leaves them on a system with the cpucaps caps, and
// reports every alternative overlapping b. Entries apply in table order (the
// kernel's two passes, boot-CPU capabilities first, matter only for entries
// sharing original instructions, which 6.1 kernels do not have).
func (t *A64Alternatives) Apply(addr uint64, b []byte, caps *A64CapSet) []A64AltSite {
	sites := t.Sites(addr, uint64(len(b)))
	if len(sites) == 0 {
		return nil
	}
	sort.Slice(sites, func(i, j int) bool { return sites[i].Entry < sites[j].Entry })
	out := make([]A64AltSite, 0, len(sites))
	for _, a := range sites {
		st := AltNotApplied
		if caps.Has(a.Cap) {
			st = t.patch(a, addr, b, caps)
		}
		out = append(out, A64AltSite{Alt: a, Status: st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Alt.Orig < out[j].Alt.Orig })
	return out
}

// patch applies one alternative to the part of b it covers.
func (t *A64Alternatives) patch(a *A64Alt, addr uint64, b []byte, caps *A64CapSet) A64AltStatus {
	words := make([]uint32, a.OrigLen/4)
	switch {
	case a.Callback:
		model, ok := a64Callbacks[t.callbacks[a.Repl]]
		if !ok || !model(t, caps) {
			return AltCallbackUnmodelled
		}
		for i := range words {
			words[i] = a64NOP
		}
	default:
		repl, ok := t.read(a.Repl, a.AltLen)
		if !ok {
			return AltUnpatchable
		}
		for i := range words {
			w, ok := A64AltInsn(binary.LittleEndian.Uint32(repl[4*i:]), a.Orig+uint64(4*i), a.Repl+uint64(4*i), a.Repl, a.AltLen)
			if !ok {
				return AltUnpatchable
			}
			words[i] = w
		}
	}
	for i, w := range words {
		at := a.Orig + uint64(4*i)
		if at >= addr && at+4 <= addr+uint64(len(b)) {
			binary.LittleEndian.PutUint32(b[at-addr:], w)
		}
	}
	if a.Callback {
		return AltNops
	}
	return AltApplied
}

// a64Callbacks are the callbacks modelled: each reports whether, on a system
// with caps, it writes NOPs over the whole site (the only pattern modelled).
var a64Callbacks = map[string]func(t *A64Alternatives, caps *A64CapSet) bool{
	// alt_cb_patch_nops: always NOPs.
	"alt_cb_patch_nops": func(*A64Alternatives, *A64CapSet) bool { return true },
	// kvm_update_va_mask (arch/arm64/kvm/va_layout.c): NOPs with VHE; without
	// it, a kern_hyp_va mask computed from the memory layout (not modelled).
	"kvm_update_va_mask": func(t *A64Alternatives, caps *A64CapSet) bool {
		c, ok := t.Caps.Lookup("HAS_VIRT_HOST_EXTN")
		return ok && caps.Has(c)
	},
}

// A64AltInsn is get_alt_insn: the word w of a replacement sequence [alt,
// alt+altLen), read at from, as written at to. Immediate branches leaving the
// sequence keep their target, ADRP keeps its page; ok is false for the
// instructions the kernel refuses to move (literal loads, ADR, PRFM literal).
// Offsets are truncated to the fields as the kernel's encoders truncate them.
func A64AltInsn(w uint32, to, from, alt uint64, altLen int) (uint32, bool) {
	switch {
	case w&0xFC000000 == 0x14000000 || w&0xFC000000 == 0x94000000: // B, BL
		return a64Rebranch(w, to, from, alt, altLen, 26, 0), true
	case w&0x7E000000 == 0x34000000 || w&0xFF000010 == 0x54000000: // CBZ/CBNZ, B.cond
		return a64Rebranch(w, to, from, alt, altLen, 19, 5), true
	case w&0x7E000000 == 0x36000000: // TBZ/TBNZ
		return a64Rebranch(w, to, from, alt, altLen, 14, 5), true
	case w&0x9F000000 == 0x90000000: // ADRP
		imm := (w>>29)&3 | ((w>>5)&0x7FFFF)<<2
		off := int64(int32(imm << 12)) // aarch64_insn_adrp_get_offset: an s32
		target := int64(from&^0xFFF) + off
		n := uint32(int32(target-int64(to&^0xFFF)) >> 12)
		return w&^(3<<29|0x7FFFF<<5) | (n&3)<<29 | ((n>>2)&0x7FFFF)<<5, true
	case w&0xBF000000 == 0x18000000, w&0xFF000000 == 0x98000000, w&0x9F000000 == 0x10000000, w&0xFF000000 == 0xD8000000:
		return w, false // LDR/LDRSW literal, ADR, PRFM literal: aarch64_insn_uses_literal -> BUG
	}
	return w, true
}

// a64Rebranch re-aims an immediate branch (field of bits at shift) from
// from to to, unless its target lies in [alt, alt+altLen] (inclusive, as
// branch_insn_requires_update tests).
func a64Rebranch(w uint32, to, from, alt uint64, altLen int, bits, shift uint) uint32 {
	mask := uint32(1)<<bits - 1
	imm := int32((w>>shift)&mask) << (32 - bits) >> (32 - bits)
	target := from + uint64(int64(imm)*4)
	if target >= alt && target <= alt+uint64(altLen) {
		return w
	}
	off := int32(target - to)
	return w&^(mask<<shift) | (uint32(off>>2)&mask)<<shift
}

// kernelMajorMinor is "7.2" of a release such as "7.2.13+deb14-arm64".
func kernelMajorMinor(release string) string {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return release
	}
	minor := parts[1]
	if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minor = minor[:i]
	}
	return parts[0] + "." + minor
}
