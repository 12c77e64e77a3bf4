package kernelsim

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/kboost/kboost/decode"
)

// EmulateError says why an emulated hit could not be modelled.
type EmulateError struct {
	Inst string
	Why  string
}

func (e *EmulateError) Error() string {
	return fmt.Sprintf("kernelsim: cannot emulate %s: %s", e.Inst, e.Why)
}

// machine is the state a kernel emulate_op sees: pt_regs and the stack page.
type machine struct {
	a     *Arch
	regs  Regs
	stack []byte // a copy of the stack page, written by pushes
	bad   string // set when the stack pointer leaves the page
}

// PtrSize is the size of a register, and of a pointer, in bytes.
func (a *Arch) PtrSize() uint64 { return uint64(bits.Len64(a.RegMask)) / 8 }

func (m *machine) push(v uint64) {
	n := m.a.PtrSize()
	sp := (m.regs.GPR[rSP] - n) & m.a.RegMask
	m.regs.GPR[rSP] = sp
	off := sp - m.a.Layout.Stack
	if sp < m.a.Layout.Stack || off+n > uint64(len(m.stack)) {
		m.bad = fmt.Sprintf("push to %#x outside the stack page", sp)
		return
	}
	if n == 4 {
		binary.LittleEndian.PutUint32(m.stack[off:], uint32(v))
	} else {
		binary.LittleEndian.PutUint64(m.stack[off:], v)
	}
}

func (m *machine) pop() uint64 {
	n := m.a.PtrSize()
	sp := m.regs.GPR[rSP]
	m.regs.GPR[rSP] = (sp + n) & m.a.RegMask
	off := sp - m.a.Layout.Stack
	if sp < m.a.Layout.Stack || off+n > uint64(len(m.stack)) {
		m.bad = fmt.Sprintf("pop from %#x outside the stack page", sp)
		return 0
	}
	if n == 4 {
		return uint64(binary.LittleEndian.Uint32(m.stack[off:]))
	}
	return binary.LittleEndian.Uint64(m.stack[off:])
}

// kernelOpcode returns the opcode bytes as the kernel's decoder stores them
// (insn->opcode.bytes[0..1]): for VEX/EVEX/XOP only the opcode byte, which
// prepare_emulation then reads as a one-byte opcode (the VEX quirk).
func kernelOpcode(in *decode.Inst) (b0, b1 byte) {
	if in.Enc != decode.EncLegacy || in.Map == decode.MapOne {
		return in.Opcode, 0
	}
	return 0x0F, in.Opcode
}

// jccTaken is int3_emulate_jcc's condition test (6.1.192, with the JNG/JNLE
// fix: the ZF term is ORed).
func jccTaken(cc byte, flags uint64) bool {
	masks := [6]uint64{FlagOF, FlagCF, FlagZF, FlagCF | FlagZF, FlagSF, FlagPF}
	var match bool
	if cc < 0xc {
		match = flags&masks[cc>>1] != 0
	} else {
		match = (flags&FlagSF != 0) != (flags&FlagOF != 0)
		if cc >= 0xe {
			match = match || flags&FlagZF != 0
		}
	}
	return match != (cc&1 != 0)
}

// Emulate6_1 is Linux 6.1's kprobe emulation of inst (decoded at its probe
// address) on the register file regs and a copy of the stack page: the
// kernel's emulate_op run from the int3 handler, with the kernel's own
// behaviour kept where it differs from the CPU — call pushes addr+5 whatever
// the instruction's length, ret imm16 does not release the immediate, lret is
// a near ret, branch targets are not truncated to the operand size, loop
// decrements only the address-size part of the count register, pushf pushes
// the flags as saved at the trap (IF set), popf loads every flag. It returns
// the state the handler returns to (regs.PC is the resumed IP).
func (a *Arch) Emulate6_1(inst *decode.Inst, regs Regs, stack []byte) (Regs, []byte, error) {
	m := &machine{a: a, regs: regs, stack: append([]byte(nil), stack...)}
	if len(m.stack) < StackSize {
		m.stack = append(m.stack, make([]byte, StackSize-len(m.stack))...)
	}
	mask := a.RegMask
	// at the int3 trap: regs->flags holds the interrupted flags (IF and the
	// reserved bit 1 set in user mode), regs->ip = addr+1
	m.regs.Flags = regs.Flags | FlagIF | 0x2
	next := inst.End() & mask
	rel := uint64(inst.Imm)
	b0, b1 := kernelOpcode(inst)
	fail := func(why string) (Regs, []byte, error) {
		return regs, stack, &EmulateError{Inst: fmt.Sprintf("% x", inst.Bytes()), Why: why}
	}
	switch {
	case b0 == 0xFA:
		m.regs.Flags &^= FlagIF
		m.regs.PC = next
	case b0 == 0xFB:
		m.regs.Flags |= FlagIF
		m.regs.PC = next
	case b0 == 0x9C:
		m.push(m.regs.Flags)
		m.regs.PC = next
	case b0 == 0x9D:
		m.regs.Flags = m.pop()
		m.regs.PC = next
	case b0 == 0xC2 || b0 == 0xC3 || b0 == 0xCA || b0 == 0xCB:
		m.regs.PC = m.pop() & mask
	case b0 == 0xE8:
		m.push((inst.Addr + 5) & mask) // CALL_INSN_SIZE, not the length
		m.regs.PC = (next + rel) & mask
	case b0 == 0xE9 || b0 == 0xEB:
		m.regs.PC = (next + rel) & mask
	case b0 >= 0x70 && b0 <= 0x7F:
		// rel32 = *(char *)insn->immediate.bytes
		r := uint64(int64(int8(inst.Imm)))
		if inst.ImmLen == 0 {
			r = 0
		}
		m.regs.PC = next
		if jccTaken(b0&0xf, m.regs.Flags) {
			m.regs.PC = (next + r) & mask
		}
	case b0 == 0x0F && b1&0xF0 == 0x80:
		m.regs.PC = next
		if jccTaken(b1&0xf, m.regs.Flags) {
			m.regs.PC = (next + rel) & mask
		}
	case b0 >= 0xE0 && b0 <= 0xE3:
		typ := b0 & 3
		asz := inst.AddrSize
		cm := uint64(1)<<asz - 1
		if asz == 64 {
			cm = ^uint64(0)
		}
		cx := m.regs.GPR[1]
		var match bool
		if typ != 3 {
			match = cx&cm != 0
			m.regs.GPR[1] = cx&^cm | (cx-1)&cm
		} else {
			match = cx&cm == 0
		}
		switch typ {
		case 0:
			match = match && m.regs.Flags&FlagZF == 0
		case 1:
			match = match && m.regs.Flags&FlagZF != 0
		}
		m.regs.PC = next
		if match {
			m.regs.PC = (next + uint64(int64(int8(inst.Imm)))) & mask
		}
	case b0 == 0xFF && inst.HasModRM && (inst.Reg() == 2 || inst.Reg() == 4):
		if inst.Mod() != 3 {
			return fail("memory-operand indirect branch (the kernel refuses it)")
		}
		r := inst.RM()
		if inst.Rex&1 != 0 {
			r += 8
		}
		target := m.regs.GPR[r] & mask
		if inst.Reg() == 2 {
			m.push(next)
		}
		m.regs.PC = target
	default:
		return fail("not one of the kernel's emulated opcodes")
	}
	if m.bad != "" {
		return fail(m.bad)
	}
	m.regs.Flags &= mask
	return m.regs, m.stack, nil
}
