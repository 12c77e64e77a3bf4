package opcodes

import "math/bits"

// The A64 encoding table (spec/arm64.spec, with its SVE and SME includes) and
// the A64 immediate decodings that its conditions (ArmCond.Holds) need. The
// table types, shared with A32 and T32, are in arm.go.

//go:generate go run ./gen -format arm -spec spec/arm64.spec -o a64_tables.go

// sveMoveMaskPreferred is the Arm ARM's SVEMoveMaskPreferred() on the decoded
// immediate: DUPM is disassembled as MOV unless DUP (immediate) could make the
// same vector (an 8-bit immediate, optionally shifted by 8, replicated in
// 16-, 32- or 64-bit elements).
func sveMoveMaskPreferred(imm uint64) bool {
	lo32, hi32 := imm&0xffffffff, imm>>32
	rep32 := lo32 == hi32
	rep16 := rep32 && imm&0xffff == imm>>16&0xffff
	zeroOrOnes := func(v uint64, bits uint) bool { return v == 0 || v == 1<<bits-1 }
	if imm&0xff != 0 {
		switch {
		case zeroOrOnes(imm>>7, 57),
			rep32 && zeroOrOnes(lo32>>7, 25),
			rep16 && zeroOrOnes(imm>>7&0x1ff, 9),
			rep16 && imm>>8&0xff == imm&0xff:
			return false
		}
		return true
	}
	switch {
	case zeroOrOnes(imm>>15, 49),
		rep32 && zeroOrOnes(lo32>>15, 17),
		rep16:
		return false
	}
	return true
}

// moveWideImm reports whether imm can be made by one MOVZ or MOVN.
func moveWideImm(imm uint64, sf bool) bool {
	width := 64
	if !sf {
		width = 32
		imm &= 0xffffffff
	}
	for s := 0; s < width; s += 16 {
		if imm&^(0xffff<<s) == 0 {
			return true
		}
		inv := ^imm
		if !sf {
			inv &= 0xffffffff
		}
		if inv&^(0xffff<<s) == 0 {
			return true
		}
	}
	return false
}

// A64BitMask decodes the logical-immediate fields N, immr, imms of an A64
// AND/ORR/EOR/ANDS (immediate) into the immediate (DecodeBitMasks in the Arm
// ARM). ok is false for the reserved encodings.
func A64BitMask(n, immr, imms uint32, sf bool) (imm uint64, ok bool) {
	if !sf && n != 0 {
		return 0, false
	}
	v := n<<6 | (^imms & 63)
	if v == 0 {
		return 0, false
	}
	length := bits.Len32(v) - 1
	if length < 1 {
		return 0, false
	}
	size := uint32(1) << length
	levels := size - 1
	s, r := imms&levels, immr&levels
	if s == levels {
		return 0, false
	}
	welem := uint64(1)<<(s+1) - 1
	// rotate right by r within size bits
	if r != 0 {
		welem = (welem>>r | welem<<(size-r)) & (uint64(1)<<size - 1)
	}
	width := uint32(64)
	if !sf {
		width = 32
	}
	for e := size; e < width; e *= 2 {
		welem |= welem << e
	}
	if !sf {
		welem &= 0xffffffff
	}
	return welem, true
}
