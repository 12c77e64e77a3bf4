package decode

import (
	"encoding/binary"

	"github.com/kboost/kboost/opcodes"
)

// ARM64 is the AArch64 (A64) instruction set.
var ARM64 = &Arch{
	Name: "arm64", Mode: ModeA64, MaxInsnLen: 4, InsnAlign: 4, PtrSize: 8, ObjdumpArg: "aarch64",
	// modules, and so kprobe slots, lie within B's +-128 MiB of the text
	TextAddr: 0xffff800008010000, SlotAddr: 0xffff800000800000,
	Decode: decodeA64,
	Format: formatA64,
}

// decodeA64 decodes one A64 instruction word: it looks the word up in the
// generated encoding table (opcodes.A64, from opcodes/spec/arm64.spec) and fills
// Word, ArmOp, Branch, PCRel, Disp and Target. Every word has a length (4);
// words that are unallocated are reported with ErrInvalid and Len 4, a short
// input with ErrTruncated. It does not allocate unless it fails.
func decodeA64(inst *Inst, b []byte, addr uint64) error {
	*inst = Inst{Mode: ModeA64, Addr: addr}
	if len(b) < 4 {
		inst.Len = len(b)
		if inst.Len == 0 {
			inst.Len = 1
		}
		copy(inst.Raw[:], b)
		return &DecodeError{Addr: addr, Len: inst.Len, Err: ErrTruncated, Why: "an A64 instruction is 4 bytes"}
	}
	inst.Len = 4
	copy(inst.Raw[:], b[:4])
	w := binary.LittleEndian.Uint32(b)
	inst.Word = w
	op := opcodes.A64.Lookup(w)
	if op == nil || op.Unallocated() {
		return &DecodeError{Addr: addr, Len: 4, Err: ErrInvalid, Why: "unallocated A64 encoding"}
	}
	inst.ArmOp = op
	inst.Branch = op.Branch
	if op.Flags&opcodes.ArmPCRel != 0 {
		var off int64
		base := addr
		switch {
		case w&0x7C000000 == 0x14000000: // B, BL: imm26
			off = sext(w&0x03FFFFFF, 26) << 2
		case w&0x7E000000 == 0x36000000: // TBZ, TBNZ: imm14
			off = sext(w>>5&0x3FFF, 14) << 2
		case w&0x1F000000 == 0x10000000: // ADR, ADRP: immhi:immlo
			off = sext((w>>5&0x7FFFF)<<2|w>>29&3, 21)
			if w>>31 == 1 {
				off <<= 12
				base &^= 0xFFF
			}
		default: // B.cond, BC.cond, CBZ, CBNZ, literal loads: imm19
			off = sext(w>>5&0x7FFFF, 19) << 2
		}
		inst.Disp = off
		inst.Target = base + uint64(off)
		inst.PCRel = !op.Branch.Relative()
	}
	return nil
}
