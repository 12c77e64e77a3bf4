package kimage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kboost/kboost/internal/memhint"
)

// ReturnSites lists the return-thunk sites of a kernel (.return_sites: s32
// offsets relative to each entry, written by objtool), sorted. ok is false when
// the file has no such section.
func ReturnSites(f *File) (sites []uint64, ok bool, err error) {
	sec, found := f.Section(".return_sites")
	if !found {
		return nil, false, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, false, err
	}
	sites = make([]uint64, 0, len(data)/4)
	memhint.Prefault(sites)
	for i := 0; i+4 <= len(data); i += 4 {
		rel := int64(int32(binary.LittleEndian.Uint32(data[i:])))
		sites = append(sites, sec.Addr+uint64(i)+uint64(rel))
	}
	if !slices.IsSorted(sites) {
		slices.Sort(sites)
	}
	return sites, true, nil
}

// Patcher rewrites a function's bytes the way the kernel patches its own text at
// boot, before kprobes ever decode it. Only return thunks are modelled:
// apply_returns() turns each `jmp __x86_return_thunk` listed in .return_sites
// into `ret` followed by int3 padding when the CPU needs no return thunk
// (X86_FEATURE_RETHUNK off: no retbleed/SRSO mitigation).
//
// On arm64 (NewFtraceInitPatcher) it models ftrace_init_nop() instead: the
// first of the two patchable-entry NOPs of every function with an ftrace
// record becomes `mov x9, x30` at boot.
type Patcher struct {
	returns []uint64 // sorted return-thunk sites
	thunk   uint64   // address of __x86_return_thunk

	words    []uint64 // sorted addresses of 4-byte words to rewrite (arm64)
	from, to uint32   // the word expected there and its replacement
	// lits are the sorted addresses of the 8-byte ftrace_ops literals
	// ftrace_init_nop sets to litVal (&ftrace_nop_ops) over two NOPs
	// (arm64 DYNAMIC_FTRACE_WITH_CALL_OPS).
	lits   []uint64
	litVal uint64
	alt    *a64Alt // arm64 CPU alternatives (SetCPUCaps)

	x86    *X86Boot // x86 boot-time patching (NewX86BootPatcher)
	x86cpu X86CPU
}

// NewX86BootPatcher builds the x86-64 boot patcher of f for the machine cpu:
// X86Boot (ftrace records, paravirt sites, alternatives, UP LOCK
// prefixes), then the return thunks patched to ret (a machine whose CPU needs
// no return thunk). It returns a note saying what it applies.
func NewX86BootPatcher(f *File, cpu X86CPU) (*Patcher, string, error) {
	b, err := ReadX86Boot(f)
	if err != nil {
		return nil, "", err
	}
	p := &Patcher{x86: b, x86cpu: cpu}
	note := fmt.Sprintf("boot patching as on %s: %d ftrace records", cpu, len(b.Fentry))
	if b.From != "" {
		note += ", " + b.From
	}
	if b.Partial != "" {
		note += " (" + b.Partial + ")"
	}
	if cpu.CPUs == 1 {
		note += fmt.Sprintf(", %d LOCK prefixes patched to UP", len(b.SMPLocks))
	}
	if rp, err := NewReturnPatcher(f); err == nil {
		p.returns, p.thunk = rp.returns, rp.thunk
		note += fmt.Sprintf(", %d return thunks patched to ret", len(rp.returns))
	} else if !errors.Is(err, ErrNoReturnSites) {
		return nil, "", err
	}
	return p, note + "; static calls keep their file targets (kprobes refuse them either way)", nil
}

// a64MovX9LR is `mov x9, x30` (ORR X9, XZR, X30), what ftrace_init_nop writes.
const a64MovX9LR = 0xAA1E03E9

// lastTables caches the tables of the last file read, so that an audit's
// environment and NewFtraceInitPatcher read them once (keyed by the file and the symbols and
// configuration the tables depend on).
var lastTables struct {
	sync.Mutex
	f    *File
	syms *SymTab
	cfg  *KConfig
	tabs *Tables
	err  error
}

// KernelTablesCached is KernelTables of f, read once for the last file asked
// (an audit's environment and its boot patcher both need them).
func KernelTablesCached(f *File) (*Tables, error) {
	lastTables.Lock()
	defer lastTables.Unlock()
	if lastTables.f != f || lastTables.syms != f.Symbols || lastTables.cfg != f.Config {
		lastTables.tabs, lastTables.err = KernelTables(f)
		lastTables.f, lastTables.syms, lastTables.cfg = f, f.Symbols, f.Config
	}
	return lastTables.tabs, lastTables.err
}

// NewFtraceInitPatcher builds the arm64 boot patcher of f from its ftrace
// table (Tables.Ftrace: the records, each 4 bytes after the NOP that
// ftrace_init_nop rewrites), or explains why it cannot.
func NewFtraceInitPatcher(f *File) (*Patcher, error) {
	tabs, err := KernelTablesCached(f)
	if err != nil {
		return nil, err
	}
	if tabs.Ftrace.Name == "" || !tabs.FtraceEntryNOP {
		return nil, fmt.Errorf("%s: %s kernels do not rewrite their ftrace entry NOPs at boot (no arm64 ftrace table)", f.Path, f.Arch.Name)
	}
	if !tabs.Ftrace.Known() {
		return nil, fmt.Errorf("%s: %s", f.Path, tabs.Ftrace.String())
	}
	recs := tabs.Ftrace.Addrs.Addrs()
	words := make([]uint64, 0, len(recs))
	for _, r := range recs {
		if r >= 4 {
			words = append(words, r-4)
		}
	}
	p := &Patcher{words: words, from: a64NOP, to: a64MovX9LR}
	if tabs.FtraceOpsLiteral {
		ops, ok := f.Symbols.ByName("ftrace_nop_ops")
		if !ok {
			return nil, fmt.Errorf("%s: symbol ftrace_nop_ops not found (the ftrace_ops literal before each traced function holds its address; give kallsyms with --symbols)", f.Path)
		}
		p.litVal = ops.Addr
		p.lits = make([]uint64, 0, len(recs))
		for _, r := range recs {
			if r >= 12 {
				p.lits = append(p.lits, (r-12)&^7)
			}
		}
		slices.Sort(p.lits)
	}
	return p, nil
}

// FtraceOpsLiteral is the value an arm64 Patcher writes into the ftrace_ops
// literal before each traced function (&ftrace_nop_ops), 0 when the kernel
// has no such literals.
func FtraceOpsLiteral(p *Patcher) uint64 { return p.litVal }

// CountPatchedWords is the number of words an arm64 Patcher rewrites.
func CountPatchedWords(p *Patcher) int { return len(p.words) }

// ErrNoReturnSites: the kernel has no return thunks to patch (no .return_sites:
// not a CONFIG_RETHUNK / MITIGATION_RETHUNK kernel).
var ErrNoReturnSites = errors.New("not a kernel with return thunks, nothing to patch")

// NewReturnPatcher builds a Patcher for f, or explains why it cannot.
func NewReturnPatcher(f *File) (*Patcher, error) {
	sites, ok, err := ReturnSites(f)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s has no .return_sites section: %w", f.Path, ErrNoReturnSites)
	}
	t, ok := f.Symbols.ByName("__x86_return_thunk")
	if !ok {
		return nil, fmt.Errorf("%s: symbol __x86_return_thunk not found (give --symbols)", f.Path)
	}
	return &Patcher{returns: sites, thunk: t.Addr}, nil
}

// CountReturnSites is the number of return-thunk sites p knows.
func CountReturnSites(p *Patcher) int { return len(p.returns) }

// ReturnThunk is the address of __x86_return_thunk.
func ReturnThunk(p *Patcher) uint64 { return p.thunk }

// Patch rewrites b (the bytes at addr) in place and returns how many sites it
// patched.
func (p *Patcher) Patch(addr uint64, b []byte) int {
	if p.words != nil || p.alt != nil {
		return p.patchWords(addr, b) + countApplied(p.applyAlternatives(addr, b))
	}
	n := 0
	if p.x86 != nil {
		n = p.x86.Apply(addr, b, &p.x86cpu)
	}
	i := sort.Search(len(p.returns), func(i int) bool { return p.returns[i] >= addr })
	for ; i < len(p.returns) && p.returns[i] < addr+uint64(len(b)); i++ {
		off := p.returns[i] - addr
		if off+5 > uint64(len(b)) || b[off] != 0xe9 {
			continue
		}
		dest := p.returns[i] + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[off+1:]))))
		if dest != p.thunk {
			continue // a static-call fixup or another thunk: left alone, as the kernel does
		}
		b[off] = 0xc3
		for k := off + 1; k < off+5; k++ {
			b[k] = 0xcc
		}
		n++
	}
	return n
}

// patchWords rewrites the words of p.words inside b (the bytes at addr) that
// hold p.from.
func (p *Patcher) patchWords(addr uint64, b []byte) int {
	n := p.patchLiterals(addr, b)
	i := sort.Search(len(p.words), func(i int) bool { return p.words[i] >= addr })
	for ; i < len(p.words) && p.words[i]+4 <= addr+uint64(len(b)); i++ {
		off := p.words[i] - addr
		if binary.LittleEndian.Uint32(b[off:]) != p.from {
			continue
		}
		binary.LittleEndian.PutUint32(b[off:], p.to)
		n++
	}
	return n
}

// patchLiterals writes p.litVal over each ftrace_ops literal of p.lits that
// overlaps b (the bytes at addr) and still holds its two NOPs; a literal that
// b holds only one word of gets that word.
func (p *Patcher) patchLiterals(addr uint64, b []byte) int {
	n := 0
	end := addr + uint64(len(b))
	i := sort.Search(len(p.lits), func(i int) bool { return p.lits[i]+8 > addr })
	for ; i < len(p.lits) && p.lits[i] < end; i++ {
		var v [8]byte
		binary.LittleEndian.PutUint64(v[:], p.litVal)
		for k := uint64(0); k < 8; k += 4 {
			at := p.lits[i] + k
			if at < addr || at+4 > end {
				continue
			}
			off := at - addr
			if binary.LittleEndian.Uint32(b[off:]) == a64NOP {
				copy(b[off:off+4], v[k:k+4])
			}
		}
		n++
	}
	return n
}

// a64Alt is the alternatives part of an arm64 Patcher.
type a64Alt struct {
	tab  *A64Alternatives
	caps A64CapSet
}

// SetCPUCaps makes p apply f's CPU alternatives (arch/arm64/kernel/alternative.c)
// as the kernel does on a system with the cpucaps of list ("none", or
// comma-separated names from arch/arm64/tools/cpucaps; ALWAYS_BOOT and
// ALWAYS_SYSTEM are always in). It returns a note describing what is applied;
// reason names the reason id an audit puts on every boundary in a site.
func (p *Patcher) SetCPUCaps(f *File, list, reason string) (note string, err error) {
	tab, err := ARM64Alternatives(f)
	if err != nil {
		return "", err
	}
	caps, err := tab.Caps.ParseCaps(list)
	if err != nil {
		return "", err
	}
	p.alt = &a64Alt{tab: tab, caps: caps}
	var names []string
	for _, c := range caps.Caps() {
		names = append(names, tab.Caps.Name(c))
	}
	return fmt.Sprintf("CPU alternatives: %d sites from %s; applied as on a CPU with the cpucaps %s (numbered by %s), callbacks other than alt_cb_patch_nops and kvm_update_va_mask (VHE) not modelled; every boundary in a site carries %s", len(tab.Alts), tab.From, strings.Join(names, ","), tab.Caps.From, reason), nil
}

// Alternatives is the alternatives table SetCPUCaps read (nil without it).
func (p *Patcher) Alternatives() *A64Alternatives {
	if p == nil || p.alt == nil {
		return nil
	}
	return p.alt.tab
}

// CountAlternatives is the number of alternative sites p knows (0 without SetCPUCaps).
func CountAlternatives(p *Patcher) int {
	if t := p.Alternatives(); t != nil {
		return len(t.Alts)
	}
	return 0
}

// PatchSites rewrites b (the bytes at addr) in place as Patch does and
// returns the arm64 alternative sites it met, applied or not, so that a
// caller can mark the boundaries inside them.
func (p *Patcher) PatchSites(addr uint64, b []byte) []A64AltSite {
	if p.alt == nil {
		p.Patch(addr, b)
		return nil
	}
	p.patchWords(addr, b)
	return p.applyAlternatives(addr, b)
}

// applyAlternatives patches b (the bytes at addr) and returns the sites met.
func (p *Patcher) applyAlternatives(addr uint64, b []byte) []A64AltSite {
	if p.alt == nil {
		return nil
	}
	return p.alt.tab.Apply(addr, b, &p.alt.caps)
}

func countApplied(sites []A64AltSite) int {
	n := 0
	for _, s := range sites {
		if s.Status == AltApplied || s.Status == AltNops {
			n++
		}
	}
	return n
}
