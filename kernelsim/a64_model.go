package kernelsim

import (
	"encoding/binary"
	"fmt"
)

// SimulateA64 is an independent model of Linux 6.1's arm64 kprobe
// simulation handlers (arch/arm64/kernel/probes/simulate-insn.c): the
// instructions that never run out of line (B.cond, CBZ/CBNZ, TBZ/TBNZ,
// ADR/ADRP, B/BL, BR/BLR/RET, LDR/LDRSW literal; BC.cond as Linux 6.12
// adds it) are computed from pt_regs, with the kernel's own encoding masks. It returns the registers after the
// hit (PC included). A literal outside the trial's scratch and stack pages
// cannot be modelled (the kernel would read its own memory) and gives an
// *EmulateError.
func (a *Arch) SimulateA64(w uint32, addr uint64, t *Trial) (Regs, error) {
	r := t.Regs
	set := func(n int, v uint64) {
		if n != 31 { // register 31 is XZR here: pt_regs_write_reg ignores it
			r.GPR[n] = v
		}
	}
	get := func(n int) uint64 {
		if n == 31 {
			return 0
		}
		return r.GPR[n]
	}
	sext := func(v uint64, bits uint) int64 { return int64(v<<(64-bits)) >> (64 - bits) }
	rt := int(w & 31)
	switch {
	case w&0xFF000000 == 0x54000000: // B.cond, and BC.cond (FEAT_HBC) as Linux 6.12 simulates it
		d := int64(4)
		if a64CondHolds(w&15, r.Flags) {
			d = sext(uint64(w>>5&0x7ffff)<<2, 21)
		}
		r.PC = addr + uint64(d)
	case w&0x7E000000 == 0x34000000: // CBZ/CBNZ
		v := get(rt)
		if w>>31 == 0 {
			v &= 0xffff_ffff
		}
		d := int64(4)
		if (w&(1<<24) != 0) == (v != 0) {
			d = sext(uint64(w>>5&0x7ffff)<<2, 21)
		}
		r.PC = addr + uint64(d)
	case w&0x7E000000 == 0x36000000: // TBZ/TBNZ
		bit := (w>>31)<<5 | (w >> 19 & 31)
		set1 := get(rt)>>bit&1 != 0
		d := int64(4)
		if (w&(1<<24) != 0) == set1 {
			d = sext(uint64(w>>5&0x3fff)<<2, 16)
		}
		r.PC = addr + uint64(d)
	case w&0x1F000000 == 0x10000000: // ADR/ADRP
		imm := sext(uint64(w>>3&0x1ffffc|w>>29&3), 21)
		v := addr + uint64(imm)
		if w>>31 != 0 {
			v = addr&^0xfff + uint64(imm<<12)
		}
		set(rt, v)
		r.PC = addr + 4
	case w&0x7C000000 == 0x14000000: // B/BL
		if w>>31 != 0 {
			set(30, addr+4)
		}
		r.PC = addr + uint64(sext(uint64(w&0x3ffffff)<<2, 28))
	case w&0xFFFFFC1F == 0xD61F0000, w&0xFFFFFC1F == 0xD63F0000, w&0xFFFFFC1F == 0xD65F0000: // BR/BLR/RET
		r.PC = get(int(w >> 5 & 31))
		if w>>21&3 == 1 {
			set(30, addr+4)
		}
	case w&0xBF000000 == 0x18000000, w&0xFF000000 == 0x98000000: // LDR (W/X) / LDRSW literal
		la := addr + uint64(sext(uint64(w>>5&0x7ffff)<<2, 21))
		n := 4
		if w&0xBF000000 == 0x18000000 && w&(1<<30) != 0 {
			n = 8
		}
		b, ok := a.trialBytes(t, la, n)
		if !ok {
			return r, &EmulateError{Inst: fmt.Sprintf("%08x", w), Why: fmt.Sprintf("literal at %#x is outside the scratch and stack pages (the kernel reads its own memory)", la)}
		}
		switch {
		case n == 8:
			set(rt, binary.LittleEndian.Uint64(b))
		case w>>24 == 0x98:
			set(rt, uint64(int64(int32(binary.LittleEndian.Uint32(b)))))
		default:
			set(rt, uint64(binary.LittleEndian.Uint32(b)))
		}
		r.PC = addr + 4
	default:
		return r, &EmulateError{Inst: fmt.Sprintf("%08x", w), Why: "not one of the instructions arm64 kprobes simulate"}
	}
	return r, nil
}

// trialBytes returns n bytes at la from the trial's scratch or stack page.
func (a *Arch) trialBytes(t *Trial, la uint64, n int) ([]byte, bool) {
	for _, m := range []struct {
		at  uint64
		mem []byte
	}{{a.Layout.Scratch, t.Scratch}, {a.Layout.Stack, t.Stack}} {
		if la >= m.at && la+uint64(n) <= m.at+uint64(len(m.mem)) {
			return m.mem[la-m.at : la-m.at+uint64(n)], true
		}
	}
	return nil, false
}

// a64CondHolds evaluates an A64 condition code on NZCV (in Regs.Flags bit
// positions); 14 (AL) and 15 (NV) always hold.
func a64CondHolds(cond uint32, f uint64) bool {
	n, z, c, v := f&FlagN != 0, f&FlagZ != 0, f&FlagC != 0, f&FlagV != 0
	var r bool
	switch cond >> 1 {
	case 0:
		r = z
	case 1:
		r = c
	case 2:
		r = n
	case 3:
		r = v
	case 4:
		r = c && !z
	case 5:
		r = n == v
	case 6:
		r = n == v && !z
	case 7:
		return true
	}
	if cond&1 != 0 {
		return !r
	}
	return r
}
