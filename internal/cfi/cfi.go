package cfi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/kboost/kboost/decode"
)

// ErrFormat marks malformed call frame information.
var ErrFormat = errors.New("cfi: malformed call frame information")

// ErrNoFDE: no FDE covers the address.
var ErrNoFDE = errors.New("cfi: no FDE covers the address")

// FormatError is malformed input at an offset of the section read.
type FormatError struct {
	Section string
	Off     int
	What    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("cfi: %s+0x%x: %s", e.Section, e.Off, e.What)
}

func (e *FormatError) Unwrap() error { return ErrFormat }

// Section is one section's bytes and the address they load at.
type Section struct {
	Data []byte
	Addr uint64
}

// Pointer encodings (DW_EH_PE_*, LSB's "Linux Standard Base Core
// Specification", exception frames).
const (
	peAbsptr  = 0x00
	peULEB    = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSLEB    = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePCRel   = 0x10
	peDataRel = 0x30
	peOmit    = 0xff
)

// reader reads a section with bounds checks: the first overrun sets err and
// every later read returns zero.
type reader struct {
	sec  string
	b    []byte
	base uint64 // address of b[0]
	off  int
	err  error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = &FormatError{Section: r.sec, Off: r.off, What: what}
	}
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || r.off+n > len(r.b) || r.off+n < r.off {
		r.fail(fmt.Sprintf("%d bytes past the end", r.off+n-len(r.b)))
		return false
	}
	return true
}

func (r *reader) u8() uint8 {
	if !r.need(1) {
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	r.off += 2
	return binary.LittleEndian.Uint16(r.b[r.off-2:])
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	r.off += 4
	return binary.LittleEndian.Uint32(r.b[r.off-4:])
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	r.off += 8
	return binary.LittleEndian.Uint64(r.b[r.off-8:])
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (r *reader) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		c := r.u8()
		if r.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (r *reader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) || !r.need(int(n)) {
		r.fail("block past the end")
		return nil
	}
	r.off += int(n)
	return r.b[r.off-int(n) : r.off]
}

// ptr reads a pointer in encoding enc; dataRel is the base of datarel
// encodings (.eh_frame_hdr's address).
func (r *reader) ptr(enc uint8, ptrSize int, dataRel uint64) uint64 {
	if enc == peOmit {
		return 0
	}
	at := r.base + uint64(r.off)
	var v uint64
	switch enc & 0x0f {
	case peAbsptr:
		if ptrSize == 4 {
			v = uint64(r.u32())
		} else {
			v = r.u64()
		}
	case peULEB:
		v = r.uleb()
	case peUdata2:
		v = uint64(r.u16())
	case peUdata4:
		v = uint64(r.u32())
	case peUdata8:
		v = r.u64()
	case peSLEB:
		v = uint64(r.sleb())
	case peSdata2:
		v = uint64(int64(int16(r.u16())))
	case peSdata4:
		v = uint64(int64(int32(r.u32())))
	case peSdata8:
		v = r.u64()
	default:
		r.fail(fmt.Sprintf("pointer encoding 0x%02x", enc))
		return 0
	}
	switch enc & 0x70 {
	case 0:
	case pePCRel:
		v += at
	case peDataRel:
		v += dataRel
	default:
		r.fail(fmt.Sprintf("pointer application 0x%02x", enc&0x70))
		return 0
	}
	if enc&0x80 != 0 { // indirect: the value is in memory kboost does not read here
		r.fail("indirect pointer encoding")
		return 0
	}
	if ptrSize == 4 {
		v &= 0xffffffff
	}
	return v
}

// cie is one Common Information Entry.
type cie struct {
	codeAlign uint64
	dataAlign int64
	ra        uint64
	fdeEnc    uint8
	lsdaEnc   uint8
	augData   bool // 'z': FDEs have an augmentation length
	signal    bool // 'S': frames of this CIE are signal frames
	insns     span
}

// span is a CFA program's place in .eh_frame.
type span struct{ off, end int }

// fdeRef is one index entry: the FDE at off covers [begin, end).
type fdeRef struct {
	begin, end uint64
	off        int
}

// Table is one file's call frame information.
type Table struct {
	frame   Section
	ptrSize int
	// hdr is .eh_frame_hdr's search table (datarel sdata4 pairs), or nil
	// when index serves instead.
	hdr     []byte
	hdrAddr uint64
	index   []fdeRef
	cies    map[int]*cie
	rows    map[uint64]*row // rows already evaluated, by address
	// step, when set, unwinds instead of .eh_frame's rows: another
	// format's table (a32_exidx.go).
	step func(a *Arch, at uint64, r *Regs, mem Memory) (pc uint64, signal, end bool, err error)
}

// rowCacheMax bounds Table.rows (a long trace visits many call sites, but
// the same few most of the time).
const rowCacheMax = 4096

// New indexes ehFrame's FDEs (through ehFrameHdr's table when usable).
// ptrSize is 4 or 8 (the file's class).
func New(ehFrame, ehFrameHdr Section, ptrSize int) (*Table, error) {
	if ptrSize != 4 && ptrSize != 8 {
		return nil, &FormatError{Section: ".eh_frame", What: fmt.Sprintf("pointer size %d", ptrSize)}
	}
	t := &Table{frame: ehFrame, ptrSize: ptrSize, cies: map[int]*cie{}, rows: map[uint64]*row{}}
	if t.useHdr(ehFrameHdr) {
		return t, nil
	}
	if err := t.scan(); err != nil {
		return nil, err
	}
	return t, nil
}

// useHdr takes .eh_frame_hdr's table when it has the encoding every
// toolchain writes (datarel sdata4) and fits its section.
func (t *Table) useHdr(h Section) bool {
	r := &reader{sec: ".eh_frame_hdr", b: h.Data, base: h.Addr}
	if r.u8() != 1 {
		return false
	}
	ptrEnc, countEnc, tabEnc := r.u8(), r.u8(), r.u8()
	r.ptr(ptrEnc, t.ptrSize, h.Addr)
	n := r.ptr(countEnc, t.ptrSize, h.Addr)
	if r.err != nil || tabEnc != peDataRel|peSdata4 || countEnc == peOmit {
		return false
	}
	if n > uint64(len(h.Data)-r.off)/8 {
		return false
	}
	t.hdr, t.hdrAddr = h.Data[r.off:r.off+int(n)*8], h.Addr
	return true
}

// scan reads every FDE of .eh_frame into a sorted index.
func (t *Table) scan() error {
	for off := 0; off < len(t.frame.Data); {
		r := t.at(off)
		length, _, end := t.header(r)
		if r.err != nil {
			return r.err
		}
		if length == 0 { // terminator
			break
		}
		id := r.u32()
		if id != 0 {
			f, err := t.fdeAt(off)
			if err != nil {
				return err
			}
			if f.end > f.begin {
				t.index = append(t.index, fdeRef{f.begin, f.end, off})
			}
		}
		off = end
	}
	sort.Slice(t.index, func(i, j int) bool { return t.index[i].begin < t.index[j].begin })
	return nil
}

func (t *Table) at(off int) *reader {
	return &reader{sec: ".eh_frame", b: t.frame.Data, base: t.frame.Addr, off: off}
}

// header reads an entry's length; it returns the length, the offset of
// the CIE id field and the offset after the entry.
func (t *Table) header(r *reader) (length uint64, idOff, end int) {
	length = uint64(r.u32())
	if length == 0xffffffff {
		length = r.u64()
	}
	idOff = r.off
	if r.err == nil && length > uint64(len(r.b)-r.off) {
		r.fail(fmt.Sprintf("entry length 0x%x past the section", length))
	}
	return length, idOff, idOff + int(length)
}

type fde struct {
	cie        *cie
	begin, end uint64
	insns      span
}

func (t *Table) fdeAt(off int) (*fde, error) {
	r := t.at(off)
	length, idOff, end := t.header(r)
	if r.err == nil && length < 4 {
		r.fail("entry shorter than its id")
	}
	id := r.u32()
	if r.err != nil {
		return nil, r.err
	}
	if id == 0 {
		r.off = idOff
		r.fail("a CIE where an FDE was expected")
		return nil, r.err
	}
	c, err := t.cieAt(idOff - int(id))
	if err != nil {
		return nil, err
	}
	r.b = r.b[:end]
	f := &fde{cie: c}
	f.begin = r.ptr(c.fdeEnc, t.ptrSize, 0)
	size := r.ptr(c.fdeEnc&0x0f, t.ptrSize, 0)
	f.end = f.begin + size
	if c.augData {
		r.bytes(r.uleb())
	}
	if r.err != nil {
		return nil, r.err
	}
	f.insns = span{r.off, end}
	return f, nil
}

func (t *Table) cieAt(off int) (*cie, error) {
	if c := t.cies[off]; c != nil {
		return c, nil
	}
	r := t.at(off)
	if off < 0 || off >= len(t.frame.Data) {
		r.off = 0
		r.fail(fmt.Sprintf("CIE pointer to offset %d, outside the section", off))
		return nil, r.err
	}
	_, _, end := t.header(r)
	if r.err != nil {
		return nil, r.err
	}
	r.b = r.b[:end]
	if id := r.u32(); id != 0 && r.err == nil {
		r.fail("CIE pointer to an FDE")
	}
	version := r.u8()
	if r.err == nil && version != 1 && version != 3 && version != 4 {
		r.fail(fmt.Sprintf("CIE version %d", version))
	}
	var aug []byte
	for r.err == nil {
		ch := r.u8()
		if ch == 0 {
			break
		}
		aug = append(aug, ch)
	}
	if version == 4 {
		r.u8() // address size
		r.u8() // segment selector size
	}
	c := &cie{fdeEnc: peAbsptr, lsdaEnc: peOmit}
	c.codeAlign = r.uleb()
	c.dataAlign = r.sleb()
	if version == 1 {
		c.ra = uint64(r.u8())
	} else {
		c.ra = r.uleb()
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.augData = true
		n := r.uleb()
		data := &reader{sec: r.sec, b: r.bytes(n), base: r.base + uint64(r.off) - n}
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.fdeEnc = data.u8()
			case 'L':
				c.lsdaEnc = data.u8()
			case 'P':
				data.ptr(data.u8()&^0x80, t.ptrSize, 0) // the personality routine (its address is not needed)
			case 'S':
				c.signal = true
			case 'B', 'G': // AArch64 BTI and MTE marks: nothing to unwind
			default:
				r.fail(fmt.Sprintf("CIE augmentation %q", aug))
			}
		}
		if data.err != nil && r.err == nil {
			r.err = data.err
		}
	} else if len(aug) > 0 && string(aug) != "eh" {
		r.fail(fmt.Sprintf("CIE augmentation %q", aug))
	}
	if r.err != nil {
		return nil, r.err
	}
	c.insns = span{r.off, end}
	t.cies[off] = c
	return c, nil
}

// find returns the FDE covering addr.
func (t *Table) find(addr uint64) (*fde, error) {
	off := -1
	if t.hdr != nil {
		n := len(t.hdr) / 8
		loc := func(i int) uint64 {
			return t.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(t.hdr[i*8:]))))
		}
		i := sort.Search(n, func(i int) bool { return loc(i) > addr }) - 1
		if i < 0 {
			return nil, ErrNoFDE
		}
		a := t.hdrAddr + uint64(int64(int32(binary.LittleEndian.Uint32(t.hdr[i*8+4:]))))
		off = int(a - t.frame.Addr)
		if a < t.frame.Addr || a-t.frame.Addr >= uint64(len(t.frame.Data)) {
			return nil, &FormatError{Section: ".eh_frame_hdr", Off: i * 8, What: "FDE address outside .eh_frame"}
		}
	} else {
		i := sort.Search(len(t.index), func(i int) bool { return t.index[i].begin > addr }) - 1
		if i < 0 {
			return nil, ErrNoFDE
		}
		off = t.index[i].off
	}
	f, err := t.fdeAt(off)
	if err != nil {
		return nil, err
	}
	if addr < f.begin || addr >= f.end {
		return nil, ErrNoFDE
	}
	return f, nil
}

// errUnsupported wraps decode.ErrNotSupported for an operation not evaluated.
func errUnsupported(what string) error {
	return fmt.Errorf("cfi: %s: %w", what, decode.ErrNotSupported)
}
