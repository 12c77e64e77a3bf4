package kernelsim

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/kboost/kboost/decode"
)

// The Thumb-2 probe model of linux-6.1-thumb (a CONFIG_THUMB2_KERNEL
// kernel): the hit of a Thumb probe as arch/arm/probes/kprobes does it,
// written independently of package boost, whose slot image it checks.
//
//   - The condition check: inside an IT block the block's condition
//     (thumb_check_cc), for B<c> and B<c>.W their own; a failed condition
//     skips the instruction (PC += its length).
//   - The handler runs with regs->ARM_pc already past the instruction, so
//     every PC it reads is addr+4 (T16 handlers add 2 to addr+2, T32 ones
//     read addr+4), word-aligned for literals and ADR.
//   - Emulated instructions run in the policy's slot, [instruction, bx lr]
//     (a T16 one padded with a second bx lr), called like the kernel's
//     t16_emulate_* / t32_emulate_* handlers call it: r0..r3 (T32, the
//     registers decode_regs renamed), r0..r7 (T16 low-register ops), r8/r9
//     for PUSH/POP (rewritten as STMDB/LDMIA r9!), the APSR for the rwflags
//     handlers; then written back the way each handler does (including
//     t16_emulate_loregs_noitrwflags, which keeps the flags in an IT block,
//     and the PC writes with and without interworking). Registers the
//     handler does not load hold junk, as the kernel's would.
//   - Simulated instructions are computed here from the trial's registers;
//     those that read or write memory (LDR literal, SP-relative LDR/STR,
//     TBB/TBH) do the access in the sandbox from a small slot
//     ("ldr.w r0, [r1]"...; bx lr) with the kernel's address, so they see
//     the code page with the breakpoint in place, as the kernel does. A
//     fault there is reported at the probe (the kernel would oops).
//   - IT itself (t16_singlestep_it) is not checked: the sandbox cannot
//     resume code with ITSTATE set (counted as unmodelled).
//   - LDM/STM (T32) go through kprobe_decode_ldmstm, as on ARM
//     (ldmstm.go).

var isaT32 = &ISA{
	name: "thumb", Thumb: true, Mode: decode.ModeT32, Dec: decode.Thumb, rulePrefix: "thumb.",
	insnLen: func(w uint32) int {
		if w>>16 == 0 {
			return 2
		}
		return 4
	},
	insnBytes: T32Bytes,
	brkBytes: func(w uint32) []byte {
		if w>>16 == 0 {
			return T32Halves(T16BreakpointInsn)
		}
		return T32Bytes(T32BreakpointInsn)
	},
	jump:          T32JumpTo,
	Unpredictable: T32Unpredictable,
	CodeStore:     func(uint32) bool { return false }, // STR with Rn = PC: rejected
	hit:           t32KernelHit,
	VerifySlot:    VerifySlotT32,
	Value:         T32Value,
	Hex:           T32Hex,
	Group: func(w uint32) string {
		if w>>16 == 0 {
			return fmt.Sprintf("%02x", w>>8)
		}
		return fmt.Sprintf("%03x", w>>20)
	},
}

func T32Hex(w uint32) string { return hex.EncodeToString(T32Bytes(w)) }

// The kernel's Thumb kprobe breakpoints (KPROBE_THUMB16/32_BREAKPOINT_INSTRUCTION).
const (
	T16BreakpointInsn = 0xDE18
	T32BreakpointInsn = 0xF7F0A018
)

// T32Value reads a Thumb instruction value from memory bytes: a T16
// halfword, or a T32 instruction (first halfword 0xe800 or above) with its
// first halfword in bits 31..16; its length; false when b is too short.
func T32Value(b []byte) (uint32, int, bool) {
	if len(b) < 2 {
		return 0, 0, false
	}
	h := uint32(binary.LittleEndian.Uint16(b))
	if h>>11 < 0x1D {
		return h, 2, true
	}
	if len(b) < 4 {
		return 0, 0, false
	}
	return h<<16 | uint32(binary.LittleEndian.Uint16(b[2:])), 4, true
}

// VerifySlotT32 checks a Thumb emulation slot image for the instruction w:
// 6 bytes, the (renamed) instruction then bx lr (twice after a T16 one).
func VerifySlotT32(w uint32, img []byte) []string {
	if len(img) != 6 {
		return []string{fmt.Sprintf("slot is %d bytes, want 6 (insn + bx lr)", len(img))}
	}
	var p []string
	if t := binary.LittleEndian.Uint16(img[4:]); t != T32BxLR {
		p = append(p, fmt.Sprintf("slot tail %#04x is not bx lr", t))
	}
	if binary.LittleEndian.Uint16(img)>>11 < 0x1D {
		if t := binary.LittleEndian.Uint16(img[2:]); t != T32BxLR {
			p = append(p, fmt.Sprintf("halfword after a 16-bit instruction %#04x is not bx lr", t))
		}
	} else if w>>16 == 0 && w&0xFE00 != 0xB400 && w&0xFE00 != 0xBC00 {
		// only PUSH/POP become 32-bit (STMDB/LDMIA r9!)
		p = append(p, fmt.Sprintf("a 16-bit instruction %04x became a 32-bit one in the slot", w))
	}
	return p
}

// T32ITAllowed reports whether the Thumb value w may be the last
// instruction of an IT block (the architecture's rules: not CBZ/CBNZ,
// B<c>, IT, BKPT, CPS, SETEND or MOVS Rd, Rm (T2), which are UNPREDICTABLE
// or unconditional there).
func T32ITAllowed(w uint32) bool {
	if w>>16 != 0 {
		return !(w&0xF800D000 == 0xF0008000 && w>>23&7 != 7) // B<c>.W
	}
	switch {
	case w&0xF500 == 0xB100, w&0xF000 == 0xD000, w&0xFF00 == 0xBE00, w&0xFFE0 == 0xB660, w&0xFFF7 == 0xB650,
		w&0xFF00 == 0xBF00 && w&0xF != 0, w&0xFFC0 == 0:
		return false
	}
	return true
}

// t32Junk is what the registers a handler does not load hold in the slot
// (r4..r12: the kernel's own values).
func t32Junk(c *Case, from int) {
	for i := from; i <= 12; i++ {
		c.Regs.GPR[i] = 0x0BAD_0000 | uint64(i)<<4
	}
}

// t32Handler models one kernel handler: it fills h (registers, state,
// write-back) and returns the case it runs, if any.
type t32Handler struct {
	sim bool // a simulation (no slot from the policy)
	fn  func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error)
}

// t32Get is regs->uregs[n] as a handler reads it: the PC is addr+4.
func t32Get(p *A32Probe, t *Trial, n uint32) uint64 {
	if n == 15 {
		return p.Addr() + 4
	}
	return t.Regs.GPR[n]
}

// t32Set is regs->uregs[n] = v (a PC write without interworking).
func t32Set(h *a32Hit, n uint32, v uint64) {
	if n == 15 {
		h.regs.PC = v & 0xFFFF_FFFF
		return
	}
	h.regs.GPR[n] = v & 0xFFFF_FFFF
}

// t32BxWritePC is bx_write_pc: bit 0 selects the state.
func t32BxWritePC(h *a32Hit, v uint64) {
	v &= 0xFFFF_FFFF
	h.thumb = v&1 != 0
	if h.thumb {
		h.regs.PC = v &^ 1
	} else {
		h.regs.PC = v &^ 2
	}
}

// t32Access is the hit's case for a simulation that accesses memory: the
// access (ld: "ldr.w r0, [r1]" and friends, first halfword op) at addr,
// r0 = val for a store, then bx lr.
func t32Access(p *A32Probe, t *Trial, op uint16, addr, val uint64) *Case {
	c := p.slotCase(T32Halves(op, 0x0000, T32BxLR), t)
	t32Junk(c, 2)
	c.Regs.GPR[0], c.Regs.GPR[1] = val&0xFFFF_FFFF, addr&0xFFFF_FFFF
	return c
}

// First halfwords of "op r0, [r1]" (T32, imm12 = 0).
const (
	t32LdrR0R1   = 0xF8D1
	t32LdrhR0R1  = 0xF8B1
	t32LdrshR0R1 = 0xF9B1
	t32LdrbR0R1  = 0xF891
	t32LdrsbR0R1 = 0xF991
	t32StrR0R1   = 0xF8C1
)

func t32Sext(v uint32, bits uint) int64 { return int64(int32(v<<(32-bits))) >> (32 - bits) }

// t32Handlers are the handlers of Linux 6.1's actions-thumb.c, keyed by
// width and action ("t16:cbz_cbnz", "t32:ldr_str").
var t32Handlers = map[string]t32Handler{
	// --- T32 emulation (decode_regs renames Rt->r0, Rd(11:8)->r1, Rn->r2, Rm->r3)
	"t32:tst_teq_cmn_cmp": {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:cmn_cmp_imm":     {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:mov_mvn":         {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:add_sub_sp":      {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:data_processing": {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:saturate":        {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:extend":          {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:media":           {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:mul":             {fn: t32EmuRd8Rn16Rm0RWFlags},
	"t32:adr": {fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		rd := p.Word >> 8 & 15
		c := p.slotCase(slot, t)
		t32Junk(c, 0)
		c.Regs.GPR[1], c.Regs.GPR[2] = t32Get(p, t, rd), (p.Addr()+4)&^3
		h.wb = func(h *a32Hit, r *Result) { t32Set(h, rd, r.Regs.GPR[1]) }
		return c, nil
	}},
	"t32:addw_subw": {fn: t32EmuRd8Rn16NoFlags},
	"t32:movw_movt": {fn: t32EmuRd8Rn16NoFlags},
	"t32:bitfield":  {fn: t32EmuRd8Rn16NoFlags},
	"t32:rev_clz":   {fn: t32EmuRd8Rn16NoFlags},
	"t32:mul_add":   {fn: t32EmuRdlo12Rdhi8},
	"t32:mul_long":  {fn: t32EmuRdlo12Rdhi8},
	"t32:ldr_str": {fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		w := p.Word
		rt, rn, rm := w>>12&15, w>>16&15, w&15
		c := p.slotCase(slot, t)
		t32Junk(c, 0)
		c.Regs.GPR[0], c.Regs.GPR[2], c.Regs.GPR[3] = t32Get(p, t, rt), t32Get(p, t, rn), t32Get(p, t, rm)
		h.wb = func(h *a32Hit, r *Result) {
			t32Set(h, rn, r.Regs.GPR[2]) // the base, written back even without writeback
			if rt == 15 {
				t32BxWritePC(h, r.Regs.GPR[0])
			} else {
				t32Set(h, rt, r.Regs.GPR[0])
			}
		}
		return c, nil
	}},
	"t32:ldrd_strd": {fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		w := p.Word
		rt, rt2, rn := w>>12&15, w>>8&15, w>>16&15
		c := p.slotCase(slot, t)
		t32Junk(c, 0)
		c.Regs.GPR[0], c.Regs.GPR[1] = t32Get(p, t, rt), t32Get(p, t, rt2)
		if rn == 15 {
			c.Regs.GPR[2] = (p.Addr() + 4) &^ 3
		} else {
			c.Regs.GPR[2] = t.Regs.GPR[rn]
		}
		h.wb = func(h *a32Hit, r *Result) {
			if rn != 15 {
				t32Set(h, rn, r.Regs.GPR[2])
			}
			t32Set(h, rt, r.Regs.GPR[0])
			t32Set(h, rt2, r.Regs.GPR[1])
		}
		return c, nil
	}},
	"t32:sev_yield": {fn: t32EmuNone},
	// --- T32 simulation
	"t32:nop_wfe_wfi": {sim: true, fn: t32SimNop},
	"t32:pld_pli":     {sim: true, fn: t32SimNop},
	"t32:mrs": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		// the probed context's CPSR: user mode (0x10) here, flags from the
		// trial, execution state (T, IT) masked out
		t32Set(h, p.Word>>8&15, (t.Regs.Flags&A32FlagsMask|0x10)&0xF8FF03DF)
		return nil, nil
	}},
	"t32:b_cond": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		// B<c>.W: imm32 = SignExtend(S:J2:J1:imm6:imm11:'0')
		w := p.Word
		off := w>>26&1<<20 | w>>11&1<<19 | w>>13&1<<18 | w>>16&0x3F<<12 | w&0x7FF<<1
		h.regs.PC = (p.Addr() + 4 + uint64(t32Sext(off, 21))) & 0xFFFF_FFFF
		return nil, nil
	}},
	"t32:b_bl_blx": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		// B.W, BL, BLX: I1 = NOT(J1 XOR S), I2 = NOT(J2 XOR S),
		// imm32 = SignExtend(S:I1:I2:imm10:imm11:'0')
		w := p.Word
		s := w >> 26 & 1
		i1, i2 := ^(w>>13^s)&1, ^(w>>11^s)&1
		off := s<<24 | i1<<23 | i2<<22 | w>>16&0x3FF<<12 | w&0x7FF<<1
		pc := p.Addr() + 4
		if w&(1<<14) != 0 { // BL, BLX
			h.regs.GPR[a32RegLR] = pc | 1
			if w&(1<<12) == 0 { // BLX: to ARM state
				h.thumb = false
				pc &^= 3
			}
		}
		h.regs.PC = (pc + uint64(t32Sext(off, 25))) & 0xFFFF_FFFF
		return nil, nil
	}},
	"t32:ldr_literal": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		w := p.Word
		rt := w >> 12 & 15
		a := (p.Addr() + 4) &^ 3
		if w&(1<<23) != 0 {
			a += uint64(w & 0xFFF)
		} else {
			a -= uint64(w & 0xFFF)
		}
		op := uint16(t32LdrbR0R1)
		switch {
		case w&(1<<22) != 0:
			op = t32LdrR0R1
		case w&(1<<21) != 0 && w&(1<<24) != 0:
			op = t32LdrshR0R1
		case w&(1<<21) != 0:
			op = t32LdrhR0R1
		case w&(1<<24) != 0:
			op = t32LdrsbR0R1
		}
		h.wb = func(h *a32Hit, r *Result) {
			if op == t32LdrR0R1 && rt == 15 {
				t32BxWritePC(h, r.Regs.GPR[0])
				return
			}
			t32Set(h, rt, r.Regs.GPR[0])
		}
		return t32Access(p, t, op, a, 0), nil
	}},
	"t32:tbb_tbh": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		w := p.Word
		base, idx := t32Get(p, t, w>>16&15), t.Regs.GPR[w&15]
		op, a := uint16(t32LdrbR0R1), base+idx
		if w&0x10 != 0 { // TBH
			op, a = t32LdrhR0R1, base+2*idx
		}
		h.wb = func(h *a32Hit, r *Result) { h.regs.PC = (p.Addr() + 4 + 2*r.Regs.GPR[0]) & 0xFFFF_FFFF }
		return t32Access(p, t, op, a, 0), nil
	}},
	// --- T16 emulation
	"t16:cmp_tst":           {fn: t16EmuLoregs(true)},
	"t16:extend_rev":        {fn: t16EmuLoregs(true)},
	"t16:ldr_str":           {fn: t16EmuLoregs(true)},
	"t16:ldm_stm":           {fn: t16EmuLoregs(true)},
	"t16:shift_add_sub_mov": {fn: t16EmuLoregs(false)},
	"t16:data_processing":   {fn: t16EmuLoregs(false)},
	"t16:sev_yield":         {fn: t32EmuNone},
	"t16:hireg_ops": {fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		w := p.Word
		rdn, rm := w&7|w>>4&8, w>>3&15
		c := p.slotCase(slot, t)
		t32Junk(c, 0)
		c.Regs.GPR[1], c.Regs.GPR[0] = t32Get(p, t, rdn), t32Get(p, t, rm)
		h.wb = func(h *a32Hit, r *Result) {
			v := r.Regs.GPR[1]
			if rdn == 15 {
				v &^= 1
			}
			t32Set(h, rdn, v)
			h.regs.Flags = r.Regs.Flags & A32FlagsMask
		}
		return c, nil
	}},
	"t16:push": {fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		c := p.slotCase(slot, t)
		t32Junk(c, 8)
		c.Regs.GPR[9], c.Regs.GPR[8] = t.Regs.GPR[A32RegSP], t.Regs.GPR[a32RegLR]
		h.wb = func(h *a32Hit, r *Result) { h.regs.GPR[A32RegSP] = r.Regs.GPR[9] }
		return c, nil
	}},
	"t16:pop": {fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		c := p.slotCase(slot, t)
		t32Junk(c, 8)
		c.Regs.GPR[9] = t.Regs.GPR[A32RegSP]
		pc := p.Word&0x100 != 0
		h.wb = func(h *a32Hit, r *Result) {
			copy(h.regs.GPR[:8], r.Regs.GPR[:8])
			h.regs.GPR[A32RegSP] = r.Regs.GPR[9]
			if pc {
				t32BxWritePC(h, r.Regs.GPR[8])
			}
		}
		return c, nil
	}},
	// --- T16 simulation
	"t16:nop_wfe_wfi": {sim: true, fn: t32SimNop},
	"t16:add_sp_imm": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		imm := uint64(p.Word&0x7F) * 4
		if p.Word&0x80 != 0 {
			imm = -imm
		}
		h.regs.GPR[A32RegSP] = (h.regs.GPR[A32RegSP] + imm) & 0xFFFF_FFFF
		return nil, nil
	}},
	"t16:cbz_cbnz": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		w := p.Word
		nz := t.Regs.GPR[w&7]&0xFFFF_FFFF != 0
		if nz == (w&0x800 != 0) { // CBNZ on non-zero, CBZ on zero
			h.regs.PC = p.Addr() + 4 + uint64(w>>9&1<<6|w>>3&0x1F<<1)
		}
		return nil, nil
	}},
	"t16:ldr_literal": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		rt := p.Word >> 8 & 7
		h.wb = func(h *a32Hit, r *Result) { t32Set(h, rt, r.Regs.GPR[0]) }
		return t32Access(p, t, t32LdrR0R1, (p.Addr()+4)&^3+uint64(p.Word&0xFF)*4, 0), nil
	}},
	"t16:ldr_str_sp": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		rt := p.Word >> 8 & 7
		a := t.Regs.GPR[A32RegSP] + uint64(p.Word&0xFF)*4
		if p.Word&0x800 != 0 {
			h.wb = func(h *a32Hit, r *Result) { t32Set(h, rt, r.Regs.GPR[0]) }
			return t32Access(p, t, t32LdrR0R1, a, 0), nil
		}
		h.wb = func(*a32Hit, *Result) {}
		return t32Access(p, t, t32StrR0R1, a, t.Regs.GPR[rt]), nil
	}},
	"t16:adr_add_sp": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		base := (p.Addr() + 4) &^ 3
		if p.Word&0x800 != 0 {
			base = t.Regs.GPR[A32RegSP]
		}
		t32Set(h, p.Word>>8&7, base+uint64(p.Word&0xFF)*4)
		return nil, nil
	}},
	"t16:bx_blx": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		v := t32Get(p, t, p.Word>>3&15)
		if p.Word&0x80 != 0 {
			h.regs.GPR[a32RegLR] = (p.Addr() + 2) | 1
		}
		t32BxWritePC(h, v)
		return nil, nil
	}},
	"t16:b_cond": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		h.regs.PC = (p.Addr() + 4 + uint64(t32Sext(p.Word&0xFF<<1, 9))) & 0xFFFF_FFFF
		return nil, nil
	}},
	"t16:b": {sim: true, fn: func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		h.regs.PC = (p.Addr() + 4 + uint64(t32Sext(p.Word&0x7FF<<1, 12))) & 0xFFFF_FFFF
		return nil, nil
	}},
}

func t32SimNop(*A32Probe, []byte, *Trial, *a32Hit) (*Case, error) { return nil, nil }

// t32EmuNone is probes_emulate_none: the slot is called, nothing is
// written back.
func t32EmuNone(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
	c := p.slotCase(slot, t)
	t32Junk(c, 0)
	h.wb = func(*a32Hit, *Result) {}
	return c, nil
}

// t32EmuRd8Rn16Rm0RWFlags is t32_emulate_rd8rn16rm0_rwflags.
func t32EmuRd8Rn16Rm0RWFlags(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
	w := p.Word
	rd := w >> 8 & 15
	c := p.slotCase(slot, t)
	t32Junk(c, 0)
	c.Regs.GPR[1], c.Regs.GPR[2], c.Regs.GPR[3] = t32Get(p, t, rd), t32Get(p, t, w>>16&15), t32Get(p, t, w&15)
	h.wb = func(h *a32Hit, r *Result) {
		t32Set(h, rd, r.Regs.GPR[1])
		h.regs.Flags = r.Regs.Flags & A32FlagsMask
	}
	return c, nil
}

// t32EmuRd8Rn16NoFlags is t32_emulate_rd8rn16_noflags.
func t32EmuRd8Rn16NoFlags(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
	w := p.Word
	rd := w >> 8 & 15
	c := p.slotCase(slot, t)
	t32Junk(c, 0)
	c.Regs.GPR[1], c.Regs.GPR[2] = t32Get(p, t, rd), t32Get(p, t, w>>16&15)
	h.wb = func(h *a32Hit, r *Result) { t32Set(h, rd, r.Regs.GPR[1]) }
	return c, nil
}

// t32EmuRdlo12Rdhi8 is t32_emulate_rdlo12rdhi8rn16rm0_noflags.
func t32EmuRdlo12Rdhi8(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
	w := p.Word
	lo, hi := w>>12&15, w>>8&15
	c := p.slotCase(slot, t)
	t32Junk(c, 0)
	c.Regs.GPR[0], c.Regs.GPR[1], c.Regs.GPR[2], c.Regs.GPR[3] = t32Get(p, t, lo), t32Get(p, t, hi), t32Get(p, t, w>>16&15), t32Get(p, t, w&15)
	h.wb = func(h *a32Hit, r *Result) {
		t32Set(h, lo, r.Regs.GPR[0])
		t32Set(h, hi, r.Regs.GPR[1])
	}
	return c, nil
}

// t16EmuLoregs is t16_emulate_loregs_rwflags (rwflags) or
// t16_emulate_loregs_noitrwflags: r0..r7 in and out, the APSR in, and out
// unless (noit) the probe is inside an IT block.
func t16EmuLoregs(rwflags bool) func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
	return func(p *A32Probe, slot []byte, t *Trial, h *a32Hit) (*Case, error) {
		c := p.slotCase(slot, t)
		t32Junk(c, 8)
		h.wb = func(h *a32Hit, r *Result) {
			copy(h.regs.GPR[:8], r.Regs.GPR[:8])
			if rwflags || p.IT == 0 {
				h.regs.Flags = r.Regs.Flags & A32FlagsMask
			}
		}
		return c, nil
	}
}

// t32KernelHit is the Thumb hit (see the model above).
func t32KernelHit(p *A32Probe, path Path, slot []byte, t *Trial) (*Case, *a32Hit, error) {
	w := p.Word
	h := p.newHit(t)
	width := "t16:"
	cond := uint32(14)
	if p.IT != 0 {
		cond = uint32(p.IT) >> 4 & 15
	}
	if w>>16 != 0 {
		width = "t32:"
	}
	switch width + p.Action {
	case "t16:b_cond":
		cond = w >> 8 & 15
	case "t32:b_cond":
		cond = w >> 22 & 15
	case "t16:it":
		return nil, nil, &EmulateError{Inst: T32Hex(w), Why: "IT (t16_singlestep_it) sets ITSTATE, and the sandbox cannot resume code with ITSTATE set"}
	}
	if cond < 14 && !a32CondHolds(cond, t.Regs.Flags) {
		h.skip = true
		return nil, h, nil
	}
	if width+p.Action == "t32:ldm_stm" {
		c, err := ldmstmHit(p, path, slot, t, h)
		if err != nil {
			return nil, nil, err
		}
		return c, h, nil
	}
	hd, ok := t32Handlers[width+p.Action]
	if !ok {
		return nil, nil, &EmulateError{Inst: T32Hex(w), Why: fmt.Sprintf("no model of the kernel's handler for Thumb action %q", width+p.Action)}
	}
	switch {
	case path != PathEmulate && path != PathSingleStep:
		return nil, nil, ErrNoSlot
	case hd.sim != (path == PathEmulate):
		return nil, nil, &EmulateError{Inst: T32Hex(w), Why: fmt.Sprintf("the kernel's handler for %q does not take the %v path", width+p.Action, path)}
	case !hd.sim && slot == nil:
		return nil, nil, ErrNoSlot
	}
	c, err := hd.fn(p, slot, t, h)
	if err != nil {
		return nil, nil, err
	}
	if c != nil && h.wb == nil {
		h.wb = func(*a32Hit, *Result) {}
	}
	return c, h, nil
}

// T32Unpredictable names why the architecture calls the Thumb value w
// UNPREDICTABLE, for the forms whose kernel emulation can differ from a
// CPU's (writeback into a transferred register, LDRD into one register
// twice, CMP with PC or two low registers in the high-register form, a
// one-register or self-writeback T32 LDM/STM, REV and CLZ whose two Rm
// fields differ: the kernel's slot uses the first); "" otherwise.
func T32Unpredictable(w uint32) string {
	if w>>16 == 0 {
		if w&0xFF00 == 0x4500 { // CMP (high registers)
			n, m := w&7|w>>4&8, w>>3&15
			if n < 8 && m < 8 || n == 15 || m == 15 {
				return "CMP (high registers) with PC, or with two low registers"
			}
		}
		return ""
	}
	rn, rt, rt2 := w>>16&15, w>>12&15, w>>8&15
	switch {
	case w&0xFE400000 == 0xE8400000 && w&0x01200000 != 0: // LDRD/STRD (immediate)
		if w&(1<<21) != 0 && (rn == rt || rn == rt2) {
			return "LDRD/STRD with writeback and Rn = Rt or Rt2"
		}
		if w&(1<<20) != 0 && rt == rt2 {
			return "LDRD with Rt = Rt2"
		}
	case w&0xFE400000 == 0xE8000000: // LDM/STM
		list := w & 0xFFFF
		if list&(list-1) == 0 {
			return "LDM/STM (T32) of fewer than two registers"
		}
		if w&(1<<21) != 0 && list&(1<<rn) != 0 {
			return "LDM/STM with writeback and Rn in the list"
		}
	case w&0xFE000000 == 0xF8000000 && w&(1<<23) == 0 && w&0x800 != 0 && w&0x100 != 0 && rn == rt && rn != 15:
		return "LDR/STR (immediate) with writeback and Rn = Rt"
	case (w&0xFFF0F0C0 == 0xFA90F080 || w&0xFFF0F0F0 == 0xFAB0F080) && rn != w&15:
		return "REV/REV16/RBIT/REVSH/CLZ with two different Rm fields"
	}
	return ""
}
