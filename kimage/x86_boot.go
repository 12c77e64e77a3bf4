package kimage

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kboost/kboost/decode"
)

// x86 boot-time text patching (arch/x86/kernel/alternative.c,
// alternative_instructions): before kprobes can be used the kernel rewrites
// its own text, in this order:
//
//  1. apply_paravirt(.parainstructions, Linux 6.1): each paravirt call site
//     (`call *pv_ops+N(%rip)`, struct paravirt_patch_site {u8 *instr; u8
//     type, len}, 16 bytes) becomes `call pv_ops[type]` (a direct call),
//     nothing when the op is _paravirt_nop, padded with x86_nops to the
//     site's length; later kernels list those sites as alternatives instead
//     (ALT_FLAG_DIRECT_CALL, step 3);
//  2. apply_retpolines, apply_returns (the return-thunk sites: see
//     Patcher's return thunks, bootpatch.go);
//  3. apply_alternatives(.altinstructions): struct alt_instr, in table
//     order; a site whose feature the CPU has (or lacks, when the entry says
//     NOT) gets its replacement, relocated to the site, then NOP runs are
//     merged (optimize_nops). What each step does changed with the versions:
//     x86BootRules;
//  4. apply_seal_endbr(.ibt_endbr_seal, X86_KERNEL_IBT kernels, whatever the
//     CPU): the ENDBR of every function whose address is never taken becomes
//     the version's poison NOP.
//
// X86Boot models steps 1, 3 and 4 for a CPU given as its feature bits; the
// pv_ops values are the ones the image initialises (a kernel on bare metal or
// a non-paravirtual hypervisor such as QEMU TCG: no Xen PV, no KVM
// paravirtualisation).

const (
	pvSiteSize   = 16
	altFlagInv61 = 1 << 15 // ALTINSTR_FLAG_INV in 6.1's u16 cpuid
	// ALT_FLAG_NOT and ALT_FLAG_DIRECT_CALL: the flags half of the u32
	// ft_flags (bits 16-31) of later kernels.
	altFlagNot        = 1 << 0
	altFlagDirectCall = 1 << 1
	x86NopMax         = 11
	x86CallOp         = 0xe8
	x86JmpRel32       = 0xe9
	x86JmpRel8        = 0xeb
	x86Int3           = 0xcc
	x86Nop1           = 0x90
)

// x86BootRules is what one Linux version's boot patching does, read in its
// source (alternative.c, asm/alternative.h, asm/nops.h, asm/ibt.h): the
// facts that changed between the versions kboost models.
type x86BootRules struct {
	version string // major.minor
	// since, when not "", is the oldest release whose boot patching these
	// rules already describe (a kernel from there up to version is patched
	// with them, said in a note).
	since string
	// paravirt: the paravirt call sites are .parainstructions entries (6.1);
	// later kernels make them ALT_FLAG_DIRECT_CALL alternatives.
	paravirt bool
	// nopMax is the 64-bit ASM_NOP_MAX: the longest of x86_nops[].
	nopMax int
	// patch writes one alternative site: patch61 (6.1: a 5-byte call
	// rebased, recompute_jump, runs of 0x90 merged) or patchReloc
	// (apply_relocation of every branch and rip-relative operand, JMP.d32
	// shortened to JMP.d8, optimize_nops over NOP runs with isNop, a run
	// longer than nopMax a JMP.d8 over int3).
	patch int
	// perSite: entries for one address are patched as one site, with the
	// last entry the CPU selects (analyze_patch_site, 7.2); otherwise entry
	// by entry, each selected one overwriting the last (6.1, 6.12).
	perSite bool
	// isNop is optimize_nops' insn_is_nop (patchReloc).
	isNop func(*decode.Inst) bool
	// endbrPoison is gen_endbr_poison(), the word apply_seal_endbr writes
	// over a sealed ENDBR (little-endian).
	endbrPoison uint32
}

const (
	patch61 = iota
	patchReloc
)

// x86BootVersions are the modelled versions, oldest first: a kernel of
// another version is patched as the nearest older one (the oldest for an
// older or unreadable release), said in X86Boot.Note.
var x86BootVersions = []*x86BootRules{
	// 6.1.192: alt_instr {s32 instr, repl; u16 cpuid (bit 15 INV); u8
	// instrlen, replacementlen}; no IBT in Debian's build (no seal table).
	{version: "6.1", paravirt: true, nopMax: 8, patch: patch61, endbrPoison: 0x001f0f66},
	// 6.12.117: alt_instr's cpuid became u32 ft_flags {cpuid:16, flags:16};
	// x86_nops up to 11 bytes; insn_is_nop in alternative.c (0x90 without a
	// leading REP, 0f 1f); entry by entry; poison `66 0f 1f 00`. Upstream
	// since 6.8: the 14-byte alt_instr from 6.2, apply_relocation, add_nop
	// and the 9-11 byte NOPs from 6.4 (270a69c4485d), insn_is_nop from 6.6,
	// and in 6.8 the paravirt sites became ALT_FLAG_DIRECT_CALL alternatives
	// (da0fe6e68e10) with .parainstructions removed (f7af6977621a).
	{version: "6.12", since: "6.8", nopMax: 11, patch: patchReloc, isNop: x86IsNop612, endbrPoison: 0x001f0f66},
	// 7.2.13: analyze_patch_site/prep_patch_site/patch_site; insn_is_nop in
	// lib/insn-eval.c (also mov %r,%r, lea 0(%r),%r, jmp +0; not PAUSE nor
	// xchg %r8); poison `0f 1f 40 d6` (nopl -42(%rax), 0xd6 = UDB).
	{version: "7.2", nopMax: 11, patch: patchReloc, perSite: true, isNop: x86IsNop72, endbrPoison: 0xd6401f0f},
}

// x86BootRulesFor picks the rules of a kernel release and says how: the
// version's own, else the rules whose since range holds it, else the nearest
// older version's.
func x86BootRulesFor(release string) (*x86BootRules, string) {
	major, minor, ok := releaseMajorMinor(release)
	pick, ranged := x86BootVersions[0], false
	for _, r := range x86BootVersions {
		from := r.version
		if r.since != "" {
			from = r.since
		}
		rm, rn, _ := releaseMajorMinor(from)
		if ok && (rm < major || (rm == major && rn <= minor)) {
			pick, ranged = r, from != r.version
		}
	}
	switch {
	case !ok:
		return pick, fmt.Sprintf("kernel version unknown: boot patching as Linux %s", pick.version)
	case kernelMajorMinor(release) == pick.version:
		return pick, ""
	case ranged && !olderThan(pick.version, major, minor):
		return pick, fmt.Sprintf("kernel %s is not modelled: boot patching as Linux %s, whose rules upstream has had since %s", release, pick.version, pick.since)
	default:
		return pick, fmt.Sprintf("kernel %s is not modelled: boot patching as Linux %s (the nearest modelled version)", release, pick.version)
	}
}

// olderThan reports whether version v (major.minor) is older than major.minor.
func olderThan(v string, major, minor int) bool {
	vm, vn, _ := releaseMajorMinor(v)
	return vm < major || (vm == major && vn < minor)
}

func releaseMajorMinor(release string) (major, minor int, ok bool) {
	_, err := fmt.Sscanf(kernelMajorMinor(strings.TrimSpace(release)), "%d.%d", &major, &minor)
	return major, minor, err == nil
}

// x86Nops are x86_nops[1..11] of a 64-bit kernel (BYTES_NOP1..11; 6.1
// stops at 8).
var x86Nops = [x86NopMax + 1][]byte{
	nil,
	{0x90},
	{0x66, 0x90},
	{0x0f, 0x1f, 0x00},
	{0x0f, 0x1f, 0x40, 0x00},
	{0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00},
	{0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
	{0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
}

// addNops is 6.1's add_nops: the largest NOPs (up to 8 bytes) first.
func addNops(b []byte) {
	for len(b) > 0 {
		n := min(len(b), 8)
		copy(b, x86Nops[n])
		b = b[n:]
	}
}

// addNop is add_nop of the kernels after 6.1: one NOP up to nopMax bytes,
// else a jmp over int3 padding.
func addNop(b []byte, nopMax int) {
	switch n := len(b); {
	case n == 0:
	case n <= nopMax:
		copy(b, x86Nops[n])
	case n < 128:
		b[0], b[1] = x86JmpRel8, byte(n-2)
		fillInt3(b[2:])
	default:
		b[0] = x86JmpRel32
		binary.LittleEndian.PutUint32(b[1:], uint32(n-5))
		fillInt3(b[5:])
	}
}

func fillInt3(b []byte) {
	for i := range b {
		b[i] = x86Int3
	}
}

// X86PVSite is one .parainstructions entry, resolved.
type X86PVSite struct {
	Addr uint64
	Type uint8
	Len  uint8
	// Target is pv_ops[Type] as the image initialises it; Nop: the op is
	// _paravirt_nop (the site becomes NOPs).
	Target uint64
	Nop    bool
}

// X86Alt is one .altinstructions entry.
type X86Alt struct {
	Orig, Repl uint64
	Feature    uint16 // X86_FEATURE_* number (word*32+bit), flags masked off
	Inverted   bool   // applied when the CPU lacks Feature (ALTINSTR_FLAG_INV, ALT_FLAG_NOT)
	// DirectCall (ALT_FLAG_DIRECT_CALL, after 6.1): the site is a paravirt
	// `call *pv_ops+N(%rip)` and becomes a direct call to Target, the
	// pv_ops entry as the image initialises it (NOPs when that is
	// nop_func).
	DirectCall bool
	Target     uint64
	OrigLen    uint8
	ReplLen    uint8
	// SiteLen is the longest OrigLen of the consecutive entries for Orig
	// (nested ALTERNATIVE()s: the kernel patches every one over that
	// length); the 6.1 rules use OrigLen.
	SiteLen uint8
}

// X86Boot holds the boot-time patch sites of an x86-64 kernel.
type X86Boot struct {
	// Fentry are the ftrace records (__mcount_loc, sorted): `call __fentry__`
	// in the file, the 5-byte NOP ftrace_init leaves (ftrace_make_nop).
	Fentry []uint64
	fentry uint64      // __fentry__
	PV     []X86PVSite // by address
	// SMPLocks are the LOCK prefixes of the core text (.smp_locks, s32
	// self-relative), sorted: on a machine with one CPU,
	// alternative_instructions patches the kernel to UP
	// (alternatives_smp_unlock: each 0xf0 becomes a DS prefix, 0x3e).
	SMPLocks []uint64
	Alts     []X86Alt // table order
	// EndbrSeal are the sealed ENDBR sites (.ibt_endbr_seal, s32
	// self-relative), sorted.
	EndbrSeal []uint64
	From      string // where they came from, for notes
	// Version is the Linux version whose patching rules apply (major.minor);
	// Note, when not "", says why they apply to a kernel of another version.
	Version, Note string
	// Partial, when not "", says what is not modelled for this kernel.
	Partial string
	// altOrder indexes Alts by Orig (sorted), for lookups by range.
	altOrder []int
	rules    *x86BootRules
	bug, nop uint64 // BUG_func, nop_func (direct-call alternatives)
	f        *File
}

// X86CPU is the machine a kernel boots on, as boot patching sees it.
type X86CPU struct {
	Features X86Features
	// CPUs is the number of CPUs present (1: the kernel patches itself to
	// UP; 0 is taken as several).
	CPUs int
	Name string // for notes
}

// X86Features is a CPU's feature bits as the kernel being patched numbers
// them (its X86_FEATURE_* constants, word*32+bit, synthetic and bug bits
// included: boot_cpu_has's argument). The numbers are the kernel's own
// (arch/x86/include/asm/cpufeatures.h of its version); mapping the names of
// /proc/cpuinfo's flags to them is the caller's.
type X86Features struct{ bits [32]uint64 }

// Add sets bit n.
func (s *X86Features) Add(n uint16) {
	if int(n)/64 < len(s.bits) {
		s.bits[n/64] |= 1 << (n % 64)
	}
}

// Has reports whether bit n is set.
func (s *X86Features) Has(n uint16) bool {
	return int(n)/64 < len(s.bits) && s.bits[n/64]&(1<<(n%64)) != 0
}

// ReadX86Boot reads the boot patch tables of an x86-64 vmlinux (ELF sections
// .parainstructions, .altinstructions, __mcount_loc, .smp_locks,
// .ibt_endbr_seal) in the layout of the kernel's version (x86BootRules).
// pv_ops, _paravirt_nop, BUG_func and nop_func come from the symbols
// (kallsyms of a KALLSYMS_ALL kernel).
func ReadX86Boot(f *File) (*X86Boot, error) {
	if f.Arch == nil || f.Arch.Name != "x86-64" {
		return nil, fmt.Errorf("x86 boot patching: %w", ErrUnsupportedArch)
	}
	rules, note := x86BootRulesFor(f.KernelVersion)
	b := &X86Boot{f: f, rules: rules, Version: rules.version, Note: note}
	var from []string
	if sec, ok := f.Section(".parainstructions"); ok && !sec.NoBits && rules.paravirt {
		d, err := sec.Data()
		if err != nil {
			return nil, err
		}
		pv, ok := f.Symbols.ByName("pv_ops")
		if !ok {
			return nil, fmt.Errorf("x86 paravirt sites: symbol pv_ops: %w (give kallsyms of the kernel)", ErrNoSymbol)
		}
		nop, _ := f.Symbols.ByName("_paravirt_nop")
		for i := 0; i+pvSiteSize <= len(d); i += pvSiteSize {
			s := X86PVSite{Addr: binary.LittleEndian.Uint64(d[i:]), Type: d[i+8], Len: d[i+9]}
			p, err := f.ReadAt(pv.Addr+8*uint64(s.Type), 8)
			if err != nil {
				return nil, fmt.Errorf("pv_ops[%d]: %w", s.Type, err)
			}
			s.Target = binary.LittleEndian.Uint64(p)
			s.Nop = nop.Addr != 0 && s.Target == nop.Addr
			b.PV = append(b.PV, s)
		}
		sort.Slice(b.PV, func(i, j int) bool { return b.PV[i].Addr < b.PV[j].Addr })
		from = append(from, fmt.Sprintf("%d paravirt sites (.parainstructions, pv_ops at %#x)", len(b.PV), pv.Addr))
	}
	var mc []byte
	if sec, ok := f.Section("__mcount_loc"); ok && !sec.NoBits {
		d, err := sec.Data()
		if err != nil {
			return nil, err
		}
		mc = d
	} else if s, ok := f.Symbols.ByName("__start_mcount_loc"); ok {
		if e, ok := f.Symbols.ByName("__stop_mcount_loc"); ok && e.Addr > s.Addr {
			d, err := f.ReadAt(s.Addr, int(e.Addr-s.Addr))
			if err != nil {
				return nil, err
			}
			mc = d
		}
	}
	if d := mc; len(d) > 0 {
		for i := 0; i+8 <= len(d); i += 8 {
			if a := binary.LittleEndian.Uint64(d[i:]); a != 0 {
				b.Fentry = append(b.Fentry, a)
			}
		}
		sort.Slice(b.Fentry, func(i, j int) bool { return b.Fentry[i] < b.Fentry[j] })
		if s, ok := f.Symbols.ByName("__fentry__"); ok {
			b.fentry = s.Addr
		}
	}
	var err error
	if b.SMPLocks, err = selfRelativeSites(f, ".smp_locks"); err != nil {
		return nil, err
	}
	if b.EndbrSeal, err = selfRelativeSites(f, ".ibt_endbr_seal"); err != nil {
		return nil, err
	}
	if sec, ok := f.Section(".altinstructions"); ok && !sec.NoBits {
		d, err := sec.Data()
		if err != nil {
			return nil, err
		}
		if err := b.readAlts(sec.Addr, d); err != nil {
			return nil, err
		}
		from = append(from, fmt.Sprintf("%d alternatives (.altinstructions)", len(b.Alts)))
	}
	if len(b.EndbrSeal) > 0 {
		from = append(from, fmt.Sprintf("%d sealed ENDBRs (.ibt_endbr_seal)", len(b.EndbrSeal)))
	}
	b.From = strings.Join(from, ", ")
	b.altOrder = make([]int, len(b.Alts))
	for i := range b.altOrder {
		b.altOrder[i] = i
	}
	sort.SliceStable(b.altOrder, func(i, j int) bool { return b.Alts[b.altOrder[i]].Orig < b.Alts[b.altOrder[j]].Orig })
	return b, nil
}

// selfRelativeSites reads a table of s32 self-relative addresses, sorted.
func selfRelativeSites(f *File, name string) ([]uint64, error) {
	sec, ok := f.Section(name)
	if !ok || sec.NoBits {
		return nil, nil
	}
	d, err := sec.Data()
	if err != nil {
		return nil, err
	}
	var out []uint64
	for i := 0; i+4 <= len(d); i += 4 {
		out = append(out, sec.Addr+uint64(i)+uint64(int64(int32(binary.LittleEndian.Uint32(d[i:])))))
	}
	slices.Sort(out)
	return out, nil
}

// readAlts reads .altinstructions (at addr, bytes d) in the layout of the
// kernel's release (altLayout: 12 bytes in 6.1, 14 after), and resolves the
// direct-call entries' pv_ops targets.
func (b *X86Boot) readAlts(addr uint64, d []byte) error {
	size, lenOff := altLayout(b.f.KernelVersion, len(d))
	if len(d)%size != 0 {
		b.Partial = fmt.Sprintf(".altinstructions: %d bytes, not a whole number of %d-byte entries: alternatives not applied", len(d), size)
		return nil
	}
	for i := 0; i+size <= len(d); i += size {
		at := addr + uint64(i)
		a := X86Alt{
			Orig:    at + uint64(int64(int32(binary.LittleEndian.Uint32(d[i:])))),
			Repl:    at + 4 + uint64(int64(int32(binary.LittleEndian.Uint32(d[i+4:])))),
			OrigLen: d[i+lenOff], ReplLen: d[i+lenOff+1],
		}
		if size == altEntrySize {
			cpuid := binary.LittleEndian.Uint16(d[i+8:])
			a.Feature, a.Inverted = cpuid&^altFlagInv61, cpuid&altFlagInv61 != 0
		} else {
			a.Feature = binary.LittleEndian.Uint16(d[i+8:])
			flags := binary.LittleEndian.Uint16(d[i+10:])
			a.Inverted, a.DirectCall = flags&altFlagNot != 0, flags&altFlagDirectCall != 0
		}
		b.Alts = append(b.Alts, a)
	}
	// Nested ALTERNATIVE()s are consecutive entries for one address, each
	// patched over the longest of their lengths.
	for i := 0; i < len(b.Alts); {
		j, n := i, uint8(0)
		for ; j < len(b.Alts) && b.Alts[j].Orig == b.Alts[i].Orig; j++ {
			n = max(n, b.Alts[j].OrigLen)
		}
		for k := i; k < j; k++ {
			b.Alts[k].SiteLen = n
		}
		i = j
	}
	for i := range b.Alts {
		if a := &b.Alts[i]; a.DirectCall {
			if err := b.resolveDirectCall(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// resolveDirectCall is alt_replace_call's reading: the site is `ff 15
// disp32` (call *disp(%rip)) and the call target the 8 bytes at the next
// instruction + disp, as the image initialises them (BUG_func when NULL).
func (b *X86Boot) resolveDirectCall(a *X86Alt) error {
	if b.bug == 0 {
		bug, ok := b.f.Symbols.ByName("BUG_func")
		if !ok {
			return fmt.Errorf("x86 direct-call alternatives: symbol BUG_func: %w (give kallsyms of the kernel)", ErrNoSymbol)
		}
		b.bug = bug.Addr
		if nop, ok := b.f.Symbols.ByName("nop_func"); ok {
			b.nop = nop.Addr
		}
	}
	site, err := b.f.ReadAt(a.Orig, 6)
	if err != nil {
		return fmt.Errorf("direct-call alternative at %#x: %w", a.Orig, err)
	}
	if a.OrigLen != 6 || a.ReplLen != 5 || site[0] != 0xff || site[1] != 0x15 {
		return fmt.Errorf("direct-call alternative at %#x: not `call *disp(%%rip)` (% x, length %d): %w", a.Orig, site, a.OrigLen, ErrCorrupt)
	}
	slot := a.Orig + 6 + uint64(int64(int32(binary.LittleEndian.Uint32(site[2:]))))
	p, err := b.f.ReadAt(slot, 8)
	if err != nil {
		return fmt.Errorf("direct-call alternative at %#x: pv_ops entry %#x: %w", a.Orig, slot, err)
	}
	if a.Target = binary.LittleEndian.Uint64(p); a.Target == 0 {
		a.Target = b.bug
	}
	return nil
}

// Apply patches buf (the bytes at addr) as the kernel does at boot on the
// machine cpu: the ftrace records, the paravirt sites, then the alternatives,
// in the kernel's order, the sealed ENDBRs and the LOCK prefixes on a one-CPU
// machine. Sites that do not lie wholly inside buf are left alone. It
// returns how many sites it met.
func (b *X86Boot) Apply(addr uint64, buf []byte, cpu *X86CPU) int {
	end := addr + uint64(len(buf))
	inside := func(a uint64, n uint8) bool { return a >= addr && a+uint64(n) <= end }
	met := 0
	for i := sort.Search(len(b.Fentry), func(i int) bool { return b.Fentry[i] >= addr }); i < len(b.Fentry) && b.Fentry[i]+5 <= end; i++ {
		site := buf[b.Fentry[i]-addr:][:5]
		if site[0] == x86CallOp && b.Fentry[i]+5+uint64(int64(int32(binary.LittleEndian.Uint32(site[1:])))) == b.fentry {
			copy(site, x86Nops[5])
			met++
		}
	}
	i := sort.Search(len(b.PV), func(i int) bool { return b.PV[i].Addr >= addr })
	for ; i < len(b.PV) && b.PV[i].Addr < end; i++ {
		s := &b.PV[i]
		if !inside(s.Addr, s.Len) {
			continue
		}
		site := buf[s.Addr-addr : s.Addr-addr+uint64(s.Len)]
		used := 0
		if !s.Nop && s.Len >= 5 {
			site[0] = x86CallOp
			binary.LittleEndian.PutUint32(site[1:], uint32(int32(int64(s.Target-(s.Addr+5)))))
			used = 5
		}
		addNops(site[used:])
		met++
	}
	// Alternatives in table order (a later entry may overwrite an earlier
	// one's bytes).
	lo := sort.Search(len(b.altOrder), func(k int) bool { return b.Alts[b.altOrder[k]].Orig >= addr })
	var idx []int
	for k := lo; k < len(b.altOrder) && b.Alts[b.altOrder[k]].Orig < end; k++ {
		idx = append(idx, b.altOrder[k])
	}
	sort.Ints(idx)
	for n := 0; n < len(idx); n++ {
		a := &b.Alts[idx[n]]
		if b.rules.patch == patch61 {
			if !inside(a.Orig, a.OrigLen) {
				continue
			}
			met++
			site := buf[a.Orig-addr : a.Orig-addr+uint64(a.OrigLen)]
			if cpu.Features.Has(a.Feature) != a.Inverted {
				b.replace(a, site)
			}
			optimizeNops61(site)
			continue
		}
		if !inside(a.Orig, a.SiteLen) {
			continue
		}
		met++
		site := buf[a.Orig-addr : a.Orig-addr+uint64(a.SiteLen)]
		if !b.rules.perSite {
			if cpu.Features.Has(a.Feature) != a.Inverted {
				b.relocate(a, site)
			} else {
				b.optimizeNops(site)
			}
			continue
		}
		// analyze_patch_site: the last selected entry of the site's run.
		var pick *X86Alt
		for ; n < len(idx) && b.Alts[idx[n]].Orig == a.Orig; n++ {
			if c := &b.Alts[idx[n]]; cpu.Features.Has(c.Feature) != c.Inverted {
				pick = c
			}
		}
		n--
		if pick != nil {
			b.relocate(pick, site)
		} else {
			b.optimizeNops(site)
		}
	}
	for i := sort.Search(len(b.EndbrSeal), func(i int) bool { return b.EndbrSeal[i] >= addr }); i < len(b.EndbrSeal) && b.EndbrSeal[i]+4 <= end; i++ {
		if w := buf[b.EndbrSeal[i]-addr:][:4]; isEndbr(binary.LittleEndian.Uint32(w), b.rules.endbrPoison) {
			binary.LittleEndian.PutUint32(w, b.rules.endbrPoison)
			met++
		}
	}
	if cpu.CPUs == 1 {
		for i := sort.Search(len(b.SMPLocks), func(i int) bool { return b.SMPLocks[i] >= addr }); i < len(b.SMPLocks) && b.SMPLocks[i] < end; i++ {
			if o := b.SMPLocks[i] - addr; buf[o] == 0xf0 {
				buf[o] = 0x3e
				met++
			}
		}
	}
	return met
}

// isEndbr is is_endbr: ENDBR64, ENDBR32 or the version's poison.
func isEndbr(w, poison uint32) bool {
	const endbr64 = 0xfa1e0ff3 // f3 0f 1e fa
	return w == poison || w&^0x01000000 == endbr64
}

// replace writes a's replacement over site (6.1's apply_alternatives patch
// step).
func (b *X86Boot) replace(a *X86Alt, site []byte) {
	if a.ReplLen > a.OrigLen {
		return // the kernel BUGs at build time; never in a built kernel
	}
	repl, err := b.f.ReadAt(a.Repl, int(a.ReplLen))
	if err != nil {
		return
	}
	var buf [256]byte
	n := copy(buf[:], repl)
	if a.ReplLen == 5 && buf[0] == x86CallOp {
		d := int32(binary.LittleEndian.Uint32(buf[1:])) + int32(int64(a.Repl-a.Orig))
		binary.LittleEndian.PutUint32(buf[1:], uint32(d))
	}
	if a.ReplLen > 0 && (repl[0] == x86JmpRel32 || repl[0] == x86JmpRel8) && a.ReplLen == 5 {
		// recompute_jump: the jmp re-targeted from the original site, as a
		// 2-byte jmp when the (forward) displacement fits.
		tgt := int64(a.Repl) + 5 + int64(int32(binary.LittleEndian.Uint32(buf[1:])))
		disp := tgt - int64(a.Orig)
		if disp >= 0 && disp-2 <= 127 {
			buf[0], buf[1] = x86JmpRel8, byte(int8(disp-2))
			addNops(buf[2:5])
		} else {
			buf[0] = x86JmpRel32
			binary.LittleEndian.PutUint32(buf[1:], uint32(int32(disp-5)))
		}
	}
	for ; n < int(a.OrigLen); n++ {
		buf[n] = 0x90
	}
	copy(site, buf[:a.OrigLen])
}

// relocate writes a's replacement over site as the kernels after 6.1 do
// (apply_alternatives / prep_patch_site): the replacement (for a direct
// call, `call BUG_func` retargeted at the pv_ops entry, or nothing for
// nop_func), 0x90 up to the site's length, apply_relocation, optimize_nops.
func (b *X86Boot) relocate(a *X86Alt, site []byte) {
	if a.ReplLen > a.SiteLen {
		return // BUG_ON at build time; never in a built kernel
	}
	repl, err := b.f.ReadAt(a.Repl, int(a.ReplLen))
	if err != nil {
		return
	}
	buf := make([]byte, len(site))
	n := copy(buf, repl)
	if a.DirectCall {
		d := int32(binary.LittleEndian.Uint32(buf[1:])) + int32(int64(a.Target-b.bug))
		binary.LittleEndian.PutUint32(buf[1:], uint32(d))
		if n = 5; a.Target == b.nop && b.nop != 0 {
			n = 0
		}
	}
	for ; n < len(buf); n++ {
		buf[n] = x86Nop1
	}
	applyRelocation(buf, a.Orig, a.Repl, int(a.ReplLen))
	b.optimizeNops(buf)
	copy(site, buf)
}

// applyRelocation is __apply_relocation: every relative branch or call and
// rip-relative operand of buf (the replacement copied from repl, replLen
// bytes, to be written at instr) whose target lies outside the replacement
// is rebased by repl-instr; a JMP.d32 becomes JMP.d8 and int3s where its
// displacement fits.
func applyRelocation(buf []byte, instr, repl uint64, replLen int) {
	diff := int64(repl - instr)
	outside := func(off int64) bool { return off < 0 || off > int64(replLen) }
	for i := 0; i < len(buf); {
		var in decode.Inst
		if err := decode.DecodeInto(&in, buf[i:], decode.Mode64, 0); err != nil {
			return
		}
		next := i + in.Len
		op := in.Opcode
		legacy, twoByte := in.Map == decode.MapOne, in.Map == decode.Map0F
		jcc32 := twoByte && op >= 0x80 && op <= 0x8f
		if in.Enc == decode.EncLegacy && (jcc32 || legacy && (op >= 0x70 && op <= 0x7f || op == x86JmpRel8 || op == x86JmpRel32 || op == x86CallOp)) {
			if outside(int64(next) + in.Imm) {
				putRel(buf[i+in.ImmOff:], in.ImmLen, in.Imm+diff)
			}
			if legacy && op == x86JmpRel32 {
				if imm := int32(in.Imm+diff) + 3; imm == int32(int8(imm)) {
					buf[i], buf[i+1] = x86JmpRel8, byte(int8(imm))
					fillInt3(buf[i+2 : next])
				}
			}
		}
		if in.RIPRel && outside(int64(next)+in.Disp) {
			putRel(buf[i+in.DispOff:], in.DispLen, in.Disp+diff)
		}
		i = next
	}
}

func putRel(b []byte, n int, v int64) {
	switch n {
	case 1:
		b[0] = byte(v)
	case 2:
		binary.LittleEndian.PutUint16(b, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(b, uint32(v))
	}
}

// optimizeNops is optimize_nops of the kernels after 6.1: walking the
// site's instructions, a NOP (the version's insn_is_nop) that is not the
// site's last instruction starts a run of NOPs, rewritten as one (addNop).
func (b *X86Boot) optimizeNops(site []byte) {
	for i := 0; i < len(site); {
		var in decode.Inst
		if decode.DecodeInto(&in, site[i:], decode.Mode64, 0) != nil {
			return
		}
		next := i + in.Len
		if b.rules.isNop(&in) {
			if next == len(site) {
				return
			}
			for next < len(site) {
				var n decode.Inst
				if decode.DecodeInto(&n, site[next:], decode.Mode64, 0) != nil || !b.rules.isNop(&n) {
					break
				}
				next += n.Len
			}
			addNop(site[i:min(next, len(site))], b.rules.nopMax)
		}
		i = next
	}
}

// optimizeNops61 is 6.1's optimize_nops: walking the site's instructions,
// each run of single-byte NOPs (0x90) longer than one becomes add_nops of
// its length.
func optimizeNops61(site []byte) {
	for i := 0; i < len(site); {
		if site[i] != x86Nop1 {
			n := x86InsnLen(site[i:])
			if n <= 0 {
				return
			}
			i += n
			continue
		}
		j := i
		for j < len(site) && site[j] == x86Nop1 {
			j++
		}
		if j-i > 1 {
			addNops(site[i:j])
		}
		i = j
	}
}

// x86InsnLen is the length of the 64-bit instruction at b, 0 when it does
// not decode (optimize_nops stops there, as insn_decode_kernel failing).
func x86InsnLen(b []byte) int {
	var in decode.Inst
	if err := decode.DecodeInto(&in, b, decode.Mode64, 0); err != nil {
		return 0
	}
	return in.Len
}

// x86IsNop612 is 6.12's insn_is_nop: 0x90 unless the first prefix is REP
// (PAUSE), and NOPL (0f 1f).
func x86IsNop612(in *decode.Inst) bool {
	if in.Enc != decode.EncLegacy {
		return false
	}
	switch {
	case in.Map == decode.MapOne && in.Opcode == 0x90:
		return in.NPrefix == 0 || in.Raw[0] != 0xf3
	case in.Map == decode.Map0F && in.Opcode == 0x1f:
		return true
	}
	return false
}

// x86IsNop72 is 7.2's insn_is_nop (lib/insn-eval.c): NOP but neither PAUSE
// nor xchg with r8; NOPL /0; mov %r,%r and lea 0(%r),%r of the native size
// (lea with no prefix but DS); jmp +0. VEX forms are not NOPs.
func x86IsNop72(in *decode.Inst) bool {
	if in.Enc != decode.EncLegacy {
		return false
	}
	rex := in.Rex
	reg := int(in.ModRM>>3&7) | int(rex>>2&1)<<3
	rm := int(in.ModRM&7) | int(rex&1)<<3
	if in.HasSIB {
		rm = int(in.SIB&7) | int(rex&1)<<3
	}
	mod := in.ModRM >> 6
	rep := in.Prefixes&decode.PfxRep != 0
	if in.Map == decode.Map0F {
		return in.Opcode == 0x1f && in.HasModRM && in.ModRM>>3&7 == 0
	}
	if in.Map != decode.MapOne {
		return false
	}
	switch in.Opcode {
	case 0x89: // mov %reg, %reg
		return in.HasModRM && mod == 3 && in.OpSize == 64 && reg == rm
	case 0x8d: // lea 0(%reg), %reg
		if !in.HasModRM || mod == 0 || mod == 3 || in.OpSize != 64 || in.Disp != 0 {
			return false
		}
		if in.HasSIB && (in.SIB>>6 != 0 || (in.SIB>>3&7|(rex>>1&1)<<3) != 4) {
			return false
		}
		for _, p := range in.Raw[:in.NPrefix] {
			if p != 0x3e {
				return false
			}
		}
		return reg == rm
	case 0x90:
		return rex&1 == 0 && !rep
	case x86JmpRel32, x86JmpRel8:
		return in.Imm == 0
	}
	return false
}

// X86 feature bits boot patching tests (arch/x86/include/asm/cpufeatures.h;
// the same numbers in 6.1, 6.12 and 7.2).
const (
	X86FeatureAlways = 3*32 + 21 // X86_FEATURE_ALWAYS: every CPU
	X86FeatureXenPV  = 8*32 + 16 // X86_FEATURE_XENPV: a Xen PV guest
)

// QEMU64 is the machine `kboost vm verify` boots an x86-64 kernel on: QEMU
// TCG's default CPU (qemu64), one CPU, not a Xen guest, with the features
// its /proc/cpuinfo shows under Linux 6.1 (X86NamedCPU("qemu64", release)
// numbers them by another kernel's own table).
func QEMU64() X86CPU {
	c, _, err := X86NamedCPU("qemu64", "6.1")
	if err != nil { // the embedded cpuinfo is checked by TestX86NamedCPUs
		c = X86CPU{CPUs: 1, Name: "qemu64 (QEMU TCG), 1 CPU"}
		c.Features.Add(X86FeatureAlways)
	}
	return c
}

func (c X86CPU) String() string { return c.Name }
