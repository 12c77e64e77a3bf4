package kernelsim

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The kernel's LDM/STM handling on 32-bit ARM (kprobe_decode_ldmstm in
// arch/arm/probes/kprobes/actions-common.c), for A32 words and T32 values
// alike (T32 LDM/STM keep the A32 bit layout: P 24, U 23, W 21, L 20, Rn
// 19..16, the list 15..0):
//
//   - emulated when the registers fit a window of 13: r0..r12 (as is),
//     r2..r14 (registers renumbered down by 2) or, for an LDM that loads
//     the PC, r3..r15 (down by 3); the slot's LDM/STM runs with r0..r12
//     loaded from the window and the window stored back, the PC then
//     written with interworking (load_write_pc) for the r3..r15 window;
//   - simulated otherwise (simulate_ldm1stm1 and the PC variants): the
//     words are moved one by one, lowest register at the lowest address,
//     the base written back last, a stored PC is addr+8 (str_pc_offset on
//     ARMv7), a loaded PC interworks.
//
// The simulation's memory is the trial's scratch and stack pages; a
// transfer below 0x10000, where nothing is ever mapped, faults at its
// first word as the instruction does (the kernel would oops); any other
// transfer outside those pages is not modelled.

// ldmstmWindow is kprobe_decode_ldmstm's choice for insn: the first
// register of the emulation window (0, 2 or 3), or -1 for the simulation.
func ldmstmWindow(insn uint32) int {
	list, ldm, rn := insn&0xFFFF, insn&(1<<20) != 0, insn>>16&15
	switch {
	case rn <= 12 && list&0xE000 == 0:
		return 0
	case rn >= 2 && list&0x8003 == 0:
		return 2
	case rn >= 3 && list&0x0007 == 0 && ldm && list&0x8000 != 0:
		return 3
	}
	return -1
}

// ldmstmSlotInsn is the instruction the emulation slot holds: the
// registers renumbered into the window.
func ldmstmSlotInsn(insn uint32, win int) uint32 {
	rn, list := insn>>16&15, insn&0xFFFF
	return insn&0xFFF00000 | (rn-uint32(win))<<16 | list>>uint(win)
}

// ldmstmHit is the kernel's LDM/STM hit for p (Action "ldm_stm"): the
// emulation slot called with the window in r0..r12, or the simulation.
// pc is regs->ARM_pc while the handler runs (addr+4 in both states).
func ldmstmHit(p *A32Probe, path Path, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
	w := p.Word
	win := ldmstmWindow(w)
	pc := p.Addr() + 4
	if (win >= 0) != (path == PathSingleStep) {
		return nil, &EmulateError{Inst: p.Arch.ISA.Hex(w), Why: fmt.Sprintf("the kernel's LDM/STM handler does not take the %v path (window %d)", path, win)}
	}
	if win >= 0 {
		if slot == nil {
			return nil, ErrNoSlot
		}
		if want := p.Arch.ISA.insnBytes(ldmstmSlotInsn(w, win)); string(slot[:len(want)]) != string(want) {
			return nil, &EmulateError{Inst: p.Arch.ISA.Hex(w), Why: fmt.Sprintf("the policy's slot % x does not start with the renumbered instruction % x", slot, want)}
		}
		c := p.slotCase(slot, t)
		for i := 0; i <= 12; i++ {
			n := win + i
			if n == 15 {
				c.Regs.GPR[i] = pc
			} else {
				c.Regs.GPR[i] = t.Regs.GPR[n]
			}
		}
		h.wb = func(h *a32Hit, r *Result) {
			for i := 0; i <= 12; i++ {
				if n := win + i; n < 15 {
					h.regs.GPR[n] = r.Regs.GPR[i]
				} else {
					t32BxWritePC(h, r.Regs.GPR[i]) // load_write_pc
				}
			}
		}
		return c, nil
	}
	// simulate_ldm1stm1
	rn, list := w>>16&15, w&0xFFFF
	load, wback, up, pre := w&(1<<20) != 0, w&(1<<21) != 0, w&(1<<23) != 0, w&(1<<24) != 0
	n := uint64(bits.OnesCount32(list))
	base := t.Regs.GPR[rn]
	if rn == 15 {
		base = pc
	}
	a := base
	if !up {
		a -= 4 * n
	}
	if pre == up {
		a += 4
	}
	a &= 0xFFFF_FFFF
	scr, stk := padPage(t.Scratch), padPage(t.Stack)
	l := p.Arch.Layout
	word := func(at uint64) ([]byte, bool) {
		switch {
		case at%4 != 0:
		case at >= l.Scratch && at+4 <= l.Scratch+ScratchSize:
			return scr[at-l.Scratch:], true
		case at >= l.Stack && at+4 <= l.Stack+StackSize:
			return stk[at-l.Stack:], true
		}
		return nil, false
	}
	if a+4*n <= 0x10000 && a%4 == 0 {
		// below every mapping (Layout.Check): the first access faults, as
		// the instruction's does (the kernel would oops)
		h.fault = &Result{Outcome: Faulted, Fault: Fault{Signal: SIGSEGV, Code: 1, Addr: a, Trap: -1}, Scratch: scr, Stack: stk}
		return nil, nil
	}
	for i := uint64(0); i < n; i++ {
		if _, ok := word(a + 4*i); !ok {
			return nil, &EmulateError{Inst: p.Arch.ISA.Hex(w), Why: fmt.Sprintf("the transfer at %#x is outside the trial's scratch and stack pages or unaligned (the kernel would access its own memory)", a)}
		}
	}
	var newPC uint64
	for r := uint32(0); list != 0; r++ {
		if list&(1<<r) == 0 {
			continue
		}
		list &^= 1 << r
		m, _ := word(a)
		a += 4
		if load {
			v := uint64(binary.LittleEndian.Uint32(m))
			if r == 15 {
				newPC = v
				continue
			}
			h.regs.GPR[r] = v
			continue
		}
		v := t.Regs.GPR[r]
		if r == 15 {
			v = p.Addr() + 8 // simulate_stm1_pc: str_pc_offset
		}
		binary.LittleEndian.PutUint32(m, uint32(v))
	}
	if wback {
		// the base moves by n words, written after the loads
		if up {
			t32Set(h, rn, base+4*n)
		} else {
			t32Set(h, rn, base-4*n)
		}
	}
	if load && w&0x8000 != 0 {
		t32BxWritePC(h, newPC) // simulate_ldm1_pc: load_write_pc
	}
	h.mem = &Result{Scratch: scr, Stack: stk}
	return nil, nil
}
