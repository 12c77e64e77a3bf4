package gdbserial

import (
	"fmt"
	"github.com/kboost/kboost/kernelsim"
)

// A tiny A32 assembler: the instructions the 32-bit ARM runner and the slot
// models need (ARM state, ARMv7), with labels for branches.

const a32Bkpt = 0xE1200070 // bkpt #0

// A32 condition codes.
const (
	a32EQ = 0
	a32NE = 1
	a32HS = 2
	a32AL = 14
)

type a32asm struct {
	base  uint64
	w     []uint32
	label map[string]int
	fix   []a64fix
	err   error
}

func newA32(base uint64) *a32asm { return &a32asm{base: base, label: map[string]int{}} }

func (a *a32asm) emit(w ...uint32) { a.w = append(a.w, w...) }

func (a *a32asm) mark(l string) {
	if _, dup := a.label[l]; dup {
		a.fail("label %q defined twice", l)
	}
	a.label[l] = len(a.w)
}

func (a *a32asm) addr(l string) uint64 { return a.base + 4*uint64(a.label[l]) }

func (a *a32asm) fail(f string, args ...any) {
	if a.err == nil {
		a.err = fmt.Errorf("kernelsim: a32 assembler: "+f, args...)
	}
}

// movImm loads a 32-bit constant with movw (and movt when needed).
func (a *a32asm) movImm(rd int, v uint32) {
	a.emit(0xE3000000 | (v&0xf000)<<4 | v&0xfff | uint32(rd)<<12)
	if h := v >> 16; h != 0 {
		a.emit(0xE3400000 | (h&0xf000)<<4 | h&0xfff | uint32(rd)<<12)
	}
}

// ldst: ldr/str rt, [rn, #off] (word), -4095..4095.
func (a *a32asm) ldst(load bool, rt, rn, off int) {
	w := uint32(0xE5000000) | uint32(rn)<<16 | uint32(rt)<<12
	if load {
		w |= 1 << 20
	}
	if off >= 0 {
		w |= 1 << 23
	} else {
		off = -off
	}
	if off > 4095 {
		a.fail("offset %d out of range", off)
	}
	a.emit(w | uint32(off))
}

func (a *a32asm) ldr(rt, rn, off int) { a.ldst(true, rt, rn, off) }
func (a *a32asm) str(rt, rn, off int) { a.ldst(false, rt, rn, off) }

// strCond is str with a condition.
func (a *a32asm) strCond(cond uint32, rt, rn, off int) {
	a.str(rt, rn, off)
	a.w[len(a.w)-1] = a.w[len(a.w)-1]&0x0FFFFFFF | cond<<28
}

func (a *a32asm) cmp(rn, rm int)         { a.emit(0xE1500000 | uint32(rn)<<16 | uint32(rm)) }
func (a *a32asm) cmpImm(rn int, v uint8) { a.emit(0xE3500000 | uint32(rn)<<16 | uint32(v)) }
func (a *a32asm) addReg(rd, rn, rm int) {
	a.emit(0xE0800000 | uint32(rn)<<16 | uint32(rd)<<12 | uint32(rm))
}
func (a *a32asm) addImm8(rd, rn int, v uint8) {
	a.emit(0xE2800000 | uint32(rn)<<16 | uint32(rd)<<12 | uint32(v))
}
func (a *a32asm) subsImm8(rd, rn int, v uint8) {
	a.emit(0xE2500000 | uint32(rn)<<16 | uint32(rd)<<12 | uint32(v))
}
func (a *a32asm) mul(rd, rn, rm int) {
	a.emit(0xE0000090 | uint32(rd)<<16 | uint32(rm)<<8 | uint32(rn))
}
func (a *a32asm) svc()  { a.emit(0xEF000000) }
func (a *a32asm) bxlr() { a.emit(0xE12FFF1E) }

// ldmia/stmia rn!, {list}
func (a *a32asm) ldmia(rn int, list uint16) { a.emit(0xE8B00000 | uint32(rn)<<16 | uint32(list)) }
func (a *a32asm) stmia(rn int, list uint16) { a.emit(0xE8A00000 | uint32(rn)<<16 | uint32(list)) }

// mrsAPSR / msrAPSR (nzcvq and GE: cpsr_fs).
func (a *a32asm) mrsAPSR(rd int) { a.emit(0xE10F0000 | uint32(rd)<<12) }
func (a *a32asm) msrAPSR(rn int) { a.emit(0xE12CF000 | uint32(rn)) }

// TPIDRURW (user read/write thread ID register).
func (a *a32asm) mcrTPIDR(rt int) { a.emit(0xEE0D0F50 | uint32(rt)<<12) }
func (a *a32asm) mrcTPIDR(rt int) { a.emit(0xEE1D0F50 | uint32(rt)<<12) }

// b with a condition to a label.
func (a *a32asm) bc(cond uint32, l string) {
	a.fix = append(a.fix, a64fix{at: len(a.w), label: l, kind: 'b'})
	a.emit(cond<<28 | 0x0A000000)
}

func (a *a32asm) b(l string) { a.bc(a32AL, l) }

func (a *a32asm) bytes() ([]byte, error) {
	for _, f := range a.fix {
		t, ok := a.label[f.label]
		if !ok {
			a.fail("undefined label %q", f.label)
			continue
		}
		d := (t - f.at - 2)
		a.w[f.at] |= uint32(d) & 0xFFFFFF
	}
	if a.err != nil {
		return nil, a.err
	}
	return kernelsim.A64Bytes(a.w...), nil
}
