package kimage

import (
	"debug/elf"
	"sort"

	"github.com/kboost/kboost/decode"
)

// An EM_ARM ELF section holds ARM code, Thumb code and data side by side.
// Which is where follows GNU objdump (binutils 2.40, opcodes/arm-dis.c):
//
//   - When the file has mapping symbols ($a ARM, $t Thumb, $d data, each
//     optionally followed by ".anything"), the last one at or before an
//     address in the same section decides.
//   - Where none does (a stripped file has none at all), the symbol the
//     address's block starts at (the last other symbol at or before it, in
//     the section) decides: Thumb when it is a function with the low bit of
//     its value set (or STT_ARM_TFUNC, STT_ARM_16BIT), else ARM; before the
//     section's first symbol, ARM.
//
// The ELF symbol values of Thumb functions have bit 0 set; the SymTab holds
// them with it cleared (the address of the first instruction), and the
// mapping symbols are not in it.

const (
	sttARMTFunc = elf.SymType(13) // STT_ARM_TFUNC (old toolchains)
	sttARM16Bit = elf.SymType(15) // STT_ARM_16BIT
)

// MappingSymbol reports whether name is an ARM ELF mapping symbol and which
// ('a', 't' or 'd').
func MappingSymbol(name string) (kind byte, ok bool) {
	if len(name) < 2 || name[0] != '$' || (len(name) > 2 && name[2] != '.') {
		return 0, false
	}
	switch name[1] {
	case 'a', 't', 'd':
		return name[1], true
	}
	return 0, false
}

// armThumbSym reports whether an EM_ARM symbol marks Thumb code.
func armThumbSym(s elf.Symbol) bool {
	switch elf.ST_TYPE(s.Info) {
	case elf.STT_FUNC, elf.STT_GNU_IFUNC:
		return s.Value&1 == 1
	case sttARMTFunc, sttARM16Bit:
		return true
	}
	return false
}

// armSym is one symbol of a section as ARMSpans sees it.
type armSym struct {
	addr  uint64
	kind  byte // 'a', 't', 'd' for mapping symbols; 0 for others
	thumb bool // others: marks Thumb code
}

// ARMSpans returns the instruction-set spans of one section of an EM_ARM
// file from its symbols (ELF values, Thumb bit included; symbols of other
// sections ignored by the caller), covering [secAddr, secAddr+size) from
// secAddr. (objdump treats a section without mapping symbols differently
// when other sections have some only for data sections, which hold no
// code.) Adjacent spans of one instruction set are merged, adjacent data
// spans not (objdump prints no data piece across a mapping symbol).
func ARMSpans(secAddr, size uint64, syms []elf.Symbol) []decode.Span {
	var ms, others []armSym
	for _, s := range syms {
		k, isMap := MappingSymbol(s.Name)
		a := s.Value
		if !isMap && armThumbSym(s) {
			a &^= 1
		}
		if a < secAddr || a-secAddr >= size {
			continue
		}
		if isMap {
			ms = append(ms, armSym{addr: a, kind: k})
		} else {
			others = append(others, armSym{addr: a, thumb: armThumbSym(s)})
		}
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].addr < ms[j].addr })
	sort.SliceStable(others, func(i, j int) bool { return others[i].addr < others[j].addr })
	// Aliases at one address: a Thumb one marks the block Thumb.
	blocks := others[:0]
	for _, o := range others {
		if n := len(blocks); n > 0 && blocks[n-1].addr == o.addr {
			blocks[n-1].thumb = blocks[n-1].thumb || o.thumb
			continue
		}
		blocks = append(blocks, o)
	}
	var out []decode.Span
	add := func(at uint64, a *decode.Arch) {
		if n := len(out); n > 0 && out[n-1].Start == at {
			out = out[:n-1] // a later symbol at the same address decides
		}
		if n := len(out); n > 0 && out[n-1].Arch == a && a != nil {
			return // data spans stay apart: objdump cuts data at every symbol
		}
		out = append(out, decode.Span{Start: at, Arch: a})
	}
	// Before the first mapping symbol (or everywhere without one), the
	// block symbols decide.
	fallbackEnd := secAddr + size
	if len(ms) > 0 {
		fallbackEnd = ms[0].addr
	}
	add(secAddr, decode.ARM)
	for _, b := range blocks {
		if b.addr >= fallbackEnd {
			break
		}
		add(b.addr, blockArch(b.thumb))
	}
	for _, m := range ms {
		switch m.kind {
		case 'a':
			add(m.addr, decode.ARM)
		case 't':
			add(m.addr, decode.Thumb)
		default:
			add(m.addr, nil)
		}
	}
	return out
}

func blockArch(thumb bool) *decode.Arch {
	if thumb {
		return decode.Thumb
	}
	return decode.ARM
}

// setARMSpans fills the Spans of every executable section of an EM_ARM file
// from its symbol table (.symtab, else .dynsym).
func (f *File) setARMSpans(ef *elf.File) {
	ss, err := ef.Symbols()
	if err != nil || len(ss) == 0 {
		ss, _ = ef.DynamicSymbols()
	}
	bySec := map[elf.SectionIndex][]elf.Symbol{}
	for _, s := range ss {
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_SECTION, elf.STT_FILE:
			continue
		}
		if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		bySec[s.Section] = append(bySec[s.Section], s)
	}
	k := 0
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_NULL {
			continue
		}
		sec := &f.Sections[k]
		k++
		if sec.Exec {
			sec.Spans = ARMSpans(sec.Addr, sec.Size, bySec[elf.SectionIndex(i)])
		}
	}
}

// CodeSpans returns the instruction-set spans of sec: for an EM_ARM file
// those its mapping symbols (or function symbols) give, else one span of
// the file's Arch from the section's start.
func (f *File) CodeSpans(sec Section) []decode.Span {
	if sec.Spans != nil {
		return sec.Spans
	}
	return []decode.Span{{Start: sec.Addr, Arch: f.Arch}}
}

// ArchAt returns the instruction set of the code at addr (nil: data or no
// code), by CodeSpans of the section holding it.
func (f *File) ArchAt(addr uint64) *decode.Arch {
	sec, ok := f.SectionAt(addr)
	if !ok || !sec.Exec {
		return nil
	}
	spans := f.CodeSpans(sec)
	i := sort.Search(len(spans), func(i int) bool { return spans[i].Start > addr })
	if i == 0 {
		return nil
	}
	return spans[i-1].Arch
}
