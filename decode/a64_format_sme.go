package decode

import (
	"strconv"
	"strings"
)

// SME operand rendering (class opcodes.ArmSME, opcodes/spec/arm64-sme.spec),
// in GNU objdump's syntax: golang.org/x/arch's arm64asm knows no SME. The
// fields are read where the Arm ARM's SME encodings put them; the encoding
// table has already told which encoding the word is, so only the operand
// layout is decided here.

// a64SMEElem names the element sizes by log2 of their bytes.
var a64SMEElem = [5]string{"b", "h", "s", "d", "q"}

// a64SMEOperands renders the operands of an SME instruction (its mnemonic is
// name); an encoding it does not know keeps the raw word.
func a64SMEOperands(inst *Inst, name string) string {
	w := inst.Word
	u := func(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
	switch {
	case w>>29 == 4 || w>>29 == 5: // FMOPA ... UMOPS, 10x0000x: outer products
		// bit 22 selects 64-bit tiles (ZAda:3) over 32-bit ones (ZAda:2); the
		// source elements are the tile's, or narrower for the widening forms.
		tile, src, zaBits := "s", "s", uint32(2)
		switch {
		case w>>29 == 5 && w>>22&1 == 1: // integer, 16-bit into 64-bit
			tile, src, zaBits = "d", "h", 3
		case w>>29 == 5: // integer, 8-bit into 32-bit
			src = "b"
		case w>>24&1 == 1: // BFMOPA, FMOPA widening: half precision into single
			src = "h"
		case w>>22&1 == 1: // FMOPA double
			tile, src, zaBits = "d", "d", 3
		}
		return " za" + u(w&(1<<zaBits-1)) + "." + tile + ", p" + u(w>>10&7) + "/m, p" + u(w>>13&7) + "/m, z" +
			u(w>>5&31) + "." + src + ", z" + u(w>>16&31) + "." + src
	case w>>24 == 0xC0 && w>>17&0x1F == 0x08: // ADDHA, ADDVA
		t, zaBits := "s", uint32(2)
		if w>>22&1 == 1 {
			t, zaBits = "d", 3
		}
		return " za" + u(w&(1<<zaBits-1)) + "." + t + ", p" + u(w>>10&7) + "/m, p" + u(w>>13&7) + "/m, z" + u(w>>5&31) + "." + t
	case w>>24 == 0xC0 && w>>17&0x1F <= 1: // MOVA (vector to tile, tile to vector)
		k := w >> 22 & 3 // log2 of the element bytes; the 128-bit form is size 11 with Q
		if w>>16&1 == 1 {
			k = 4
		}
		t := a64SMEElem[k]
		if w>>17&1 == 0 { // vector to tile: Zn 9..5, ZAd:offset 3..0
			return " " + a64SMESlice(w&15, k, w) + ", p" + u(w>>10&7) + "/m, z" + u(w>>5&31) + "." + t
		}
		return " z" + u(w&31) + "." + t + ", p" + u(w>>10&7) + "/m, " + a64SMESlice(w>>5&15, k, w)
	case w>>24 == 0xC0 && name == "zero":
		return " {" + a64SMEZeroList(w&0xFF) + "}"
	case w>>25 == 0x70 && name != "ldr" && name != "str": // LD1B ... ST1Q
		k := w >> 22 & 3
		if w>>24&1 == 1 {
			k = 4
		}
		pg := ", p" + u(w>>10&7)
		if w>>21&1 == 0 {
			pg += "/z"
		}
		s := " {" + a64SMESlice(w&15, k, w) + "}" + pg + ", [" + a64Reg(w>>5&31, true, true) + ", " + a64Reg(w>>16&31, true, false)
		if k > 0 {
			s += ", lsl #" + u(k)
		}
		return s + "]"
	case w>>25 == 0x70: // LDR, STR (ZA array vector)
		off := u(w & 15)
		s := " za[w" + u(12+w>>13&3) + ", " + off + "], [" + a64Reg(w>>5&31, true, true)
		if w&15 != 0 {
			s += ", #" + off + ", mul vl"
		}
		return s + "]"
	}
	return " .inst 0x" + strconv.FormatUint(uint64(w), 16)
}

// a64SMESlice renders a ZA tile slice "za<t><h|v>.<T>[w<s>, <off>]": field is
// the 4-bit ZA tile and slice offset field, whose top k bits are the tile
// (k = log2 of the element bytes); V is bit 15 and Rs (w12-w15) bits 14..13.
func a64SMESlice(field, k, w uint32) string {
	hv := "h"
	if w>>15&1 == 1 {
		hv = "v"
	}
	tile, off := field>>(4-k), field&(1<<(4-k)-1)
	return "za" + strconv.Itoa(int(tile)) + hv + "." + a64SMEElem[k] + "[w" + strconv.Itoa(int(12+w>>13&3)) + ", " + strconv.Itoa(int(off)) + "]"
}

// a64SMEZeroList renders ZERO's tile mask (one bit per 64-bit tile ZA0.D-ZA7.D)
// as the fewest tiles, largest first, the way objdump does: "za" for all of
// them, then the 16-bit tiles (every other 64-bit tile), the 32-bit tiles
// (every fourth), and the 64-bit tiles left over.
func a64SMEZeroList(mask uint32) string {
	if mask == 0xFF {
		return "za"
	}
	var tiles []string
	for _, g := range []struct {
		t    string
		base uint32 // the 64-bit tiles of tile 0 of this size
		n    uint32 // tiles of this size
	}{{"h", 0x55, 2}, {"s", 0x11, 4}, {"d", 0x01, 8}} {
		for i := uint32(0); i < g.n; i++ {
			if m := g.base << i; mask&m == m {
				tiles = append(tiles, "za"+strconv.Itoa(int(i))+"."+g.t)
				mask &^= m
			}
		}
	}
	return strings.Join(tiles, ", ")
}
