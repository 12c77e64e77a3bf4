package cfi

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"

	"github.com/kboost/kboost/decode"
)

// 32-bit ARM: DWARF numbers r0-r15 as 0-15 (r13 sp, r11 the ARM-mode frame
// pointer, r14 the link register, r15 pc). ARM code unwinds by the ARM
// EHABI's exception index (.ARM.exidx, .ARM.extab), not .eh_frame (which
// Debian's armhf binaries carry empty): each entry's unwind instructions
// pop registers off a virtual stack pointer; the caller's pc is the r15
// they pop, else r14, a real register (LinkReg: a leaf's caller is in it).
func init() {
	arches[decode.ARM] = &Arch{SP: 13, FP: 11, PC: 15, Regs: 16, PtrSize: 4, LinkReg: true}
	elfReaders = append(elfReaders, exidxFromELF)
}

const (
	shtARMExidx    = elf.SectionType(0x70000001) // SHT_ARM_EXIDX
	exidxCantUnwin = 1                           // EXIDX_CANTUNWIND
	a32LR, a32PC   = 14, 15
)

// exidx is one file's exception index: entries sorted by function start
// (the linker's order, checked), each covering up to the next one.
type exidx struct {
	starts []uint64
	words  []uint32 // each entry's second word, resolved: see entry
	addrs  []uint64 // each entry's second word's own address
	extab  Section  // .ARM.extab, where entries point
}

// exidxFromELF reads f's .ARM.exidx, when f has one.
func exidxFromELF(f *elf.File) (*Table, bool, error) {
	if f.Machine != elf.EM_ARM { // the section type is x86-64's SHT_X86_64_UNWIND too
		return nil, false, nil
	}
	var ix *elf.Section
	for _, s := range f.Sections {
		if s.Type == shtARMExidx {
			ix = s
			break
		}
	}
	if ix == nil {
		return nil, false, nil
	}
	data, err := ix.Data()
	if err != nil {
		return nil, true, &FormatError{Section: ".ARM.exidx", What: err.Error()}
	}
	x := &exidx{}
	if tab := f.Section(".ARM.extab"); tab != nil && tab.Type != elf.SHT_NOBITS {
		if b, err := tab.Data(); err == nil {
			x.extab = Section{Data: b, Addr: tab.Addr}
		}
	}
	if len(data)%8 != 0 {
		return nil, true, &FormatError{Section: ".ARM.exidx", What: fmt.Sprintf("size %d, not a multiple of 8", len(data))}
	}
	for off := 0; off < len(data); off += 8 {
		at := ix.Addr + uint64(off)
		w0, w1 := binary.LittleEndian.Uint32(data[off:]), binary.LittleEndian.Uint32(data[off+4:])
		if w0&0x80000000 != 0 {
			return nil, true, &FormatError{Section: ".ARM.exidx", Off: off, What: "function offset with bit 31 set"}
		}
		start := prel31(at, w0)
		if n := len(x.starts); n > 0 && start < x.starts[n-1] {
			return nil, true, &FormatError{Section: ".ARM.exidx", Off: off, What: "entries not sorted"}
		}
		x.starts = append(x.starts, start)
		x.words = append(x.words, w1)
		x.addrs = append(x.addrs, at+4)
	}
	t := &Table{ptrSize: 4}
	t.step = x.step
	return t, true, nil
}

// prel31 resolves a place-relative 31-bit offset stored at addr.
func prel31(addr uint64, w uint32) uint64 {
	off := int64(int32(w<<1) >> 1)
	return uint64(int64(addr)+off) & 0xffffffff
}

// opcodes returns the unwind instructions of the entry covering at.
func (x *exidx) opcodes(at uint64) ([]byte, error) {
	i := sort.Search(len(x.starts), func(i int) bool { return x.starts[i] > at }) - 1
	if i < 0 {
		return nil, ErrNoFDE
	}
	w := x.words[i]
	switch {
	case w == exidxCantUnwin:
		return nil, nil
	case w&0x80000000 != 0: // inline compact entry: personality 0
		if w>>24 != 0x80 {
			return nil, errUnsupported(fmt.Sprintf("ARM exidx inline entry 0x%08x", w))
		}
		return []byte{byte(w >> 16), byte(w >> 8), byte(w)}, nil
	}
	addr := prel31(x.addrs[i], w)
	word := func(k uint64) (uint32, error) {
		a := addr + 4*k
		if a < x.extab.Addr || a+4 > x.extab.Addr+uint64(len(x.extab.Data)) {
			return 0, &FormatError{Section: ".ARM.extab", Off: int(a - x.extab.Addr), What: "entry outside the section"}
		}
		return binary.LittleEndian.Uint32(x.extab.Data[a-x.extab.Addr:]), nil
	}
	w, err := word(0)
	if err != nil {
		return nil, err
	}
	var ops []byte
	var more uint32
	var next uint64
	switch {
	case w>>28 == 0x8 && (w>>24)&0xf == 0: // compact, personality 0: three opcodes
		return []byte{byte(w >> 16), byte(w >> 8), byte(w)}, nil
	case w>>28 == 0x8 && ((w>>24)&0xf == 1 || (w>>24)&0xf == 2): // compact, personality 1 or 2
		more, ops, next = (w>>16)&0xff, []byte{byte(w >> 8), byte(w)}, 1
	case w&0x80000000 == 0: // a personality routine's address; GCC's take the compact format after it
		if w, err = word(1); err != nil {
			return nil, err
		}
		more, ops, next = w>>24, []byte{byte(w >> 16), byte(w >> 8), byte(w)}, 2
	default:
		return nil, errUnsupported(fmt.Sprintf("ARM extab entry 0x%08x", w))
	}
	for k := uint32(0); k < more; k++ {
		if w, err = word(next + uint64(k)); err != nil {
			return nil, err
		}
		ops = append(ops, byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
	}
	return ops, nil
}

// step unwinds one frame by the entry covering at (Table.Step's contract).
func (x *exidx) step(a *Arch, at uint64, r *Regs, mem Memory) (uint64, bool, bool, error) {
	ops, err := x.opcodes(at)
	if err != nil {
		return 0, false, false, err
	}
	if ops == nil { // EXIDX_CANTUNWIND: code without unwind information (_start, code built without tables)
		return 0, false, false, fmt.Errorf("%w: EXIDX_CANTUNWIND at 0x%x", ErrNoFDE, at)
	}
	vsp, ok := r.Get(a.SP)
	if !ok {
		return 0, false, false, fmt.Errorf("%w: sp", ErrStack)
	}
	pcSet := false
	// pop loads a register from vsp; a popped sp is the new vsp once the
	// whole list is popped (a signal restorer's "pop {r0-r15}").
	var newSP uint64
	spSet := false
	pop := func(reg int) error {
		v, ok := mem(vsp & 0xffffffff)
		if !ok {
			return fmt.Errorf("%w: r%d at 0x%x", ErrStack, reg, vsp)
		}
		switch reg {
		case a.SP:
			newSP, spSet = v&0xffffffff, true
		default:
			r.Set(reg, v&0xffffffff)
			pcSet = pcSet || reg == a32PC
		}
		vsp += 4
		return nil
	}
	popMask := func(mask uint32, first int) error {
		for i := 0; mask != 0; i, mask = i+1, mask>>1 {
			if mask&1 != 0 {
				if err := pop(first + i); err != nil {
					return err
				}
			}
		}
		if spSet {
			vsp, spSet = newSP, false
		}
		return nil
	}
	fail := func(what string) error { return errUnsupported(fmt.Sprintf("ARM unwind opcode %s", what)) }
loop:
	for i := 0; i < len(ops); i++ {
		op := ops[i]
		arg := func() (byte, error) {
			if i+1 >= len(ops) {
				return 0, &FormatError{Section: ".ARM.extab", What: fmt.Sprintf("opcode 0x%02x without its operand", op)}
			}
			i++
			return ops[i], nil
		}
		switch {
		case op&0xc0 == 0x00:
			vsp += uint64(op&0x3f)<<2 + 4
		case op&0xc0 == 0x40:
			vsp -= uint64(op&0x3f)<<2 + 4
		case op&0xf0 == 0x80:
			b, err := arg()
			if err != nil {
				return 0, false, false, err
			}
			mask := uint32(op&0x0f)<<8 | uint32(b)
			if mask == 0 { // refuse to unwind
				return 0, false, true, nil
			}
			if err := popMask(mask, 4); err != nil {
				return 0, false, false, err
			}
		case op&0xf0 == 0x90:
			n := int(op & 0x0f)
			if n == 13 || n == 15 {
				return 0, false, false, fail(fmt.Sprintf("0x%02x (reserved)", op))
			}
			v, ok := r.Get(n)
			if !ok {
				return 0, false, false, fmt.Errorf("%w: r%d", ErrStack, n)
			}
			vsp = v
		case op&0xf0 == 0xa0: // pop r4-r[4+n], r14 too with bit 3
			mask := uint32(1)<<(op&7+1) - 1
			if err := popMask(mask, 4); err != nil {
				return 0, false, false, err
			}
			if op&8 != 0 {
				if err := pop(a32LR); err != nil {
					return 0, false, false, err
				}
			}
		case op == 0xb0:
			break loop
		case op == 0xb1:
			b, err := arg()
			if err != nil {
				return 0, false, false, err
			}
			if b == 0 || b&0xf0 != 0 {
				return 0, false, false, fail(fmt.Sprintf("0xb1 0x%02x (spare)", b))
			}
			if err := popMask(uint32(b), 0); err != nil {
				return 0, false, false, err
			}
		case op == 0xb2: // vsp += 0x204 + (uleb128 << 2)
			var v uint64
			for shift := 0; ; shift += 7 {
				b, err := arg()
				if err != nil {
					return 0, false, false, err
				}
				if shift < 64 {
					v |= uint64(b&0x7f) << shift
				}
				if b&0x80 == 0 {
					break
				}
			}
			vsp += 0x204 + v<<2
		case op == 0xb3: // VFP D[s]-D[s+c] saved by FSTMFDX
			b, err := arg()
			if err != nil {
				return 0, false, false, err
			}
			vsp += 8*uint64(b&0xf+1) + 4
		case op&0xf8 == 0xb8: // VFP D[8]-D[8+n] by FSTMFDX
			vsp += 8*uint64(op&7+1) + 4
		case op&0xf8 == 0xc0 && op&7 < 6: // iWMMXt wR[10]-wR[10+n]
			vsp += 8 * uint64(op&7+1)
		case op == 0xc6: // iWMMXt wR[s]-wR[s+c]
			b, err := arg()
			if err != nil {
				return 0, false, false, err
			}
			vsp += 8 * uint64(b&0xf+1)
		case op == 0xc7: // iWMMXt wCGR registers under mask
			b, err := arg()
			if err != nil {
				return 0, false, false, err
			}
			if b == 0 || b&0xf0 != 0 {
				return 0, false, false, fail(fmt.Sprintf("0xc7 0x%02x (spare)", b))
			}
			vsp += 4 * uint64(bits.OnesCount8(b))
		case op == 0xc8 || op == 0xc9: // VFP D[16+s]... or D[s]... by VPUSH
			b, err := arg()
			if err != nil {
				return 0, false, false, err
			}
			vsp += 8 * uint64(b&0xf+1)
		case op&0xf8 == 0xd0: // VFP D[8]-D[8+n] by VPUSH
			vsp += 8 * uint64(op&7+1)
		default:
			return 0, false, false, fail(fmt.Sprintf("0x%02x (spare)", op))
		}
	}
	if !pcSet {
		lr, ok := r.Get(a32LR)
		if !ok {
			return 0, false, false, fmt.Errorf("%w: r14", ErrStack)
		}
		r.Set(a32PC, lr)
	}
	r.Set(a.SP, vsp&0xffffffff)
	pc, _ := r.Get(a32PC)
	// The Thumb state bit is not part of the address; a pc of 0 is the
	// end (r14 zero at the entry point).
	return pc &^ 1, false, pc&^1 == 0, nil
}
