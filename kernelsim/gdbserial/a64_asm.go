package gdbserial

import "fmt"

// A tiny A64 assembler: the handful of instructions the ARM64 runner and the
// slot models need, with labels for branches and literal loads.

const (
	a64SP  = 31 // register 31 as a base or in add/sub immediate: SP
	a64XZR = 31 // register 31 elsewhere: XZR
)

const a64NOP = 0xD503201F

// a64asm collects instruction words with labels.
type a64asm struct {
	base  uint64
	w     []uint32
	label map[string]int
	fix   []a64fix
	err   error
}

type a64fix struct {
	at    int
	label string
	kind  byte // 'b' imm26, 'c' imm19 (b.cond, cbz, ldr literal)
}

func newA64(base uint64) *a64asm { return &a64asm{base: base, label: map[string]int{}} }

func (a *a64asm) pc() uint64 { return a.base + 4*uint64(len(a.w)) }

func (a *a64asm) emit(w ...uint32) { a.w = append(a.w, w...) }

func (a *a64asm) mark(l string) {
	if _, dup := a.label[l]; dup {
		a.fail("label %q defined twice", l)
	}
	a.label[l] = len(a.w)
}

func (a *a64asm) fail(f string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("kernelsim: a64 assembler: "+f, args...)
	}
}

// movImm loads a 64-bit constant with movz/movk.
func (a *a64asm) movImm(rd int, v uint64) {
	a.emit(0xD2800000 | uint32(v&0xffff)<<5 | uint32(rd))
	for sh := 1; sh < 4; sh++ {
		if h := (v >> (16 * sh)) & 0xffff; h != 0 {
			a.emit(0xF2800000 | uint32(sh)<<21 | uint32(h)<<5 | uint32(rd))
		}
	}
}

func (a *a64asm) ldst(op uint32, rt, rn int, off int, scale int) {
	if off < 0 || off%scale != 0 || off/scale > 0xfff {
		a.fail("load/store offset %d not encodable", off)
	}
	a.emit(op | uint32(off/scale)<<10 | uint32(rn)<<5 | uint32(rt))
}

func (a *a64asm) ldr(rt, rn, off int)  { a.ldst(0xF9400000, rt, rn, off, 8) } // LDR Xt, [Xn, #off]
func (a *a64asm) str(rt, rn, off int)  { a.ldst(0xF9000000, rt, rn, off, 8) } // STR Xt, [Xn, #off]
func (a *a64asm) ldrw(rt, rn, off int) { a.ldst(0xB9400000, rt, rn, off, 4) } // LDR Wt, [Xn, #off]
func (a *a64asm) strw(rt, rn, off int) { a.ldst(0xB9000000, rt, rn, off, 4) } // STR Wt, [Xn, #off]

func (a *a64asm) pair(op uint32, rt, rt2, rn, off, scale int) {
	if off%scale != 0 || off/scale < -64 || off/scale > 63 {
		a.fail("pair offset %d not encodable", off)
	}
	a.emit(op | uint32(off/scale)&0x7f<<15 | uint32(rt2)<<10 | uint32(rn)<<5 | uint32(rt))
}

func (a *a64asm) ldp(rt, rt2, rn, off int)      { a.pair(0xA9400000, rt, rt2, rn, off, 8) }  // LDP Xt, Xt2, [Xn, #off]
func (a *a64asm) stp(rt, rt2, rn, off int)      { a.pair(0xA9000000, rt, rt2, rn, off, 8) }  // STP Xt, Xt2, [Xn, #off]
func (a *a64asm) ldpqPost(rt, rt2, rn, off int) { a.pair(0xACC00000, rt, rt2, rn, off, 16) } // LDP Qt, Qt2, [Xn], #off
func (a *a64asm) stpqPost(rt, rt2, rn, off int) { a.pair(0xAC800000, rt, rt2, rn, off, 16) } // STP Qt, Qt2, [Xn], #off

func (a *a64asm) addImm(rd, rn, imm int) { // ADD Xd|SP, Xn|SP, #imm
	if imm < 0 || imm > 0xfff {
		a.fail("add immediate %d not encodable", imm)
	}
	a.emit(0x91000000 | uint32(imm)<<10 | uint32(rn)<<5 | uint32(rd))
}

func (a *a64asm) subsImm(rd, rn, imm int) { // SUBS Xd, Xn, #imm (CMP when rd = XZR)
	if imm < 0 || imm > 0xfff {
		a.fail("subs immediate %d not encodable", imm)
	}
	a.emit(0xF1000000 | uint32(imm)<<10 | uint32(rn)<<5 | uint32(rd))
}

func (a *a64asm) subsReg(rd, rn, rm int) {
	a.emit(0xEB000000 | uint32(rm)<<16 | uint32(rn)<<5 | uint32(rd))
}
func (a *a64asm) addReg(rd, rn, rm int) {
	a.emit(0x8B000000 | uint32(rm)<<16 | uint32(rn)<<5 | uint32(rd))
}
func (a *a64asm) mov(rd, rm int) { a.emit(0xAA0003E0 | uint32(rm)<<16 | uint32(rd)) } // ORR Xd, XZR, Xm
func (a *a64asm) madd(rd, rn, rm, ra int) {
	a.emit(0x9B000000 | uint32(rm)<<16 | uint32(ra)<<10 | uint32(rn)<<5 | uint32(rd))
}

// system registers: op0:op1:CRn:CRm:op2 as the MRS/MSR immediate field
const (
	sysNZCV    = 0x5A10 // S3_3_C4_C2_0
	sysFPCR    = 0x5A20 // S3_3_C4_C4_0
	sysFPSR    = 0x5A21 // S3_3_C4_C4_1
	sysTPIDR0  = 0x5E82 // S3_3_C13_C0_2
	a64MRSBase = 0xD5300000
	a64MSRBase = 0xD5100000
)

func (a *a64asm) mrs(rt int, sys uint32) { a.emit(a64MRSBase | sys<<5 | uint32(rt)) }
func (a *a64asm) msr(sys uint32, rt int) { a.emit(a64MSRBase | sys<<5 | uint32(rt)) }

func (a *a64asm) svc()           { a.emit(0xD4000001) }
func (a *a64asm) brk(imm uint16) { a.emit(0xD4200000 | uint32(imm)<<5) }
func (a *a64asm) br(rn int)      { a.emit(0xD61F0000 | uint32(rn)<<5) }
func (a *a64asm) moviZero(vd int) {
	a.emit(0x6F00E400 | uint32(vd)) // MOVI Vd.2D, #0
}

func (a *a64asm) ref(op uint32, label string, kind byte) {
	a.fix = append(a.fix, a64fix{at: len(a.w), label: label, kind: kind})
	a.emit(op)
}

func (a *a64asm) b(label string)              { a.ref(0x14000000, label, 'b') }
func (a *a64asm) bcond(cond uint32, l string) { a.ref(0x54000000|cond, l, 'c') }
func (a *a64asm) cbz(rt int, l string)        { a.ref(0xB4000000|uint32(rt), l, 'c') }
func (a *a64asm) cbnz(rt int, l string)       { a.ref(0xB5000000|uint32(rt), l, 'c') }
func (a *a64asm) ldrLit(rt int, label string) { a.ref(0x58000000|uint32(rt), label, 'c') } // LDR Xt, label
func (a *a64asm) quad(v uint64)               { a.emit(uint32(v), uint32(v>>32)) }
func (a *a64asm) align8() {
	if len(a.w)%2 != 0 {
		a.emit(a64NOP)
	}
}

// condition codes
const (
	condEQ = 0
	condNE = 1
	condHS = 2
	condLO = 3
)

// bytes resolves the labels and returns the code.
func (a *a64asm) bytes() ([]byte, error) {
	for _, f := range a.fix {
		to, ok := a.label[f.label]
		if !ok {
			a.fail("undefined label %q", f.label)
			continue
		}
		d := to - f.at
		switch f.kind {
		case 'b':
			if d < -(1<<25) || d >= 1<<25 {
				a.fail("branch to %q out of range", f.label)
			}
			a.w[f.at] |= uint32(d) & 0x03FF_FFFF
		case 'c':
			if d < -(1<<18) || d >= 1<<18 {
				a.fail("branch to %q out of range", f.label)
			}
			a.w[f.at] |= (uint32(d) & 0x7FFFF) << 5
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	out := make([]byte, 4*len(a.w))
	for i, w := range a.w {
		out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	return out, nil
}
