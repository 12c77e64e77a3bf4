package kernelref

import (
	"encoding/hex"
	"fmt"
)

// A Case is an input the golden table covers: function bytes before the probe
// (Pre), a template for the probed instruction and the configuration. The
// oracle decides where the instruction ends and what the kernel does with it.
type Case struct {
	Pre      []byte
	Template []byte
	Bits     int
	Preempt  bool
	Post     bool
	Extable  bool
	Addr     uint64
	Slot     uint64
	Note     string
	// Filler is how many trailing template bytes are only there in case the
	// opcode takes them (ModRM, displacement); the kernel decoder's length says.
	// Other template bytes past the instruction are kept as the row's REST.
	Filler int
}

func b(x ...byte) []byte { return x }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// A memory operand [rBP+8] (mod=01 rm=101 disp8) with reg = r.
func modMem(r int) byte { return 0x45 | byte(r)<<3 }

// A register operand (mod=11) with reg = r, rm = 0.
func modReg(r int) byte { return 0xC0 | byte(r)<<3 }

// One-byte opcodes whose ModRM.reg selects the instruction (or a segment
// register, 8C/8E) and 0F opcodes likewise; each /reg gets a row, both with a
// memory and with a register operand.
var (
	groupsOne = []byte{0x80, 0x81, 0x82, 0x83, 0x8C, 0x8E, 0x8F, 0xC0, 0xC1, 0xC6, 0xC7,
		0xD0, 0xD1, 0xD2, 0xD3, 0xD8, 0xD9, 0xDA, 0xDB, 0xDC, 0xDD, 0xDE, 0xDF,
		0xF6, 0xF7, 0xFE, 0xFF}
	groupsTwo = []byte{0x00, 0x01, 0x0D, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F,
		0x71, 0x72, 0x73, 0xAE, 0xB9, 0xBA, 0xC7}
	// 0F xx whose mod=11 forms are separate instructions by rm too.
	fullModRMTwo = []byte{0x01, 0xAE, 0xC7}
)

// prefixBases are instructions each prefix rule is tried on.
var prefixBases = []struct {
	bytes []byte
	note  string
}{
	{b(0x90), "nop"},
	{b(0x89, 0x45, 0x08), "mov r/m,r"},
	{b(0x8B, 0x45, 0x08), "mov r,r/m"},
	{b(0xC7, 0x45, 0x08, 1, 0, 0, 0), "mov r/m,imm"},
	{b(0xC3), "ret"},
	{b(0xC2, 0x08, 0x00), "ret imm16"},
	{b(0xCB), "lret"},
	{b(0x74, 0x08), "jz rel8"},
	{b(0x0F, 0x84, 0x08, 0, 0, 0), "jz rel32"},
	{b(0xE8, 0x08, 0, 0, 0), "call rel32"},
	{b(0xE9, 0x08, 0, 0, 0), "jmp rel32"},
	{b(0xEB, 0x08), "jmp rel8"},
	{b(0xE3, 0x08), "jcxz"},
	{b(0xE2, 0x08), "loop"},
	{b(0xFF, 0xD0), "call *reg"},
	{b(0xFF, 0xE0), "jmp *reg"},
	{b(0xFF, 0x55, 0x08), "call *mem"},
	{b(0xFF, 0x65, 0x08), "jmp *mem"},
	{b(0x9C), "pushf"},
	{b(0x9D), "popf"},
	{b(0xFA), "cli"},
	{b(0x0F, 0x1F, 0x45, 0x08), "nopl"},
	{b(0x0F, 0xA2), "cpuid"},
	{b(0x0F, 0xB8, 0x45, 0x08), "0f b8 (popcnt with f3)"},
	{b(0x0F, 0x10, 0x45, 0x08), "0f 10 (movups/movsd/movss)"},
	{b(0x0F, 0x38, 0x00, 0x45, 0x08), "0f 38 00"},
	{b(0xA4), "movsb"},
	{b(0x01, 0x45, 0x08), "add r/m,r"},
	{b(0x8E, 0xD0), "mov ss"},
}

var legacyPrefixes = []byte{0x26, 0x2E, 0x36, 0x3E, 0x64, 0x65, 0x66, 0x67, 0xF0, 0xF2, 0xF3}

// Cases lists every input of the linux-6.1 golden table for one kernel word size.
func Cases(bits int) []Case {
	var cs []Case
	add := func(c Case) {
		c.Bits = bits
		cs = append(cs, c)
	}
	tmpl := func(note string, parts ...[]byte) {
		add(Case{Template: cat(parts...), Note: note})
	}
	// sweep adds a case whose last two bytes (ModRM, disp8) may be filler.
	sweep := func(note string, parts ...[]byte) {
		add(Case{Template: cat(parts...), Note: note, Filler: 2})
	}
	// Every one-byte opcode, followed by a ModRM [rBP+8] in case it takes one.
	for op := 0; op < 256; op++ {
		sweep(fmt.Sprintf("one-byte %02x", op), b(byte(op), modMem(0), 0x08))
	}
	// Every 0F xx, 0F 38 xx and 0F 3A xx.
	for op := 0; op < 256; op++ {
		sweep(fmt.Sprintf("0f %02x", op), b(0x0F, byte(op), modMem(0), 0x08))
	}
	for _, m := range []byte{0x38, 0x3A} {
		for op := 0; op < 256; op++ {
			sweep(fmt.Sprintf("0f %02x %02x", m, op), b(0x0F, m, byte(op), modMem(0), 0x08))
		}
	}
	// Every /reg of every group, memory and register forms.
	for _, op := range groupsOne {
		for r := 0; r < 8; r++ {
			sweep(fmt.Sprintf("%02x /%d mem", op, r), b(op, modMem(r), 0x08))
			tmpl(fmt.Sprintf("%02x /%d reg", op, r), b(op, modReg(r)))
		}
	}
	for _, op := range groupsTwo {
		for r := 0; r < 8; r++ {
			sweep(fmt.Sprintf("0f %02x /%d mem", op, r), b(0x0F, op, modMem(r), 0x08))
			tmpl(fmt.Sprintf("0f %02x /%d reg", op, r), b(0x0F, op, modReg(r)))
		}
	}
	for _, op := range fullModRMTwo {
		for m := 0xC0; m < 0x100; m++ {
			if m&7 != 0 { // rm=0 is already in the group rows
				tmpl(fmt.Sprintf("0f %02x modrm %02x", op, m), b(0x0F, op, byte(m)))
			}
		}
	}
	// FF /2 and /4 with a REX.B register (the emulation reads REX.B) and RIP-relative.
	if bits == 64 {
		tmpl("call *%r8", b(0x41, 0xFF, 0xD0))
		tmpl("jmp *%r11", b(0x41, 0xFF, 0xE3))
		tmpl("call *rip-rel", b(0xFF, 0x15, 8, 0, 0, 0))
		tmpl("jmp *rip-rel", b(0xFF, 0x25, 8, 0, 0, 0))
	}
	// Prefix rules: each legacy prefix (and REX) before each base instruction,
	// a doubled prefix, and combinations.
	prefixes := append([]byte{}, legacyPrefixes...)
	if bits == 64 {
		prefixes = append(prefixes, 0x40, 0x41, 0x44, 0x48, 0x4C, 0x4F)
	}
	for _, p := range prefixes {
		for _, base := range prefixBases {
			tmpl(fmt.Sprintf("prefix %02x + %s", p, base.note), b(p), base.bytes)
		}
		tmpl(fmt.Sprintf("prefix %02x %02x + nop", p, p), b(p, p, 0x90))
		tmpl(fmt.Sprintf("prefix %02x %02x + mov", p, p), b(p, p, 0x89, 0x45, 0x08))
	}
	for _, pp := range [][]byte{{0x2E, 0x3E}, {0x3E, 0x2E}, {0x66, 0x67}, {0x67, 0x66}, {0xF3, 0x66},
		{0x66, 0xF2}, {0xF0, 0x2E}, {0x64, 0x67}, {0x26, 0x36, 0x3E, 0x64}, {0x26, 0x36, 0x3E, 0x64, 0x65},
		{0x26, 0x36, 0x3E, 0x64, 0x65, 0x2E}, {0x26, 0x36, 0x3E, 0x64, 0x65, 0x67}, {0x66, 0x66, 0x66, 0x2E}} {
		for _, base := range []int{0, 1, 4, 7, 14} {
			tmpl(fmt.Sprintf("prefixes % x + %s", pp, prefixBases[base].note), pp, prefixBases[base].bytes)
		}
	}
	// push reg and opcode 90 forms (uprobes emulate these).
	tmpl("66 push", b(0x66, 0x50))
	tmpl("pause (f3 90)", b(0xF3, 0x90))
	tmpl("66 66 nop", b(0x66, 0x66, 0x90))
	if bits == 64 {
		for r := byte(0); r < 8; r++ {
			tmpl(fmt.Sprintf("push r%d", 8+r), b(0x41, 0x50+r))
		}
		tmpl("rex.w push", b(0x48, 0x50))
		tmpl("rex.wb push r8", b(0x49, 0x50))
		tmpl("xchg r8,rax (41 90)", b(0x41, 0x90))
		tmpl("rex before 66 (rex ignored)", b(0x48, 0x66, 0x89, 0x45, 0x08))
		tmpl("two rex", b(0x48, 0x41, 0x89, 0x45, 0x08))
		tmpl("rex.w call rel32", b(0x48, 0xE8, 8, 0, 0, 0))
		tmpl("rex.w jmp *reg", b(0x48, 0xFF, 0xE0))
	}
	// VEX, EVEX and XOP: the kernel judges their opcode byte as a one-byte opcode.
	for op := 0; op < 256; op++ {
		sweep(fmt.Sprintf("vex2 0f %02x", op), b(0xC5, 0xF8, byte(op), modMem(0), 0x08))
	}
	for op := 0; op < 256; op += 1 {
		sweep(fmt.Sprintf("vex3 0f38 %02x", op), b(0xC4, 0xE2, 0x79, byte(op), modMem(0), 0x08))
	}
	for op := 0; op < 256; op += 1 {
		sweep(fmt.Sprintf("evex 0f %02x", op), b(0x62, 0xF1, 0x7C, 0x48, byte(op), modMem(0), 0x01))
	}
	// A legacy prefix or REX before VEX/EVEX (#UD on the CPU; the kernel decodes it).
	for _, p := range prefixes {
		tmpl(fmt.Sprintf("prefix %02x + vex2 vmovups", p), b(p, 0xC5, 0xF8, 0x10, modMem(0), 0x08))
		tmpl(fmt.Sprintf("prefix %02x + vex3 vpshufb", p), b(p, 0xC4, 0xE2, 0x79, 0x00, modMem(0), 0x08))
		tmpl(fmt.Sprintf("prefix %02x + evex vmovups", p), b(p, 0x62, 0xF1, 0x7C, 0x48, 0x10, modMem(0), 0x01))
		tmpl(fmt.Sprintf("prefix %02x + vex2 vzeroupper", p), b(p, 0xC5, 0xF8, 0x77))
	}
	for _, op := range []byte{0x77, 0x10, 0x6F, 0xEF, 0xC2, 0xE8, 0x9C, 0xFA} {
		tmpl(fmt.Sprintf("vex3 0f %02x", op), b(0xC4, 0xE1, 0x79, op, modMem(0), 0x08))
		tmpl(fmt.Sprintf("vex3 0f3a %02x", op), b(0xC4, 0xE3, 0x79, op, modMem(0), 0x08, 0x01))
		tmpl(fmt.Sprintf("xop 8f map8 %02x", op), b(0x8F, 0xE8, 0x78, op, modMem(0), 0x08, 0x01))
	}
	// Length limit: 10 bytes boost, 11 do not; 15 bytes leave no room for int3.
	imm64 := b(1, 2, 3, 4, 5, 6, 7, 8)
	tmpl("10-byte movabs", b(0x48, 0xB8), imm64)
	tmpl("11-byte movabs (ds)", b(0x3E, 0x48, 0xB8), imm64)
	tmpl("11-byte mov [rsp+disp32],imm32", b(0xC7, 0x84, 0x24, 0x10, 0, 0, 0, 1, 0, 0, 0))
	tmpl("10-byte mov [rbp+disp32],imm32 (ds)", b(0x3E, 0xC7, 0x85, 0x10, 0, 0, 0, 1, 0, 0, 0))
	tmpl("14-byte movabs (4 ds)", b(0x3E, 0x3E, 0x3E, 0x3E, 0x48, 0xB8), imm64)
	tmpl("15-byte movabs (5 ds)", b(0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x48, 0xB8), imm64)
	tmpl("15-byte jz rel32 (9 ds)", b(0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x0F, 0x84, 8, 0, 0, 0))
	tmpl("15-byte call rel32 (10 ds)", b(0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0x3E, 0xE8, 8, 0, 0, 0))
	for n := 9; n <= 15; n++ {
		p := make([]byte, n)
		for i := range p {
			p[i] = 0x66
		}
		tmpl(fmt.Sprintf("%d x 66 + nop", n), p, b(0x90))
	}
	// Rejections in __copy_instruction: emulate prefixes, int3, mov ss, pop ds.
	xen := b(0x0F, 0x0B, 'x', 'e', 'n')
	kvm := b(0x0F, 0x0B, 'k', 'v', 'm')
	tmpl("xen emulate prefix + cpuid", xen, b(0x0F, 0xA2))
	tmpl("xen emulate prefix + nop", xen, b(0x90))
	tmpl("xen emulate prefix + mov", xen, b(0x89, 0x45, 0x08))
	tmpl("kvm emulate prefix + cpuid", kvm, b(0x0F, 0xA2))
	tmpl("kvm emulate prefix + jz rel32", kvm, b(0x0F, 0x84, 8, 0, 0, 0))
	tmpl("ud2 + 'xe' (no emulate prefix)", b(0x0F, 0x0B, 'x', 'e', 0x90))
	tmpl("ud2 + 'kvn' (no emulate prefix)", b(0x0F, 0x0B, 'k', 'v', 'n'))
	tmpl("int3", b(0xCC))
	tmpl("pop ss (17)", b(0x17))
	tmpl("pop ds (1f)", b(0x1F))
	tmpl("66 pop ds", b(0x66, 0x1F))
	tmpl("mov ss,[mem]", b(0x8E, 0x55, 0x08))
	tmpl("66 mov ss,ax", b(0x66, 0x8E, 0xD0))
	tmpl("iret", b(0xCF))
	tmpl("48 iretq", b(0x48, 0xCF))
	tmpl("far call ptr", b(0x9A, 1, 2, 3, 4, 5, 6))
	tmpl("far jmp ptr", b(0xEA, 1, 2, 3, 4, 5, 6))
	tmpl("67 call *reg", b(0x67, 0xFF, 0xD0))
	tmpl("66 call *reg", b(0x66, 0xFF, 0xD0))
	// RIP-relative displacement rebased to the slot: s32 limits (64-bit only).
	if bits == 64 {
		a := uint64(DefaultAddr64)
		rip := func(note string, slot uint64, disp int32) {
			d := uint32(disp)
			add(Case{Template: b(0x8B, 0x05, byte(d), byte(d>>8), byte(d>>16), byte(d>>24)),
				Slot: slot, Note: note})
		}
		rip("rip-rel, slot 2 GiB - 64 KiB below, newdisp 0x7fffffff", a-0x7fff0000, 0xffff)
		rip("rip-rel, slot 2 GiB - 64 KiB below, newdisp 0x80000000", a-0x7fff0000, 0x10000)
		// A probe below its slot (the slot 2 GiB - 64 KiB above it).
		lo := uint64(0xffffffff00000000)
		ripAt := func(note string, addr, slot uint64, disp int32) {
			d := uint32(disp)
			add(Case{Template: b(0x8B, 0x05, byte(d), byte(d>>8), byte(d>>16), byte(d>>24)),
				Addr: addr, Slot: slot, Note: note})
		}
		ripAt("rip-rel, slot 2 GiB - 64 KiB above, newdisp -0x80000000", lo, lo+0x7fff0000, -0x10000)
		ripAt("rip-rel, slot 2 GiB - 64 KiB above, newdisp -0x80000001", lo, lo+0x7fff0000, -0x10001)
		rip("rip-rel, slot 16 TiB away", 0x100000000000, 0)
		rip("rip-rel, slot = probe address, disp 0x7fffffff", a, 0x7fffffff)
		add(Case{Template: b(0x48, 0x8D, 0x05, 0, 0, 0, 0), Slot: 0x100000000000, Note: "lea rip-rel, slot 16 TiB away"})
		add(Case{Template: b(0xC7, 0x05, 0, 0, 1, 0, 1, 0, 0, 0), Slot: a - 0x7fff0000, Note: "rip-rel with imm32, newdisp 0x80000000"})
		add(Case{Template: b(0xC7, 0x05, 0xff, 0xff, 0, 0, 1, 0, 0, 0), Slot: a - 0x7fff0000, Note: "rip-rel with imm32, newdisp 0x7fffffff"})
		add(Case{Template: b(0x8B, 0x05, 0, 0, 0, 0), Addr: 0xffffffffc0001000, Slot: 0xffffffffc0000000,
			Note: "rip-rel, module text near the slot"})
	} else {
		add(Case{Template: b(0x8B, 0x05, 0, 0, 0, 0x80), Slot: 0x1000, Note: "disp32 absolute (no rip-rel on i386)"})
		add(Case{Template: b(0xFF, 0x15, 0, 0, 0, 0x80), Slot: 0x1000, Note: "call *disp32"})
	}
	// Configuration: CONFIG_PREEMPTION, post_handler, exception table.
	cfgBases := [][]byte{b(0x90), b(0x89, 0x45, 0x08), b(0xC3), b(0x9C), b(0xFA), b(0xFF, 0xE0),
		b(0xFF, 0xD0), b(0x74, 0x08), b(0xE8, 8, 0, 0, 0), b(0x0F, 0xA2), b(0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8)}
	for _, base := range cfgBases {
		for _, c := range []Case{{Preempt: true}, {Post: true}, {Extable: true}, {Preempt: true, Post: true}} {
			c.Template = base
			c.Note = fmt.Sprintf("config % x", base)
			add(c)
		}
	}
	// Boundaries: can_probe walks the kernel decoder from the function start.
	bound := func(note string, pre, insn []byte) { add(Case{Pre: pre, Template: insn, Note: note}) }
	bound("after push rbp; mov rbp,rsp", b(0x55, 0x48, 0x89, 0xE5), b(0xC3))
	bound("inside mov rbp,rsp", b(0x55, 0x48), b(0x89, 0xE5, 0xC3))
	bound("inside movabs", b(0x48, 0xB8, 1, 2), b(3, 4, 5, 6, 7, 8, 0xC3))
	bound("after movabs", b(0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8), b(0xC3))
	bound("after call rel32", b(0xE8, 0, 0, 0, 0), b(0x90))
	bound("nop after ud2 'xen' (one emulate-prefixed insn)", b(0x0F, 0x0B, 'x', 'e', 'n'), b(0x90))
	bound("after ud2", b(0x0F, 0x0B), b(0x90))
	bound("after endbr64", b(0xF3, 0x0F, 0x1E, 0xFA), b(0x55))
	bound("inside endbr64", b(0xF3, 0x0F), b(0x1E, 0xFA, 0x55))
	bound("after 5-byte nop (fentry site)", b(0x0F, 0x1F, 0x44, 0x00, 0x00), b(0x55))
	bound("inside 5-byte nop", b(0x0F, 0x1F, 0x44), b(0x00, 0x00, 0x55))
	bound("after 5 distinct prefixes + nop", b(0x26, 0x36, 0x3E, 0x64, 0x65, 0x90), b(0xC3))
	bound("after vzeroupper", b(0xC5, 0xF8, 0x77), b(0xC3))
	bound("after an undecodable byte run", b(0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90), b(0xC3))
	return cs
}

// UprobeCases are the NOP forms and their neighbours where uprobes of
// different versions differ (6.1's case 0x90, 6.18's x86_nops, 7.x's
// insn_is_nop() and the optimizable 10-byte NOP), for a bits-bit process.
func UprobeCases(bits int) []Case {
	forms := []string{
		// 0x90 with prefixes: PAUSE, xchg with r8 (REX.B), REX.W.
		"90", "6690", "f390", "f290", "4190", "4990", "4890", "666690", "2e90",
		// 0F 1F /0 of every length, the kernel's x86_nops and others.
		"0f1f00", "0f1f4000", "0f1f440000", "660f1f440000", "0f1f8000000000", "0f1f840000000000",
		"660f1f840000000000", "662e0f1f840000000000", "66662e0f1f840000000000", "2e0f1f840000000000",
		"660f1f4000", "0f1f0400", "0f1f440001", "0f1fc0", "0f1f4c0000", "410f1f440000", "440f1f440000",
		"3e0f1f440000", "f30f1f440000", "662e0f1f840001000000", "662e0f1f84c000000000", "662e0f1f440000",
		"662e0f1f8000000000", "662e0f1f0400",
		// mov %r,%r.
		"89c0", "4889c0", "4d89c0", "4c89c0", "4889e4", "6689c0", "89c9", "4889c1", "8bc0", "4889c0", "4989c0",
		// lea 0(%r),%r.
		"8d7600", "488d7600", "488d742600", "488d746600", "488db600000000", "488d7601", "3e488d7600",
		"67488d7600", "488d36", "8d742600", "8db42600000000", "4a8d742600", "498d7000", "4d8d4000", "668d7600",
		"2e488d7600",
		// jmp +0 and others.
		"eb00", "e900000000", "eb01", "66eb00", "66e90000", "e901000000",
		// REX2 (64-bit; in 32-bit mode d5 is AAD).
		"d50090", "d50190", "d51090", "d5801f00", "d5801f440000", "d5c01f00", "d54889c0", "d54c89c0", "d5108d7600",
		// REX2 map 1 at 10 bytes: 7.2's can_optimize() runs insn_is_nop() first, which rewrites the opcode.
		"d5807084240102030411", "d580708400", "d5807f842401020304",
		// VEX: insn_is_nop ignores them.
		"c5f890", "c4e17890",
	}
	var out []Case
	for _, f := range forms {
		raw, err := hex.DecodeString(f)
		if err != nil {
			panic(err)
		}
		out = append(out, Case{Template: raw, Bits: bits, Note: "uprobe nop form " + f})
	}
	return out
}
