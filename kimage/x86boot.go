package kimage

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/kboost/kboost/decode"
)

// x86 boot-time text patching (arch/x86/kernel/alternative.c of Linux 6.1,
// alternative_instructions): before kprobes can be used the kernel rewrites
// its own text, in this order:
//
//  1. apply_paravirt(.parainstructions): each paravirt call site (`call
//     *pv_ops+N(%rip)`, struct paravirt_patch_site {u8 *instr; u8 type, len},
//     16 bytes) becomes `call pv_ops[type]` (a direct call), nothing when the
//     op is _paravirt_nop, padded with x86_nops to the site's length;
//  2. apply_retpolines, apply_returns (the return-thunk sites: see
//     Patcher's return thunks, bootpatch.go);
//  3. apply_alternatives(.altinstructions): struct alt_instr {s32 instr, repl;
//     u16 cpuid; u8 instrlen, replacementlen}, packed (12 bytes), in table
//     order; a site whose feature the CPU has (or lacks, with
//     ALTINSTR_FLAG_INV) gets its replacement (a 5-byte call's displacement
//     rebased, a 5-byte jmp recomputed as recompute_jump does, 0x90 padding),
//     and every site's single-byte NOP runs are then merged (optimize_nops);
//  4. apply_ibt_endbr (only on a CPU with IBT).
//
// X86Boot models steps 1 and 3 for a CPU given as its feature bits; the pv_ops
// values are the ones the image initialises (a kernel on bare metal or a
// non-paravirtual hypervisor such as QEMU TCG: no Xen PV, no KVM
// paravirtualisation). For a kernel after 6.1 only the ftrace records and the
// LOCK prefixes are applied (X86Boot.Partial says so): 6.12 moved the
// paravirt sites into the alternatives and gave alt_instr a flags word.

const (
	pvSiteSize  = 16
	altFlagInv  = 1 << 15
	x86NopMax   = 8
	x86CallOp   = 0xe8
	x86JmpRel32 = 0xe9
	x86JmpRel8  = 0xeb
)

// x86Nops are x86_nops[1..8] of a 64-bit kernel (BYTES_NOP1..8).
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
}

// addNops is add_nops: the largest NOPs first.
func addNops(b []byte) {
	for len(b) > 0 {
		n := min(len(b), x86NopMax)
		copy(b, x86Nops[n])
		b = b[n:]
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
	Orig, Repl       uint64
	Feature          uint16 // word*32+bit, ALTINSTR_FLAG_INV masked off
	Inverted         bool   // applied when the CPU lacks Feature
	OrigLen, ReplLen uint8
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
	From     string   // where they came from, for notes
	// Partial, when not "", says what is not modelled for this kernel
	// (6.12 and later: the paravirt sites and alternatives).
	Partial string
	// altOrder indexes Alts by Orig (sorted), for lookups by range.
	altOrder []int
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

// X86Features is a CPU's feature bits (X86_FEATURE_* numbers: word*32+bit),
// synthetic ones included.
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

// ReadX86Boot reads the paravirt and alternatives tables of an x86-64
// vmlinux (ELF sections .parainstructions and .altinstructions). pv_ops and
// _paravirt_nop come from the symbols (kallsyms of a KALLSYMS_ALL kernel).
func ReadX86Boot(f *File) (*X86Boot, error) {
	if f.Arch == nil || f.Arch.Name != "x86-64" {
		return nil, fmt.Errorf("x86 boot patching: %w", ErrUnsupportedArch)
	}
	// 6.12 moved the paravirt sites into the alternatives, whose entries
	// grew a flags word (14 bytes): those two are read in 6.1's layout only;
	// the ftrace records and .smp_locks keep theirs.
	b := &X86Boot{f: f}
	if v := f.KernelVersion; v != "" && !strings.HasPrefix(v, "6.1.") && !strings.HasPrefix(v, "6.1-") {
		b.Partial = fmt.Sprintf("kernel %s: paravirt sites and alternatives not applied (read in Linux 6.1's layout only)", v)
	}
	if sec, ok := f.Section(".parainstructions"); ok && !sec.NoBits && b.Partial == "" {
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
		b.From = fmt.Sprintf("%d paravirt sites (.parainstructions, pv_ops at %#x)", len(b.PV), pv.Addr)
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
	if sec, ok := f.Section(".smp_locks"); ok && !sec.NoBits {
		d, err := sec.Data()
		if err != nil {
			return nil, err
		}
		for i := 0; i+4 <= len(d); i += 4 {
			b.SMPLocks = append(b.SMPLocks, sec.Addr+uint64(i)+uint64(int64(int32(binary.LittleEndian.Uint32(d[i:])))))
		}
		sort.Slice(b.SMPLocks, func(i, j int) bool { return b.SMPLocks[i] < b.SMPLocks[j] })
	}
	if sec, ok := f.Section(".altinstructions"); ok && !sec.NoBits && b.Partial == "" {
		d, err := sec.Data()
		if err != nil {
			return nil, err
		}
		for i := 0; i+altEntrySize <= len(d); i += altEntrySize {
			at := sec.Addr + uint64(i)
			cpuid := binary.LittleEndian.Uint16(d[i+8:])
			b.Alts = append(b.Alts, X86Alt{
				Orig:    at + uint64(int64(int32(binary.LittleEndian.Uint32(d[i:])))),
				Repl:    at + 4 + uint64(int64(int32(binary.LittleEndian.Uint32(d[i+4:])))),
				Feature: cpuid &^ altFlagInv, Inverted: cpuid&altFlagInv != 0,
				OrigLen: d[i+10], ReplLen: d[i+11],
			})
		}
		if b.From != "" {
			b.From += ", "
		}
		b.From += fmt.Sprintf("%d alternatives (.altinstructions)", len(b.Alts))
	}
	b.altOrder = make([]int, len(b.Alts))
	for i := range b.altOrder {
		b.altOrder[i] = i
	}
	sort.SliceStable(b.altOrder, func(i, j int) bool { return b.Alts[b.altOrder[i]].Orig < b.Alts[b.altOrder[j]].Orig })
	return b, nil
}

// Apply patches buf (the bytes at addr) as the kernel does at boot on the
// machine cpu: the ftrace records, the paravirt sites, then the alternatives,
// in the kernel's order, and the LOCK prefixes on a one-CPU machine. Sites that do not lie wholly inside buf are left alone. It
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
	for _, k := range idx {
		a := &b.Alts[k]
		if !inside(a.Orig, a.OrigLen) {
			continue
		}
		met++
		site := buf[a.Orig-addr : a.Orig-addr+uint64(a.OrigLen)]
		if cpu.Features.Has(a.Feature) != a.Inverted {
			b.replace(a, site)
		}
		optimizeNops(site)
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

// replace writes a's replacement over site (apply_alternatives' patch step).
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

// optimizeNops is optimize_nops: walking the site's instructions, each run of
// single-byte NOPs (0x90) longer than one becomes add_nops of its length.
func optimizeNops(site []byte) {
	for i := 0; i < len(site); {
		if site[i] != 0x90 {
			n := x86InsnLen(site[i:])
			if n <= 0 {
				return
			}
			i += n
			continue
		}
		j := i
		for j < len(site) && site[j] == 0x90 {
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

// X86 feature bits boot patching tests (arch/x86/include/asm/cpufeatures.h;
// the same numbers in 6.1, 6.12 and 7.2).
const (
	X86FeatureAlways = 3*32 + 21 // X86_FEATURE_ALWAYS: every CPU
	X86FeatureXenPV  = 8*32 + 16 // X86_FEATURE_XENPV: a Xen PV guest
)

// QEMU64 is the machine `kboost vm verify` boots an x86-64 kernel on: QEMU
// TCG's default CPU (qemu64), one CPU, not a Xen guest.
func QEMU64() X86CPU {
	c := X86CPU{CPUs: 1, Name: "qemu64 (QEMU TCG), 1 CPU"}
	c.Features.Add(X86FeatureAlways)
	return c
}

func (c X86CPU) String() string { return c.Name }
