package boost

import (
	"encoding/binary"
	"fmt"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/opcodes"
)

// The A32 and Thumb layouts of the ARM opcode grid; the grid itself
// (ArmGridLayout, ArmGrid) is in a64_grid.go.

// A32CellOf returns the cell of the A32 word w: row op0 (bits 27..25), plus 8
// when cond (bits 31..28) is 1111 (the unconditional space); column bits
// 24..20.
func A32CellOf(w uint32) (row, col int) {
	row = int(w >> 25 & 7)
	if w>>28 == 0xf {
		row += 8
	}
	return row, int(w >> 20 & 31)
}

// A32GridLayout draws A32 (ARM state). The conditional rows are sampled with
// cond = AL and, in random samples, any condition but 1111.
var A32GridLayout = &ArmGridLayout{
	Name: "arm", Table: opcodes.A32, Mode: decode.ModeA32, Rows: 16, Cols: 32,
	RowLabels: func() []string {
		l := binLabels(8, 3)
		for i := 0; i < 8; i++ {
			l[i] = "cond " + l[i]
			l = append(l, "1111 "+l[i][5:])
		}
		return l
	}(),
	RowNames: []string{
		"data processing (register), misc", "data processing (immediate)", "load/store (immediate)",
		"load/store (register), media", "block transfer", "branch, BL", "coprocessor", "coprocessor, SVC",
		"unconditional: CPS, SETEND, ...", "unconditional: Advanced SIMD", "unconditional: SIMD ld/st, PLD",
		"unconditional: PLD (register)", "unconditional: SRS, RFE", "unconditional: BLX (immediate)",
		"unconditional: coprocessor", "unconditional: coprocessor",
	},
	RowBits: "cond (31..28) not 1111 or 1111, op0 = bits 27..25", ColHi: "24..22", ColLo: "21..20",
	CellOf:   A32CellOf,
	cellBits: func(int) uint32 { return 0xfff00000 },
	cellWord: func(row, col int) uint32 {
		cond := uint32(0xe)
		if row >= 8 {
			cond = 0xf
		}
		return cond<<28 | uint32(row&7)<<25 | uint32(col)<<20
	},
	pivots: func() []a64Enc { return a32GridPivots(a32TopARM, a32StackARM) },
	vary: func(w, rnd uint32) uint32 { // any condition but 1111
		if w>>28 == 0xf {
			return w
		}
		return w&0x0fffffff | rnd%15<<28
	},
	kernelAddr: 0xc0100000, kernelSlot: 0xc0000000,
}

// T32CellOf returns the cell of the Thumb word w (a T16 halfword, or a T32
// instruction as hw1<<16 | hw2): T16 rows 0..13 are bits 15..12, row 14 the
// 11100 (B) space, columns bits 11..7; T32 rows 15..26 are op1 (bits 28..27,
// 01..11) by bits 26..25, columns bits 24..20 (hw1 bits 8..4).
func T32CellOf(w uint32) (row, col int) {
	if w < 0x10000 {
		return min(int(w>>12), 14), int(w >> 7 & 31)
	}
	op1 := max(int(w>>27&3), 1)
	return 15 + (op1-1)*4 + int(w>>25&3), int(w >> 20 & 31)
}

// ThumbGridLayout draws Thumb-2 (T16 and T32), probed outside IT blocks.
var ThumbGridLayout = &ArmGridLayout{
	Name: "thumb", Table: opcodes.T32, Mode: decode.ModeT32, Rows: 27, Cols: 32,
	RowLabels: func() []string {
		var l []string
		for _, b := range binLabels(14, 4) {
			l = append(l, "t16 "+b)
		}
		l = append(l, "t16 11100")
		for op1 := 1; op1 < 4; op1++ {
			for _, b := range binLabels(4, 2) {
				l = append(l, fmt.Sprintf("t32 %02b %s", op1, b))
			}
		}
		return l
	}(),
	RowNames: []string{
		"shift (immediate), add/sub", "shift (immediate)", "add/sub/cmp/mov (immediate)",
		"add/sub/cmp/mov (immediate)", "data processing, BX, LDR literal", "load/store (register)",
		"load/store word (immediate)", "load/store byte (immediate)", "load/store halfword (immediate)",
		"load/store SP-relative", "ADR, ADD SP", "misc: PUSH/POP, CBZ, IT, hints", "LDM, STM",
		"B<c>, SVC, UDF", "B",
		"LDM/STM, LDRD/STRD, exclusives, TBB", "data processing (shifted register)",
		"coprocessor, SIMD", "coprocessor, SIMD",
		"DP (modified immediate); branches, misc", "DP (plain immediate); branches, misc",
		"DP (modified immediate); branches, misc", "DP (plain immediate); branches, misc",
		"load/store single, SIMD ld/st", "data processing (register), multiply",
		"coprocessor, SIMD", "coprocessor, SIMD",
	},
	RowBits: "T16 bits 15..12; T32 (hw1:hw2) op1 = bits 28..27, then 26..25",
	ColHi:   "11..9|24..22", ColLo: "8..7|21..20",
	CellOf: T32CellOf,
	cellBits: func(row int) uint32 {
		if row < 15 {
			return 0xffff0000 | 0xff80
		}
		return 0xfff00000
	},
	cellWord: func(row, col int) uint32 {
		switch {
		case row < 14:
			return uint32(row)<<12 | uint32(col)<<7
		case row == 14:
			return 0xe000 | uint32(col)<<7
		}
		r := row - 15
		return 7<<29 | uint32(r/4+1)<<27 | uint32(r%4)<<25 | uint32(col)<<20
	},
	pivots: func() []a64Enc { return a32GridPivots(a32TopT32, a32TopT16, a32StackT32) },
	bytes: func(w uint32) []byte {
		if w < 0x10000 {
			return binary.LittleEndian.AppendUint16(make([]byte, 0, 4), uint16(w))
		}
		b := binary.LittleEndian.AppendUint16(make([]byte, 0, 4), uint16(w>>16))
		return binary.LittleEndian.AppendUint16(b, uint16(w))
	},
	kernelAddr: 0xc0100000, kernelSlot: 0xc0000000,
}

// a32GridPivots are the mask/value pairs of the kernel's decode tables
// (a32_decode.go), sub-tables included.
func a32GridPivots(ts ...*a32Table) []a64Enc {
	var out []a64Enc
	seen := map[*a32Table]bool{}
	var visit func(t *a32Table)
	visit = func(t *a32Table) {
		if t == nil || seen[t] {
			return
		}
		seen[t] = true
		for _, e := range t.e {
			out = append(out, a64Enc{e.mask, e.value})
			visit(e.sub)
		}
	}
	for _, t := range ts {
		visit(t)
	}
	return out
}
