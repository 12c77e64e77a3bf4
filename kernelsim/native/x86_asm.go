package native

import (
	"encoding/binary"
	"fmt"
)

// This file is a tiny x86 assembler: just the encodings the sandbox runner
// needs, in both 32-bit and 64-bit mode. Memory operands are either absolute
// ([disp32] through the SIB "no base, no index" form, valid and identical in
// both modes) or base+disp32. The runner places all of its own data below
// 2 GiB so absolute addressing works in both modes.

// x86 general registers in encoding order.
const (
	rAX = iota
	rCX
	rDX
	rBX
	rSP
	rBP
	rSI
	rDI
	r8
	r9
	r10
	r11
	r12
	r13
	r14
	r15
)

// Segment registers in encoding order.
const (
	sES = iota
	sCS
	sSS
	sDS
	sFS
	sGS
)

// Condition codes for jcc.
const (
	ccB  = 0x2 // below (unsigned <)
	ccAE = 0x3 // above or equal (unsigned >=)
	ccE  = 0x4
	ccNE = 0x5
)

// label names a position in the assembled code.
type label int

type fixup struct {
	at  int   // offset of the 4-byte field
	lab label // target
	rel bool  // rel32 (from at+4) or absolute 32-bit address
}

// asm accumulates machine code for one mode. All emit errors are programming
// errors in the runner generator, so they panic.
type asm struct {
	is64   bool
	base   uint64 // address of byte 0
	b      []byte
	labels []int // label -> offset, -1 until bound
	fix    []fixup
	starts []int // offset of every instruction, for the objdump cross-check
	rip    []ripFix
}

// ripFix is a RIP-relative displacement waiting for the end of its
// instruction.
type ripFix struct {
	at     int
	target uint64
}

// mark records the start of an instruction (and so the end of the previous
// one, which resolves its RIP-relative displacement).
func (a *asm) mark() {
	a.resolveRIP()
	a.starts = append(a.starts, len(a.b))
}

func (a *asm) resolveRIP() {
	end := a.base + uint64(len(a.b))
	for _, f := range a.rip {
		d := int64(f.target - end)
		if d != int64(int32(d)) {
			panic(fmt.Sprintf("kernelsim/asm: %#x not reachable RIP-relative from %#x", f.target, end))
		}
		binary.LittleEndian.PutUint32(a.b[f.at:], uint32(int32(d)))
	}
	a.rip = a.rip[:0]
}

func newAsm(is64 bool, base uint64) *asm { return &asm{is64: is64, base: base} }

func (a *asm) newLabel() label {
	a.labels = append(a.labels, -1)
	return label(len(a.labels) - 1)
}

func (a *asm) bind(l label) {
	if a.labels[l] >= 0 {
		panic("kernelsim/asm: label bound twice")
	}
	a.labels[l] = len(a.b)
}

// addr returns the absolute address of a bound label.
func (a *asm) addr(l label) uint64 {
	if a.labels[l] < 0 {
		panic("kernelsim/asm: label not bound")
	}
	return a.base + uint64(a.labels[l])
}

func (a *asm) emit(b ...byte) { a.b = append(a.b, b...) }

func (a *asm) u32(v uint32) { a.b = binary.LittleEndian.AppendUint32(a.b, v) }

func (a *asm) abs32(addr uint64) {
	if addr >= 1<<31 {
		panic(fmt.Sprintf("kernelsim/asm: absolute address %#x does not fit a sign-extended disp32", addr))
	}
	a.u32(uint32(addr))
}

// rex emits a REX prefix when one is needed (64-bit mode only).
func (a *asm) rex(w bool, reg, index, base int) {
	if !a.is64 {
		if reg >= 8 || base >= 8 || index >= 8 {
			panic("kernelsim/asm: r8-r15 in 32-bit mode")
		}
		return
	}
	v := byte(0x40)
	if w {
		v |= 8
	}
	v |= byte(reg>>3&1) << 2
	v |= byte(index>>3&1) << 1
	v |= byte(base >> 3 & 1)
	if v != 0x40 {
		a.emit(v)
	}
}

// mem is a memory operand: absolute (base < 0) or base+disp.
type mem struct {
	base int
	disp int64
}

func abs(addr uint64) mem            { return mem{base: -1, disp: int64(addr)} }
func based(base int, disp int64) mem { return mem{base: base, disp: disp} }

// modrmMem emits ModRM (+SIB) and displacement for reg,m. Absolute operands
// are RIP-relative in 64-bit mode, [disp32] in 32-bit mode.
func (a *asm) modrmMem(reg int, m mem) {
	if m.base < 0 && a.is64 {
		a.emit(byte(reg&7)<<3 | 5)
		a.rip = append(a.rip, ripFix{at: len(a.b), target: uint64(m.disp)})
		a.u32(0)
		return
	}
	if m.base < 0 {
		a.emit(byte(reg&7)<<3|4, 0x25)
		a.abs32(uint64(m.disp))
		return
	}
	if m.disp < -1<<31 || m.disp >= 1<<31 {
		panic("kernelsim/asm: displacement out of range")
	}
	a.emit(0x80 | byte(reg&7)<<3 | byte(m.base&7))
	if m.base&7 == rSP {
		a.emit(0x24)
	}
	a.u32(uint32(int32(m.disp)))
}

func (a *asm) rexMem(w bool, reg int, m mem) {
	b := 0
	if m.base >= 0 {
		b = m.base
	}
	a.rex(w, reg, 0, b)
}

// op emits [REX] opcode ModRM(reg, m).
func (a *asm) op(w bool, opc []byte, reg int, m mem) {
	a.rexMem(w, reg, m)
	a.emit(opc...)
	a.modrmMem(reg, m)
}

// load: mov reg, [m] (64-bit when w, else 32-bit).
func (a *asm) load(w bool, reg int, m mem) { a.mark(); a.op(w, []byte{0x8B}, reg, m) }

// store: mov [m], reg.
func (a *asm) store(w bool, m mem, reg int) { a.mark(); a.op(w, []byte{0x89}, reg, m) }

// storeImm: mov [m], imm32 (sign-extended to 64 bits when w).
func (a *asm) storeImm(w bool, m mem, imm uint32) {
	a.mark()
	a.op(w, []byte{0xC7}, 0, m)
	a.u32(imm)
}

// movRR: mov dst, src.
func (a *asm) movRR(w bool, dst, src int) {
	a.mark()
	a.rex(w, src, 0, dst)
	a.emit(0x89, 0xC0|byte(src&7)<<3|byte(dst&7))
}

// movImm32: mov r32, imm32 (zero-extends in 64-bit mode).
func (a *asm) movImm32(reg int, imm uint32) {
	a.mark()
	a.rex(false, 0, 0, reg)
	a.emit(0xB8 + byte(reg&7))
	a.u32(imm)
}

// movImm: loads a full register with imm (imm64 form only when needed).
func (a *asm) movImm(reg int, imm uint64) {
	if imm < 1<<32 {
		a.movImm32(reg, uint32(imm))
		return
	}
	if !a.is64 {
		panic("kernelsim/asm: 64-bit immediate in 32-bit mode")
	}
	a.mark()
	a.rex(true, 0, 0, reg)
	a.emit(0xB8 + byte(reg&7))
	a.b = binary.LittleEndian.AppendUint64(a.b, imm)
}

// movLabel: mov r32, address of l.
func (a *asm) movLabel(reg int, l label) {
	a.mark()
	a.rex(false, 0, 0, reg)
	a.emit(0xB8 + byte(reg&7))
	a.fixAbs(l)
}

// alu ops for aluImm.
const (
	aluAdd = 0
	aluAnd = 4
	aluSub = 5
	aluCmp = 7
)

// aluImm: <op> reg, imm32.
func (a *asm) aluImm(w bool, op, reg int, imm int32) {
	a.mark()
	a.rex(w, 0, 0, reg)
	a.emit(0x81, 0xC0|byte(op)<<3|byte(reg&7))
	a.u32(uint32(imm))
}

// cmpMem: cmp reg, [m].
func (a *asm) cmpMem(w bool, reg int, m mem) { a.mark(); a.op(w, []byte{0x3B}, reg, m) }

// subMem: sub reg, [m].
func (a *asm) subMem(w bool, reg int, m mem) { a.mark(); a.op(w, []byte{0x2B}, reg, m) }

// cmpMemImm: cmp dword [m], imm32.
func (a *asm) cmpMemImm(m mem, imm uint32) {
	a.mark()
	a.op(false, []byte{0x81}, 7, m)
	a.u32(imm)
}

// testMemImm: test dword [m], imm32.
func (a *asm) testMemImm(m mem, imm uint32) {
	a.mark()
	a.op(false, []byte{0xF7}, 0, m)
	a.u32(imm)
}

// incMem: inc dword [m].
func (a *asm) incMem(m mem) { a.mark(); a.op(false, []byte{0xFF}, 0, m) }

// imulImm: dst = src * imm32.
func (a *asm) imulImm(w bool, dst, src int, imm int32) {
	a.mark()
	a.rex(w, dst, 0, src)
	a.emit(0x69, 0xC0|byte(dst&7)<<3|byte(src&7))
	a.u32(uint32(imm))
}

// lea: reg = address of m.
func (a *asm) lea(w bool, reg int, m mem) { a.mark(); a.op(w, []byte{0x8D}, reg, m) }

// popMem: pop [m] (operand size = stack width).
func (a *asm) popMem(m mem) { a.mark(); a.op(false, []byte{0x8F}, 0, m) }

// jmpMem: jmp [m] (indirect, operand size = mode width).
func (a *asm) jmpMem(m mem) { a.mark(); a.op(false, []byte{0xFF}, 4, m) }

func (a *asm) pushImm8(v int8) { a.mark(); a.emit(0x6A, byte(v)) }
func (a *asm) pushf()          { a.mark(); a.emit(0x9C) }
func (a *asm) popf()           { a.mark(); a.emit(0x9D) }
func (a *asm) ret()            { a.mark(); a.emit(0xC3) }
func (a *asm) int3()           { a.mark(); a.emit(0xCC) }
func (a *asm) cld()            { a.mark(); a.emit(0xFC) }

// repMovsW: rep movsd (32-bit mode) / rep movsq (64-bit mode), copying
// words of the mode's width.
func (a *asm) repMovsW() {
	a.mark()
	a.emit(0xF3)
	if a.is64 {
		a.emit(0x48)
	}
	a.emit(0xA5)
}

// iret returns with the mode's natural operand size (iretq / iretd).
func (a *asm) iret() {
	a.mark()
	if a.is64 {
		a.emit(0x48)
	}
	a.emit(0xCF)
}

// syscallInsn emits the mode's system call instruction.
func (a *asm) syscallInsn() {
	a.mark()
	if a.is64 {
		a.emit(0x0F, 0x05)
	} else {
		a.emit(0xCD, 0x80)
	}
}

// movFromSreg: mov r32, sreg.
func (a *asm) movFromSreg(reg, sreg int) {
	a.mark()
	a.rex(false, 0, 0, reg)
	a.emit(0x8C, 0xC0|byte(sreg)<<3|byte(reg&7))
}

func (a *asm) fixAbs(l label) {
	a.fix = append(a.fix, fixup{at: len(a.b), lab: l})
	a.u32(0)
}

func (a *asm) fixRel(l label) {
	a.fix = append(a.fix, fixup{at: len(a.b), lab: l, rel: true})
	a.u32(0)
}

// jmp: jmp rel32.
func (a *asm) jmp(l label) { a.mark(); a.emit(0xE9); a.fixRel(l) }

// jcc: j<cc> rel32.
func (a *asm) jcc(cc byte, l label) { a.mark(); a.emit(0x0F, 0x80|cc); a.fixRel(l) }

// finish resolves fixups and returns the code.
func (a *asm) finish() []byte {
	a.resolveRIP()
	for _, f := range a.fix {
		off := a.labels[f.lab]
		if off < 0 {
			panic("kernelsim/asm: reference to unbound label")
		}
		if f.rel {
			binary.LittleEndian.PutUint32(a.b[f.at:], uint32(int32(off-(f.at+4))))
			continue
		}
		t := a.base + uint64(off)
		if t >= 1<<31 {
			panic("kernelsim/asm: label address beyond 2 GiB")
		}
		binary.LittleEndian.PutUint32(a.b[f.at:], uint32(t))
	}
	return a.b
}

// store16: mov [m], reg16.
func (a *asm) store16(m mem, reg int) {
	a.mark()
	a.emit(0x66)
	a.rexMem(false, reg, m)
	a.emit(0x89)
	a.modrmMem(reg, m)
}

// storeSS: mov ss:[m], reg32 (32-bit mode: works whatever DS holds).
func (a *asm) storeSS(m mem, reg int) {
	a.mark()
	a.emit(0x36, 0x89)
	a.modrmMem(reg, m)
}

// pushSSpopDSES reloads DS and ES from SS (32-bit mode only).
func (a *asm) pushSSpopDSES() {
	a.mark()
	a.emit(0x16)
	a.mark()
	a.emit(0x1F)
	a.mark()
	a.emit(0x16)
	a.mark()
	a.emit(0x07)
}

// cmpRR: cmp x, y.
func (a *asm) cmpRR(w bool, x, y int) {
	a.mark()
	a.rex(w, y, 0, x)
	a.emit(0x39, 0xC0|byte(y&7)<<3|byte(x&7))
}

// addRR: dst += src.
func (a *asm) addRR(w bool, dst, src int) {
	a.mark()
	a.rex(w, src, 0, dst)
	a.emit(0x01, 0xC0|byte(src&7)<<3|byte(dst&7))
}

// leaLabel: reg = address of l (RIP-relative lea in 64-bit mode, mov imm32 in
// 32-bit mode).
func (a *asm) leaLabel(reg int, l label) {
	if !a.is64 {
		a.movLabel(reg, l)
		return
	}
	a.mark()
	a.rex(true, reg, 0, 0)
	a.emit(0x8D, byte(reg&7)<<3|5)
	a.fixRel(l)
}

// fninit resets the x87 (and so MMX) state.
func (a *asm) fninit() { a.mark(); a.emit(0xDB, 0xE3) }

// ldmxcsr: load MXCSR from [m].
func (a *asm) ldmxcsr(m mem) { a.mark(); a.op(false, []byte{0x0F, 0xAE}, 2, m) }

// movToSreg: mov sreg, r32.
func (a *asm) movToSreg(sreg, reg int) {
	a.mark()
	a.rex(false, 0, 0, reg)
	a.emit(0x8E, 0xC0|byte(sreg)<<3|byte(reg&7))
}

// xrstor: restore the extended state components in EDX:EAX from [m].
func (a *asm) xrstor(m mem) { a.mark(); a.op(false, []byte{0x0F, 0xAE}, 5, m) }

// repeCmpsW: repe cmpsd / repe cmpsq (ZF=1 when all words were equal).
func (a *asm) repeCmpsW() {
	a.mark()
	a.emit(0xF3)
	if a.is64 {
		a.emit(0x48)
	}
	a.emit(0xA7)
}
