package decode

import (
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/kboost/kboost/opcodes"
	"golang.org/x/arch/arm/armasm"
)

// ARM is the 32-bit ARM instruction set (A32, "ARM state").
var ARM = &Arch{
	Name: "arm", Mode: ModeA32, MaxInsnLen: 4, InsnAlign: 4, PtrSize: 4, ObjdumpArg: "arm",
	TextAddr: 0xc0100000, SlotAddr: 0xbf000000,
	Decode: decodeA32,
	Format: formatARM32,
}

// Thumb is the Thumb-2 instruction set (T32: 2-byte T16 and 4-byte T32
// encodings, "Thumb state"). objdump needs `-m arm -M force-thumb` for raw
// Thumb bytes. Decoding is stateless; a linear sweep tracks IT blocks with
// ITState.
var Thumb = &Arch{
	Name: "thumb", Mode: ModeT32, MaxInsnLen: 4, InsnAlign: 2, PtrSize: 4, ObjdumpArg: "arm",
	TextAddr: 0xc0100000, SlotAddr: 0xbf000000, ITBlocks: true,
	Decode: decodeT32,
	Format: formatARM32,
}

// Cond is an AArch32 condition code (the Arm ARM's cond field).
type Cond uint8

// Condition codes.
const (
	CondEQ Cond = iota
	CondNE
	CondCS
	CondCC
	CondMI
	CondPL
	CondVS
	CondVC
	CondHI
	CondLS
	CondGE
	CondLT
	CondGT
	CondLE
	CondAL
	CondNV // the unconditional space in A32; UNPREDICTABLE in an IT block
)

var condNames = [16]string{"eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", "nv"}

func (c Cond) String() string {
	if c < 16 {
		return condNames[c]
	}
	return "Cond(" + strconv.Itoa(int(c)) + ")"
}

// decodeA32 decodes one A32 word: it looks it up in opcodes.A32 (generated
// from opcodes/spec/arm.spec) and fills Word, ArmOp, Branch, PCRel, Disp and
// Target. Every word is 4 bytes long; UNDEFINED words are reported with
// ErrInvalid and Len 4, a short input with ErrTruncated. It does not allocate
// unless it fails.
func decodeA32(inst *Inst, b []byte, addr uint64) error {
	*inst = Inst{Mode: ModeA32, Addr: addr}
	if len(b) < 4 {
		inst.Len = max(len(b), 1)
		copy(inst.Raw[:], b)
		return &DecodeError{Addr: addr, Len: inst.Len, Err: ErrTruncated, Why: "an A32 instruction is 4 bytes"}
	}
	inst.Len = 4
	copy(inst.Raw[:], b[:4])
	w := binary.LittleEndian.Uint32(b)
	inst.Word = w
	op := opcodes.A32.Lookup(w)
	if op == nil || op.Unallocated() {
		return &DecodeError{Addr: addr, Len: 4, Err: ErrInvalid, Why: "UNDEFINED A32 encoding"}
	}
	inst.ArmOp = op
	inst.Branch = op.Branch
	pc := addr + 8 // the A32 PC reads as the instruction's address + 8
	switch {
	case op.Branch.Relative(): // B, BL (cond 101x), BLX (1111 101H)
		off := sext(w&0xFFFFFF, 24) << 2
		if w>>28 == 15 {
			off |= int64(w>>23) & 2
		}
		inst.setTarget(pc, off, false)
	case op.Class == opcodes.ArmLoadStore && w>>16&15 == 15 && w>>25&7 == 2 && w>>21&1 == 0 && w>>24&1 == 1:
		// LDR/LDRB/STR/STRB (immediate, offset form) with Rn = PC: literal.
		off := int64(w & 0xFFF)
		if w>>23&1 == 0 {
			off = -off
		}
		inst.setTarget(pc, off, true)
	case op.Class == opcodes.ArmLoadStore && w>>16&15 == 15 && w>>25&7 == 0 && w>>22&1 == 1 && w>>4&9 == 9 && w>>24&1 == 1 && w>>21&1 == 0:
		// LDRH/LDRSB/LDRSH/LDRD (immediate, offset form) with Rn = PC.
		off := int64(w>>4&0xF0 | w&0xF)
		if w>>23&1 == 0 {
			off = -off
		}
		inst.setTarget(pc, off, true)
	case op.Class == opcodes.ArmDataImm && w>>16&15 == 15 && (w>>21&15 == 4 || w>>21&15 == 2):
		// ADD/SUB (immediate) with Rn = PC: ADR.
		off := int64(armExpandImm(w & 0xFFF))
		if w>>21&15 == 2 {
			off = -off
		}
		inst.setTarget(pc, off, true)
	case op.Class == opcodes.ArmLoadStore && op.Flags&opcodes.ArmSIMDReg != 0 && w>>16&15 == 15 && w>>24&15 == 13 && w>>21&1 == 0:
		// VLDR/VSTR with Rn = PC.
		off := int64(w&0xFF) << 2
		if w>>23&1 == 0 {
			off = -off
		}
		inst.setTarget(pc, off, true)
	}
	return nil
}

// setTarget records a PC-relative address: base + off. pcrel marks an
// address formed without branching (literal loads, ADR).
func (inst *Inst) setTarget(base uint64, off int64, pcrel bool) {
	inst.Disp = int64(base-inst.Addr) + off
	inst.Target = uint32Addr(base + uint64(off))
	inst.PCRel = pcrel
}

// uint32Addr wraps an address to 32 bits, as AArch32 address arithmetic does.
func uint32Addr(a uint64) uint64 { return a & 0xFFFFFFFF }

// armExpandImm is A32ExpandImm: an 8-bit value rotated right by twice the
// 4-bit rotation.
func armExpandImm(imm12 uint32) uint32 {
	v, r := imm12&0xFF, 2*(imm12>>8)
	return v>>r | v<<((32-r)&31)
}

// T32Len returns the length of the Thumb instruction starting with the
// halfword hw1: 4 when its top five bits are 11101, 11110 or 11111, else 2.
func T32Len(hw1 uint16) int {
	if hw1>>11 >= 0x1D {
		return 4
	}
	return 2
}

// decodeT32 decodes one Thumb instruction (T16 or T32) from opcodes.T32
// (generated from opcodes/spec/thumb.spec). The length comes from the first
// halfword alone (T32Len), so it is right even for UNDEFINED encodings, which
// are reported with ErrInvalid and that length. Word holds a T16 halfword in
// bits 15..0 and a T32 instruction's first halfword in bits 31..16. Decoding
// is stateless: whether the instruction is conditional because of an IT block
// is for the caller to track (ITState).
func decodeT32(inst *Inst, b []byte, addr uint64) error {
	*inst = Inst{Mode: ModeT32, Addr: addr}
	if len(b) < 2 {
		inst.Len = max(len(b), 1)
		copy(inst.Raw[:], b)
		return &DecodeError{Addr: addr, Len: inst.Len, Err: ErrTruncated, Why: "a Thumb instruction is 2 or 4 bytes"}
	}
	hw1 := binary.LittleEndian.Uint16(b)
	n := T32Len(hw1)
	if len(b) < n {
		inst.Len = len(b)
		copy(inst.Raw[:], b)
		return &DecodeError{Addr: addr, Len: inst.Len, Err: ErrTruncated, Why: "a 32-bit Thumb instruction needs a second halfword"}
	}
	inst.Len = n
	copy(inst.Raw[:], b[:n])
	w := uint32(hw1)
	if n == 4 {
		w = w<<16 | uint32(binary.LittleEndian.Uint16(b[2:]))
	}
	inst.Word = w
	op := opcodes.T32.Lookup(w)
	if op == nil || op.Unallocated() {
		return &DecodeError{Addr: addr, Len: n, Err: ErrInvalid, Why: "UNDEFINED Thumb encoding"}
	}
	inst.ArmOp = op
	inst.Branch = op.Branch
	if op.Flags&opcodes.ArmPCRel == 0 {
		return nil
	}
	pc := addr + 4 // the Thumb PC reads as the instruction's address + 4
	apc := pc &^ 3 // Align(PC, 4), the base of literal addresses
	if n == 2 {
		switch {
		case w>>12 == 0xD: // B<c>: imm8
			inst.setTarget(pc, sext(w&0xFF, 8)<<1, false)
		case w>>11 == 0x1C: // B: imm11
			inst.setTarget(pc, sext(w&0x7FF, 11)<<1, false)
		case w>>12 == 0xB: // CBZ, CBNZ: i:imm5:'0'
			inst.setTarget(pc, int64(w>>9&1<<6|w>>3&0x1F<<1), false)
		default: // LDR (literal), ADR: imm8:'00'
			inst.setTarget(apc, int64(w&0xFF)<<2, true)
		}
		return nil
	}
	switch {
	case w>>27 == 0x1E && w>>15&1 == 1: // B<c>.W, B.W, BL, BLX
		s := w >> 26 & 1
		j1, j2 := w>>13&1, w>>11&1
		if w>>12&5 == 0 { // B<c>.W: S:J2:J1:imm6:imm11:'0'
			imm := s<<20 | j2<<19 | j1<<18 | w>>16&0x3F<<12 | w&0x7FF<<1
			inst.setTarget(pc, sext(imm, 21), false)
			return nil
		}
		i1, i2 := ^(j1^s)&1, ^(j2^s)&1
		imm := s<<24 | i1<<23 | i2<<22 | w>>16&0x3FF<<12 | w&0x7FF<<1
		off := sext(imm, 25)
		if w>>12&5 == 4 { // BLX: to ARM state, from Align(PC, 4)
			inst.setTarget(apc, off&^3, false)
			return nil
		}
		inst.setTarget(pc, off, false)
	case w>>27 == 0x1E: // ADDW/SUBW with Rn = PC (ADR.W): i:imm3:imm8
		off := int64(w>>26&1<<11 | w>>12&7<<8 | w&0xFF)
		if w>>21&0x1F == 0x15 {
			off = -off
		}
		inst.setTarget(apc, off, true)
	default: // LDR (literal) and PLD/PLI (literal): U, imm12
		off := int64(w & 0xFFF)
		if w>>23&1 == 0 {
			off = -off
		}
		inst.setTarget(apc, off, true)
	}
	return nil
}

// ARMCondition returns the condition an AArch32 instruction encodes itself:
// A32 bits 31..28 (CondNV for the unconditional space), the cond field of a
// Thumb B<c>; CondAL for any other Thumb instruction. The condition a Thumb
// instruction takes from an enclosing IT block comes from ITState.
func ARMCondition(inst *Inst) Cond {
	switch inst.Mode {
	case ModeA32:
		return Cond(inst.Word >> 28)
	case ModeT32:
		if inst.ArmOp == nil || inst.Branch != BranchJcc || inst.ArmOp.Name == "cbz" || inst.ArmOp.Name == "cbnz" {
			return CondAL
		}
		if inst.Len == 2 {
			return Cond(inst.Word >> 8 & 15)
		}
		return Cond(inst.Word >> 22 & 15)
	}
	return CondAL
}

// IsIT reports whether inst is a Thumb IT instruction (which makes the next
// one to four instructions conditional).
func IsIT(inst *Inst) bool {
	return inst.Mode == ModeT32 && inst.Len == 2 && inst.Word&0xFF00 == 0xBF00 && inst.Word&0xF != 0
}

// ITState tracks Thumb IT blocks through a linear sweep, the way objdump
// does. Decode is stateless, so a caller that walks Thumb code in order calls
// Next for every instruction (including ones that failed to decode, with
// inst.Len set) and learns whether, and under which condition, it executes
// conditionally. The zero value is "outside any IT block"; Reset returns to
// it (at a symbol start, or after a jump in the walk).
//
// The state is the Arm ARM's ITSTATE: bits 7..4 the condition of the next
// instruction, bits 3..0 the remaining mask. An IT instruction met inside a
// block (UNPREDICTABLE) starts a new block, as objdump assumes.
type ITState struct {
	it uint8
}

// Reset leaves any IT block.
func (s *ITState) Reset() { s.it = 0 }

// InBlock reports whether the next instruction is inside an IT block.
func (s *ITState) InBlock() bool { return s.it&0xF != 0 }

// Next returns the IT condition of inst (ok is false outside an IT block) and
// advances the state past inst; an IT instruction opens a new block for the
// instructions after it.
func (s *ITState) Next(inst *Inst) (cond Cond, ok bool) {
	if s.it&0xF != 0 {
		cond, ok = Cond(s.it>>4), true
		if s.it&7 == 0 {
			s.it = 0
		} else {
			s.it = s.it&0xE0 | s.it<<1&0x1F
		}
	}
	if IsIT(inst) {
		s.it = uint8(inst.Word)
	}
	return cond, ok
}

// itMnemonic names an IT instruction: "it" and a 't' or 'e' for each further
// instruction of the block.
func itMnemonic(w uint32) string {
	first, mask := w>>4&1, w&15
	s := "it"
	for i := 3; i >= 0 && mask&(1<<i-1) != 0; i-- {
		if mask>>i&1 == first {
			s += "t"
		} else {
			s += "e"
		}
	}
	return s
}

// notInIT names the Thumb instructions that are never conditional: inside an
// IT block (where they are UNPREDICTABLE, or ignore the condition) objdump
// prints them without one.
var notInIT = map[string]bool{"bkpt": true, "hlt": true, "cbz": true, "cbnz": true, "setend": true,
	"cpsie": true, "cpsid": true, "cpsie.w": true, "cpsid.w": true, "cps": true, "setpan": true,
	"ssbb": true, "pssbb": true, "sb": true, "csdb": true, "esb": true, "vins.f16": true,
	"crc32b": true, "crc32h": true, "crc32w": true, "crc32cb": true, "crc32ch": true, "crc32cw": true}

// ARMMnemonic returns the mnemonic of an A32 or Thumb instruction as GNU
// objdump prints it: the table name with the condition inserted before the
// first '.' ("addeq", "beq.n", "addne.w"). For Thumb, itCond and inIT give the
// condition of an enclosing IT block (from ITState.Next; inIT false outside
// one): inside a block the condition is printed even when it is AL, and T16
// instructions that set the flags only outside IT blocks drop their "s".
// It returns "" when inst was not decoded.
func ARMMnemonic(inst *Inst, itCond Cond, inIT bool) string {
	op := inst.ArmOp
	if op == nil {
		return ""
	}
	name := op.Name
	if inst.Mode == ModeT32 && op.Name == "it" && inst.Len == 2 {
		return itMnemonic(inst.Word) // never conditional
	}
	suffix := ""
	switch {
	case inst.Mode == ModeT32 && inIT && op.Branch == BranchJcc && name != "cbz" && name != "cbnz":
		// B<c> carries its own condition, in an IT block too.
		if c := ARMCondition(inst); c < CondAL {
			suffix = condNames[c]
		}
	case inst.Mode == ModeT32 && inIT && notInIT[name]:
		// never conditional; objdump prints no condition
	case inst.Mode == ModeT32 && inIT:
		if op.Flags&opcodes.ArmITFlags != 0 && strings.HasSuffix(name, "s") {
			name = name[:len(name)-1]
		}
		suffix = condNames[itCond]
		if itCond == CondNV {
			suffix = "<und>"
		}
	case inst.Mode == ModeA32 && name == "sevl":
		// objdump prints SEVL without its condition
	default:
		if c := ARMCondition(inst); c < CondAL {
			suffix = condNames[c]
		}
	}
	if suffix == "" {
		return name
	}
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i] + suffix + name[i:]
	}
	return name + suffix
}

// formatARM32 is Format for ModeA32 and ModeT32 (as if outside any IT block;
// see ARMFormatIT). It renders the mnemonic from the encoding table; A32
// operands come from golang.org/x/arch/arm/armasm in GNU syntax where armasm
// decodes the word to the same instruction, branch and literal targets are
// absolute addresses, and anything else gets its raw encoding, so nothing is
// lost.
func formatARM32(inst *Inst, symname func(uint64) (string, uint64)) string {
	return ARMFormatIT(inst, CondAL, false, symname)
}

// ARMFormatIT is Format for an A32 or Thumb instruction with the IT-block
// condition from ITState.Next.
func ARMFormatIT(inst *Inst, itCond Cond, inIT bool, symname func(uint64) (string, uint64)) string {
	mn := ARMMnemonic(inst, itCond, inIT)
	if mn == "" {
		return "(bad)"
	}
	switch {
	case inst.Branch.Relative():
		return mn + "\t" + a64Addr(inst.Target, symname)
	case inst.Mode == ModeA32:
		if xi, err := armasm.Decode(inst.Raw[:4], armasm.ModeARM); err == nil {
			text := armasm.GNUSyntax(xi)
			if i := strings.IndexByte(text, ' '); i > 0 && strings.TrimSuffix(text[:i], ".w") == mn {
				s := mn + "\t" + strings.TrimSpace(text[i+1:])
				if inst.PCRel {
					s += "\t@ " + a64Addr(inst.Target, symname)
				}
				return s
			}
		}
	}
	if inst.Mode == ModeT32 {
		if ops := thumbOperands(inst); ops != "" {
			if inst.PCRel {
				ops += "\t@ " + a64Addr(inst.Target, symname)
			}
			return mn + "\t" + ops
		}
	}
	s := mn + "\t.inst 0x" + strconv.FormatUint(uint64(inst.Word), 16)
	if inst.PCRel {
		s += "\t@ " + a64Addr(inst.Target, symname)
	}
	return s
}

var armRegNames = [16]string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "sl", "fp", "ip", "sp", "lr", "pc"}

// armRegList renders a register-list bit mask as objdump does: {r4, r5, lr}.
func armRegList(mask uint32) string {
	s := "{"
	for i := 0; i < 16; i++ {
		if mask>>i&1 != 0 {
			if len(s) > 1 {
				s += ", "
			}
			s += armRegNames[i]
		}
	}
	return s + "}"
}

// thumbOperands renders the operands of the common Thumb encodings (the
// forms compilers emit in kernel and user code), or "" for the rest.
func thumbOperands(inst *Inst) string {
	w := inst.Word
	r := func(n uint32) string { return armRegNames[n&15] }
	l := func(n uint32) string { return armRegNames[n&7] } // T16 low registers
	imm := func(v uint32) string { return "#" + strconv.FormatUint(uint64(v), 10) }
	if inst.Len == 2 {
		switch {
		case w>>11 <= 2: // LSL/LSR/ASR (immediate), MOVS
			if w>>6&0x1F == 0 && w>>11 == 0 {
				return l(w) + ", " + l(w>>3)
			}
			return l(w) + ", " + l(w>>3) + ", " + imm(w>>6&0x1F)
		case w>>11 == 3: // ADD/SUB register or imm3
			if w>>10&1 == 1 {
				return l(w) + ", " + l(w>>3) + ", " + imm(w>>6&7)
			}
			return l(w) + ", " + l(w>>3) + ", " + l(w>>6)
		case w>>13 == 1: // MOV/CMP/ADD/SUB imm8
			return l(w>>8) + ", " + imm(w&0xFF)
		case w>>10 == 0x10: // data processing (register)
			return l(w) + ", " + l(w>>3)
		case w>>8 == 0x46 || w>>8 == 0x44 || w>>8 == 0x45: // MOV/ADD/CMP high registers
			return r(w>>4&8|w&7) + ", " + r(w>>3)
		case w>>8 == 0x47: // BX, BLX
			return r(w >> 3)
		case w>>12 == 5: // LDR/STR (register)
			return l(w) + ", [" + l(w>>3) + ", " + l(w>>6) + "]"
		case w>>13 == 3 || w>>12 == 8: // LDR/STR(B/H) (immediate)
			sc := uint32(4)
			if w>>12 == 7 {
				sc = 1
			} else if w>>12 == 8 {
				sc = 2
			}
			return l(w) + ", [" + l(w>>3) + ", " + imm((w>>6&0x1F)*sc) + "]"
		case w>>11 == 9: // LDR (literal): the word at Align(PC, 4) + imm8*4
			return l(w>>8) + ", [pc, " + imm((w&0xFF)*4) + "]"
		case w>>11 == 0x14: // ADR, as objdump prints it
			return l(w>>8) + ", pc, " + imm((w&0xFF)*4)
		case w>>12 == 9: // LDR/STR SP-relative
			return l(w>>8) + ", [sp, " + imm((w&0xFF)*4) + "]"
		case w>>11 == 0x15: // ADD Rd, SP, #imm
			return l(w>>8) + ", sp, " + imm((w&0xFF)*4)
		case w>>8 == 0xB0: // ADD/SUB SP, #imm
			return "sp, " + imm((w&0x7F)*4)
		case w>>9 == 0x5A: // PUSH
			return armRegList(w&0xFF | w>>8&1<<14)
		case w>>9 == 0x5E: // POP
			return armRegList(w&0xFF | w>>8&1<<15)
		case w>>12 == 0xC: // STMIA/LDMIA
			wb := "!"
			if w>>11&1 == 1 && w&(1<<(w>>8&7)) != 0 {
				wb = ""
			}
			return l(w>>8) + wb + ", " + armRegList(w&0xFF)
		case w>>8 == 0xBE: // BKPT
			return "0x" + strconv.FormatUint(uint64(w&0xFF), 16)
		case w>>8 == 0xBF && w&0xF != 0: // IT
			return condNames[w>>4&15]
		case w>>8 == 0xDF || w>>8 == 0xDE: // SVC, UDF
			return imm(w & 0xFF)
		}
		return ""
	}
	switch {
	case (w>>23 == 0x1D1 || w>>23 == 0x1D2) && w>>22&1 == 0: // LDM/STM (IA, DB)
		wb := ""
		if w>>21&1 == 1 {
			wb = "!"
		}
		return r(w>>16) + wb + ", " + armRegList(w&0xFFFF)
	case w>>25 == 0x7C && w>>23&1 == 1 && w>>16&15 != 15: // LDR/STR (imm12)
		return r(w>>12) + ", [" + r(w>>16) + ", " + imm(w&0xFFF) + "]"
	case w>>27 == 0x1E && w>>15&1 == 0 && w>>20&0x37 == 0x24: // MOVW, MOVT
		return r(w>>8) + ", " + imm(w>>16&15<<12|w>>26&1<<11|w>>12&7<<8|w&0xFF)
	}
	return ""
}
