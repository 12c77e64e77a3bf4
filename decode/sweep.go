package decode

import (
	"errors"
	"sort"
)

// Sweep decodes code linearly, as `objdump -d` does: from addr (the address of
// code[0]) to the end, restarting at every address in starts (sorted symbol
// starts inside the range) even when the previous instruction overlaps it. A
// failed decode advances by the error's length. fn receives each instruction (valid
// until fn returns) and its error; returning false stops the sweep.
func Sweep(mode Mode, code []byte, addr uint64, starts []uint64, fn func(inst *Inst, err error) bool) {
	var inst Inst
	i := sort.Search(len(starts), func(k int) bool { return starts[k] > addr })
	off := uint64(0)
	end := uint64(len(code))
	for off < end {
		next := end
		if i < len(starts) && starts[i]-addr < end {
			next = starts[i] - addr
		}
		for off < next {
			err := DecodeInto(&inst, code[off:], mode, addr+off)
			if !fn(&inst, err) {
				return
			}
			n := uint64(inst.Len)
			if n == 0 {
				n = 1
			}
			off += n
		}
		if off > next && next < end {
			// The last instruction ran over a symbol start: restart there.
			off = next
		}
		for i < len(starts) && starts[i]-addr <= off {
			i++
		}
	}
}

// Span is a run of code in one instruction set, from Start up to the next
// Span's Start; a nil Arch marks data (an ARM file's $d mapping symbol).
// Spans of one code range are sorted by Start.
type Span struct {
	Start uint64
	Arch  *Arch
}

// ErrData is the error SweepSpans reports for bytes of a data span: Inst.Len
// and Inst.Raw hold them; they are not an instruction.
var ErrData = errors.New("data, not an instruction")

// SweepSpans is Sweep for code that changes instruction set at span starts
// (ARM and Thumb, with data in between), as objdump disassembles an ARM ELF
// section: at each address the span holding it picks the instruction set;
// an instruction that would cross the next address in starts (the symbols)
// or the end is truncated (ErrTruncated, as objdump reads no byte past
// them) and the sweep goes on there; one may run over a span start; bytes
// before the first span count as data. Data is reported with ErrData in pieces as objdump prints them: up to
// the next word boundary, never across a symbol or span start, and a piece
// of 3 bytes split into 1 or 2. fn gets the instruction set of each
// instruction (nil for data).
func SweepSpans(code []byte, addr uint64, starts []uint64, spans []Span, fn func(inst *Inst, arch *Arch, err error) bool) {
	var inst Inst
	end := addr + uint64(len(code))
	si := sort.Search(len(starts), func(k int) bool { return starts[k] > addr })
	sp := -1 // the span holding pc
	for pc := addr; pc < end; {
		for sp+1 < len(spans) && spans[sp+1].Start <= pc {
			sp++
		}
		for si < len(starts) && starts[si] <= pc {
			si++
		}
		limit := end // the next symbol start
		if si < len(starts) && starts[si] < end {
			limit = starts[si]
		}
		var arch *Arch
		if sp >= 0 {
			arch = spans[sp].Arch
		}
		if arch == nil {
			n := 4 - pc&3
			if sp+1 < len(spans) && spans[sp+1].Start-pc < n {
				n = spans[sp+1].Start - pc
			}
			if limit-pc < n {
				n = limit - pc
			}
			if n == 3 {
				n = 2 - pc&1
			}
			off := pc - addr
			inst = Inst{Addr: pc, Len: int(n)}
			copy(inst.Raw[:], code[off:off+n])
			if !fn(&inst, nil, ErrData) {
				return
			}
			pc += n
			continue
		}
		// As objdump, no instruction reads past the next symbol: one that
		// would is truncated (ErrTruncated) and the sweep goes on there.
		err := arch.Decode(&inst, code[pc-addr:limit-addr], pc)
		if !fn(&inst, arch, err) {
			return
		}
		n := uint64(inst.Len)
		if n == 0 {
			n = 1
		}
		pc = min(pc+n, limit)
	}
}
