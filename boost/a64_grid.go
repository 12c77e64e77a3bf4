package boost

import (
	"encoding/binary"
	"fmt"
	"math/rand"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/opcodes"
)

// The ARM encoding spaces drawn by `kboost opcodes --arch arm64|arm|thumb`:
// an ArmGridLayout says which word bits pick the row and the column of a cell
// (A64: the Arm ARM's top-level op0, bits 28..25, by bits 31..29 and 24..23;
// A32: unconditional or not and op0, bits 27..25, by bits 24..20; Thumb: T16
// by bits 15..12 and T32 by op1 and hw1 bits 10..9). Each
// encoding of the layout's table is classified on sample words that the
// table decodes as that encoding, cell by cell.

// ArmGridLayout is how one ARM instruction set is drawn.
type ArmGridLayout struct {
	Name  string            // the architecture, as decode names it
	Table *opcodes.ArmTable // the encodings
	Mode  decode.Mode       // how words are classified
	Rows  int               // at most 32
	Cols  int               // 32: 8 groups of 4
	// RowLabels and RowNames label the rows and RowBits says what picks
	// them; ColHi and ColLo name the bits of the column's group (its upper 3
	// bits) and of its place in the group.
	RowLabels, RowNames []string
	RowBits, ColHi      string
	ColLo               string
	// CellOf returns the cell of the word w.
	CellOf func(w uint32) (row, col int)

	cellBits   func(row int) uint32       // the bits cellWord fixes in the row
	cellWord   func(row, col int) uint32  // the bits of a word in the cell
	pivots     func() []a64Enc            // the kernel's decision points
	vary       func(w, rnd uint32) uint32 // varies a random sample within its cell
	bytes      func(w uint32) []byte      // the word in memory (default: little-endian)
	kernelAddr uint64                     // probed address (kprobes)
	kernelSlot uint64
}

// A64Rows and A64Cols are the dimensions of the A64 grid.
const (
	A64Rows = 16
	A64Cols = 32
)

// A64CellOf returns the row (op0, bits 28..25) and column (bits 31..29 then
// 24..23) of the word w in the A64 grid.
func A64CellOf(w uint32) (row, col int) {
	return int(w >> 25 & 15), int(w>>29&7)<<2 | int(w>>23&3)
}

// A64Op0Names names the top-level op0 groups (bits 28..25) of the Arm ARM.
var A64Op0Names = []string{
	"reserved / SME", "unallocated", "SVE", "unallocated",
	"loads and stores", "data processing (register)", "loads and stores", "data processing (SIMD&FP)",
	"data processing (immediate)", "data processing (immediate)", "branch, exception, system", "branch, exception, system",
	"loads and stores", "data processing (register)", "loads and stores", "data processing (SIMD&FP)",
}

// A64GridLayout draws A64.
var A64GridLayout = &ArmGridLayout{
	Name: "arm64", Table: opcodes.A64, Mode: decode.ModeA64, Rows: A64Rows, Cols: A64Cols,
	RowLabels: binLabels(16, 4), RowNames: A64Op0Names,
	RowBits: "op0 = bits 28..25", ColHi: "31..29", ColLo: "24..23",
	CellOf:   A64CellOf,
	cellBits: func(int) uint32 { return 0xf<<25 | 7<<29 | 3<<23 },
	cellWord: func(row, col int) uint32 {
		return uint32(row)<<25 | uint32(col>>2)<<29 | uint32(col&3)<<23
	},
	pivots:     func() []a64Enc { return a64GridPivots },
	kernelAddr: 0xffff800008010000, kernelSlot: 0xffff800008000000,
}

func binLabels(n, width int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprintf("%0*b", width, i)
	}
	return l
}

// ArmGridEnc is one encoding of a table under a policy.
type ArmGridEnc struct {
	Index int              // into opcodes.A64.Ops
	Op    *opcodes.ArmOp   // the encoding
	Words int              // sample words classified (0: no word decodes as it)
	Count [numVerdicts]int // sample words per verdict
	// Verdict is the most frequent verdict over the samples; Mixed is set when
	// the samples disagree (the verdict depends on operand fields).
	Verdict Verdict
	Mixed   bool
	// Word is a sample word with the encoding's Verdict and Decision its
	// decision (the deciding rules are in Decision.Reasons).
	Word     uint32
	Decision Decision
}

// ArmGridCell summarizes the encodings that have words in one cell of the grid.
type ArmGridCell struct {
	Row, Col int
	// Encs are the allocated encodings with sample words in the cell
	// (indexes into A64Grid.Encs), in table order.
	Encs []int
	// Count counts the encodings of Encs per verdict of their samples in this
	// cell (an encoding with mixed samples counts once per verdict seen).
	Count [numVerdicts]int
	// Major counts the encodings of Encs by the verdict of most of their
	// sample words in this cell.
	Major [numVerdicts]int
	// Undefined: words of the cell decode as unallocated carve-outs.
	Undefined bool
}

// Code is the one-letter summary of a cell: the verdict's letter (B boost,
// S singlestep, E emulate, X reject, F ftrace) when every sample of every
// encoding of the cell has it; when they differ, the lower-case letter of the
// verdict most encodings of the cell mostly get (Major); "." when the cell
// holds no allocated encoding.
func (c *ArmGridCell) Code() string {
	n, best, kinds := 0, Verdict(0), 0
	for v, k := range c.Count {
		if k == 0 {
			continue
		}
		kinds++
		if c.Major[v] > n {
			n, best = c.Major[v], Verdict(v)
		}
	}
	if kinds == 0 {
		return "."
	}
	l := VerdictLetter(best)
	if kinds > 1 {
		return string(l[0] + 'a' - 'A')
	}
	return l
}

// VerdictLetter is the letter the opcode grids draw for a verdict.
func VerdictLetter(v Verdict) string {
	switch v {
	case Boost:
		return "B"
	case SingleStep:
		return "S"
	case Emulate:
		return "E"
	case Ftrace:
		return "F"
	}
	return "X"
}

// ArmGridClass counts the encodings of one ArmClass by verdict.
type ArmGridClass struct {
	Class opcodes.ArmClass
	Count [numVerdicts]int
	Mixed int // encodings whose samples disagree (counted under their Verdict)
	Encs  []int
}

// ArmGrid is an ARM encoding space under one policy. Cells beyond the
// layout's Rows and Cols are empty.
type ArmGrid struct {
	Policy *Policy
	Layout *ArmGridLayout
	Addr   uint64 // the probed address the words were classified at
	Encs   []ArmGridEnc
	Cells  [32][32]ArmGridCell
	// Classes sums the allocated encodings per class (index: ArmClass).
	Classes [opcodes.NumArmClasses]ArmGridClass
}

// EncOf returns the encoding the grid has for the word w (nil when the table
// has none, or only an unallocated carve-out).
func (g *ArmGrid) EncOf(w uint32) *ArmGridEnc {
	op := g.Layout.Table.Lookup(w)
	if op == nil || op.Unallocated() {
		return nil
	}
	for i := range g.Encs {
		if g.Encs[i].Op == op {
			return &g.Encs[i]
		}
	}
	return nil
}

// a64GridSamples is the number of fills tried per encoding and cell: zeros,
// ones, and pseudo-random ones; then each pivot of the layout is tried three
// times.
const a64GridSamples = 16

// a64GridPivots are the kernel's own decision points (a64_insn.go): each
// encoding is also sampled with the pivot's bits where the pivot and the
// encoding agree, so that a verdict the kernel gives to one operand value
// (MRS of DAIF) or to a sub-space the spec does not split (LDR literal,
// exclusives) shows.
var a64GridPivots = []a64Enc{
	a64ADR, a64ADRP, a64PRFMLit, a64LDRLit, a64LDRSWLit, a64Exclusive, a64LoadEx, a64StoreEx,
	a64B, a64BL, a64CBZ, a64CBNZ, a64TBZ, a64TBNZ, a64Bcond, a64Exception, a64Hint,
	a64BR, a64BRAuth, a64BLR, a64BLRAuth, a64RET, a64RETAuth, a64ERET, a64ERETAuth,
	a64MRS, a64MSRImm, a64MSRReg,
	{0xFFFFFFE0, a64MRS.val | a64SpclDAIF<<5}, // MRS Xt, DAIF
}

// A64Grid is ArmGrid(A64GridLayout).
func (p *Policy) A64Grid() *ArmGrid { return p.ArmGrid(A64GridLayout) }

// ArmGrid classifies every encoding of the layout's table under the policy
// (which must model the layout's Mode) with GridEnv at a kernel text address
// (a user address for uprobes-arm64) and the slot within branch range. Each
// encoding gets, for every cell its fixed bits allow, its value with the free
// bits zero, all ones, a few pseudo-random fills (the same on every run) and
// the kernel's decision points; the words the table decodes as another
// encoding are dropped.
func (p *Policy) ArmGrid(l *ArmGridLayout) *ArmGrid {
	env := p.GridEnv()
	addr := l.kernelAddr
	env.SlotAddr = l.kernelSlot
	if p.user { // user space
		addr, env.SlotAddr = 0x400000, 0x7fff0000
	}
	g := &ArmGrid{Policy: p, Layout: l, Addr: addr}
	for c := range g.Classes {
		g.Classes[c].Class = opcodes.ArmClass(c)
	}
	for r := 0; r < l.Rows; r++ {
		for c := 0; c < l.Cols; c++ {
			g.Cells[r][c].Row, g.Cells[r][c].Col = r, c
		}
	}
	rng := rand.New(rand.NewSource(1))
	sc := new(scratch)
	var b [4]byte
	var d Decision
	t := l.Table
	var allPivots []a64Enc
	if l.pivots != nil {
		allPivots = l.pivots()
	}
	for i := range t.Ops {
		op := &t.Ops[i]
		free := ^op.Mask
		if op.Unallocated() {
			for cw := range l.cells(op) {
				if w := cw&^op.Mask | op.Value; t.Lookup(w) == op {
					r, c := l.CellOf(w)
					g.Cells[r][c].Undefined = true
				}
			}
			continue
		}
		e := ArmGridEnc{Index: i, Op: op}
		var first [numVerdicts]Decision
		var firstW [numVerdicts]uint32
		var seen [32][32][numVerdicts]int
		var pivots []a64Enc
		for _, pv := range allPivots {
			if (pv.val^op.Value)&pv.mask&op.Mask == 0 && pv.mask&free != 0 {
				pivots = append(pivots, pv)
			}
		}
		for cw, cellBits := range l.cells(op) {
			for s := 0; s < a64GridSamples+3*len(pivots); s++ {
				var fill uint32
				pvMask, pvVal := uint32(0), uint32(0)
				switch {
				case s == 0:
				case s == 1:
					fill = ^uint32(0)
				case s < a64GridSamples:
					fill = rng.Uint32()
				default:
					// Each pivot with the other free bits zero, then twice at random.
					k := s - a64GridSamples
					pv := pivots[k/3]
					pvMask, pvVal = pv.mask&free&^cellBits, pv.val
					if k%3 != 0 {
						fill = rng.Uint32()
					}
				}
				w := op.Value | fill&free&^cellBits&^pvMask | pvVal&pvMask | cw&free
				if l.vary != nil && fill != 0 && fill != ^uint32(0) {
					w = w&^free | l.vary(w, rng.Uint32())&free
				}
				if t.Lookup(w) != op {
					continue
				}
				mem := b[:]
				if l.bytes != nil {
					mem = l.bytes(w)
				} else {
					binary.LittleEndian.PutUint32(mem, w)
				}
				d.Reasons = d.Reasons[:0]
				p.runBytes(sc, &d, mem, l.Mode, addr, env, false)
				e.Words++
				e.Count[d.Verdict]++
				r, c := l.CellOf(w)
				seen[r][c][d.Verdict]++
				if e.Count[d.Verdict] == 1 {
					firstW[d.Verdict] = w
					first[d.Verdict] = d
					first[d.Verdict].Reasons = append([]Reason(nil), d.Reasons...)
				}
			}
		}
		kinds, most := 0, 0
		for v, k := range e.Count {
			if k > 0 {
				kinds++
			}
			if k > most {
				most, e.Verdict = k, Verdict(v)
			}
		}
		e.Mixed = kinds > 1
		e.Word, e.Decision = firstW[e.Verdict], first[e.Verdict]
		n := len(g.Encs)
		g.Encs = append(g.Encs, e)
		for r := range seen {
			for c := range seen[r] {
				most, major := 0, 0
				for v, k := range seen[r][c] {
					if k > 0 {
						g.Cells[r][c].Count[v]++
					}
					if k > most {
						most, major = k, v
					}
				}
				if most > 0 {
					g.Cells[r][c].Major[major]++
					g.Cells[r][c].Encs = append(g.Cells[r][c].Encs, n)
				}
			}
		}
		if e.Words > 0 {
			cs := &g.Classes[op.Class]
			cs.Count[e.Verdict]++
			cs.Encs = append(cs.Encs, n)
			if e.Mixed {
				cs.Mixed++
			}
		}
	}
	return g
}

// cells yields, for each cell the op's fixed bits allow, the cell bits of
// that cell (only the bits the op leaves free may differ from its value).
func (l *ArmGridLayout) cells(op *opcodes.ArmOp) func(yield func(cw, bits uint32) bool) {
	return func(yield func(uint32, uint32) bool) {
		for r := 0; r < l.Rows; r++ {
			bits := l.cellBits(r)
			for c := 0; c < l.Cols; c++ {
				cw := l.cellWord(r, c)
				if (cw^op.Value)&op.Mask&bits != 0 {
					continue
				}
				if !yield(cw, bits) {
					return
				}
			}
		}
	}
}
