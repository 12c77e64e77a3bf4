package cfi

import (
	"errors"
	"fmt"

	"github.com/kboost/kboost/decode"
)

// ErrStack: a word the unwind needs could not be read, or a register it
// needs is not known.
var ErrStack = errors.New("cfi: stack or register not available")

// Arch is an instruction set's DWARF register columns.
type Arch struct {
	SP, FP int // stack pointer and frame pointer columns
	PC     int // the program counter's column (the one CIEs name as return address)
	Regs   int // the columns a register set fills (0..Regs-1)
	// LinkReg: the return address column is a real register (arm64's
	// x30), not a pc pseudo-column; an unwinder must not overwrite it with
	// the frame's pc (a leaf's caller is in it).
	LinkReg bool
	// FrameAtCFA: a frame record (the saved frame pointer, then the
	// return address) sits right below the caller's stack pointer (x86's
	// push-and-move prologue), so a step through it restores the stack
	// pointer exactly, whatever the frame pointer it restores.
	FrameAtCFA bool
	PtrSize    int
	// SigReturn, when set, recognises the kernel's signal return
	// trampoline at pc (code no table covers, such as arm64's vDSO): it
	// turns r into the interrupted registers, read from the signal frame
	// through mem, and returns the interrupted pc (exact, not a return
	// address).
	SigReturn func(pc uint64, r *Regs, mem Memory) (uint64, bool)
}

// wordMask masks an address to a's pointer size (CFA arithmetic wraps at it).
func (a *Arch) wordMask() uint64 { return ^uint64(0) >> (64 - 8*uint(a.PtrSize)) }

// arches holds the per-arch values (x86_cfi.go, a64_cfi.go).
var arches = map[*decode.Arch]*Arch{}

// For returns a's register columns (nil: no unwinding for a).
func For(a *decode.Arch) *Arch { return arches[a] }

// Regs is one frame's registers by DWARF column; bit i of Known says V[i]
// holds the register's value.
type Regs struct {
	V     [NumRegs]uint64
	Known uint64
}

// Set records register col's value.
func (r *Regs) Set(col int, v uint64) {
	if col >= 0 && col < NumRegs {
		r.V[col], r.Known = v, r.Known|1<<col
	}
}

// Get returns register col's value and whether it is known.
func (r *Regs) Get(col int) (uint64, bool) {
	if col < 0 || col >= NumRegs || r.Known&(1<<col) == 0 {
		return 0, false
	}
	return r.V[col], true
}

// Memory reads one word (the arch's pointer size) of the unwound process.
type Memory func(addr uint64) (uint64, bool)

// Step unwinds one frame. at is the address, in the table's address
// space, whose row applies: the frame's pc, less one for a frame that is a
// return address (it points after its call, maybe past the function's
// end). r holds the frame's registers and becomes its caller's. It
// returns the caller's pc, whether this frame is a signal frame (the
// caller's pc is then exact, not a return address), and end at the
// outermost frame (its return address is undefined).
func (t *Table) Step(a *Arch, at uint64, r *Regs, mem Memory) (pc uint64, signal, end bool, err error) {
	if t.step != nil {
		return t.step(a, at, r, mem)
	}
	rw, err := t.rowAt(at)
	if err != nil {
		return 0, false, false, err
	}
	mask := a.wordMask()
	var cfa uint64
	switch rw.cfa.kind {
	case ruleCFAReg:
		v, ok := r.Get(int(min(rw.cfa.reg, NumRegs)))
		if !ok {
			return 0, false, false, fmt.Errorf("%w: CFA register %d", ErrStack, rw.cfa.reg)
		}
		cfa = (v + uint64(rw.cfa.off)) & mask
	case ruleCFAExpr:
		if cfa, err = eval(rw.cfa.expr, r, mem, mask, false, 0); err != nil {
			return 0, false, false, err
		}
	}
	old := *r
	for i := range rw.regs {
		ru := &rw.regs[i]
		var v uint64
		var ok bool
		switch ru.kind {
		case ruleUnset, ruleSame:
			continue
		case ruleUndef:
			r.Known &^= 1 << i
			continue
		case ruleOffset:
			v, ok = mem((cfa + uint64(ru.off)) & mask)
		case ruleValOff:
			v, ok = (cfa+uint64(ru.off))&mask, true
		case ruleReg:
			v, ok = old.Get(int(min(ru.reg, NumRegs)))
		case ruleExpr, ruleValExpr:
			addr, err := eval(ru.expr, &old, mem, mask, true, cfa)
			if err != nil {
				return 0, false, false, err
			}
			if ru.kind == ruleValExpr {
				v, ok = addr, true
			} else {
				v, ok = mem(addr)
			}
		}
		if !ok {
			if uint64(i) == rw.ra {
				return 0, false, false, fmt.Errorf("%w: return address (column %d) at CFA 0x%x", ErrStack, i, cfa)
			}
			r.Known &^= 1 << i
			continue
		}
		r.Set(i, v&mask)
	}
	if k := rw.regs[a.SP].kind; k == ruleUnset || k == ruleSame {
		r.Set(a.SP, cfa)
	}
	if rw.ra >= NumRegs {
		return 0, false, false, &FormatError{Section: ".eh_frame", What: fmt.Sprintf("return address column %d", rw.ra)}
	}
	if rw.regs[rw.ra].kind == ruleUndef {
		return 0, rw.signal, true, nil
	}
	pc, ok := r.Get(int(rw.ra))
	if !ok {
		return 0, rw.signal, false, fmt.Errorf("%w: return address column %d", ErrStack, rw.ra)
	}
	return pc, rw.signal, false, nil
}

// maxExprSteps bounds a DWARF expression's evaluation (its branches may loop).
const maxExprSteps = 1000

// eval runs a DWARF expression (the operations call frame information
// uses) and returns the top of its stack; push puts cfa on the stack first.
func eval(expr []byte, regs *Regs, mem Memory, mask uint64, push bool, cfa uint64) (uint64, error) {
	r := &reader{sec: "DWARF expression", b: expr}
	var st []uint64
	if push {
		st = append(st, cfa)
	}
	pop := func() uint64 {
		if len(st) == 0 {
			r.fail("stack underflow")
			return 0
		}
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v
	}
	for steps := 0; r.err == nil && r.off < len(r.b); steps++ {
		if steps == maxExprSteps || len(st) > 256 {
			r.fail("expression too long")
			break
		}
		op := r.u8()
		switch {
		case op >= 0x30 && op <= 0x4f: // lit0..31
			st = append(st, uint64(op-0x30))
			continue
		case op >= 0x70 && op <= 0x8f: // breg0..31
			off := r.sleb()
			v, ok := regs.Get(int(op - 0x70))
			if !ok {
				return 0, fmt.Errorf("%w: register %d in an expression", ErrStack, op-0x70)
			}
			st = append(st, v+uint64(off))
			continue
		}
		switch op {
		case 0x03: // addr
			if mask == 0xffffffff {
				st = append(st, uint64(r.u32()))
			} else {
				st = append(st, r.u64())
			}
		case 0x06: // deref
			v, ok := mem(pop() & mask)
			if !ok && r.err == nil {
				return 0, fmt.Errorf("%w: DW_OP_deref", ErrStack)
			}
			st = append(st, v)
		case 0x08:
			st = append(st, uint64(r.u8()))
		case 0x09:
			st = append(st, uint64(int64(int8(r.u8()))))
		case 0x0a:
			st = append(st, uint64(r.u16()))
		case 0x0b:
			st = append(st, uint64(int64(int16(r.u16()))))
		case 0x0c:
			st = append(st, uint64(r.u32()))
		case 0x0d:
			st = append(st, uint64(int64(int32(r.u32()))))
		case 0x0e, 0x0f:
			st = append(st, r.u64())
		case 0x10:
			st = append(st, r.uleb())
		case 0x11:
			st = append(st, uint64(r.sleb()))
		case 0x12: // dup
			v := pop()
			st = append(st, v, v)
		case 0x13: // drop
			pop()
		case 0x14: // over
			b, a := pop(), pop()
			st = append(st, a, b, a)
		case 0x16: // swap
			b, a := pop(), pop()
			st = append(st, b, a)
		case 0x1a, 0x1c, 0x1e, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e:
			b, a := pop(), pop()
			st = append(st, binop(op, a, b))
		case 0x1f: // neg
			st = append(st, -pop())
		case 0x20: // not
			st = append(st, ^pop())
		case 0x23: // plus_uconst
			st = append(st, pop()+r.uleb())
		case 0x2f: // skip
			d := int16(r.u16())
			r.off += int(d)
			if r.off < 0 || r.off > len(r.b) {
				r.off = 0
				r.fail("branch outside the expression")
			}
		case 0x28: // bra
			d := int16(r.u16())
			if pop() != 0 {
				r.off += int(d)
				if r.off < 0 || r.off > len(r.b) {
					r.off = 0
					r.fail("branch outside the expression")
				}
			}
		case 0x92: // bregx
			reg := r.uleb()
			off := r.sleb()
			v, ok := regs.Get(int(min(reg, NumRegs)))
			if !ok && r.err == nil {
				return 0, fmt.Errorf("%w: register %d in an expression", ErrStack, reg)
			}
			st = append(st, v+uint64(off))
		case 0x96: // nop
		default:
			if r.err == nil {
				return 0, errUnsupported(fmt.Sprintf("DW_OP 0x%02x in call frame information", op))
			}
		}
	}
	v := pop()
	if r.err != nil {
		return 0, r.err
	}
	return v & mask, nil
}

func binop(op uint8, a, b uint64) uint64 {
	bool2 := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case 0x1a:
		return a & b
	case 0x1c:
		return a - b
	case 0x1e:
		return a * b
	case 0x21:
		return a | b
	case 0x22:
		return a + b
	case 0x24:
		return a << (b & 63)
	case 0x25:
		return a >> (b & 63)
	case 0x26:
		return uint64(int64(a) >> (b & 63))
	case 0x27:
		return a ^ b
	case 0x29:
		return bool2(a == b)
	case 0x2a:
		return bool2(int64(a) >= int64(b))
	case 0x2b:
		return bool2(int64(a) > int64(b))
	case 0x2c:
		return bool2(int64(a) <= int64(b))
	case 0x2d:
		return bool2(int64(a) < int64(b))
	default: // 0x2e
		return bool2(a != b)
	}
}
