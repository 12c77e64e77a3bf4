package kernelsim

import "github.com/kboost/kboost/decode"

// memOperand returns the effective address of inst's ModRM memory operand
// for the registers regs (legacy and REX encodings, 32- and 64-bit
// addressing, no segment override). ok is false when there is none or it
// cannot be computed here (register form, VEX/EVEX/XOP, 16-bit addressing,
// an FS/GS override).
func (a *Arch) MemOperand(in *decode.Inst, regs *Regs) (ea uint64, ok bool) {
	if !in.HasModRM || in.Mod() == 3 || in.Enc != decode.EncLegacy || in.AddrSize == 16 ||
		in.Prefixes&(decode.PfxFS|decode.PfxGS) != 0 {
		return 0, false
	}
	rexB, rexX := uint64(in.Rex&1)<<3, uint64(in.Rex>>1&1)<<3
	mask := uint64(0xffff_ffff)
	if in.AddrSize == 64 {
		mask = ^uint64(0)
	}
	if in.RIPRel {
		return (in.End() + uint64(in.Disp)) & mask, true
	}
	rm := uint64(in.RM())
	switch {
	case rm == 4: // SIB
		base, index, scale := uint64(in.SIB&7), uint64(in.SIB>>3&7), uint64(1)<<(in.SIB>>6)
		if !(base == 5 && in.Mod() == 0) {
			ea = regs.GPR[base|rexB]
		}
		if index|rexX != 4 {
			ea += regs.GPR[index|rexX] * scale
		}
	case rm == 5 && in.Mod() == 0: // disp32 (32-bit mode)
	default:
		ea = regs.GPR[rm|rexB]
	}
	return (ea + uint64(in.Disp)) & mask, true
}

// controlled reports whether [ea, ea+64) lies in pages the sandbox sets per
// case (code, slot, scratch, stack) — else the operand reads memory that
// differs from run to run (the runner's own, or an emulator's) or faults.
func (a *Arch) Controlled(ea uint64) bool {
	l := a.Layout
	for _, p := range []uint64{l.Orig, l.Slot, l.Scratch, l.Stack} {
		if ea >= p && ea+64 <= p+PageSize {
			return true
		}
	}
	return false
}
