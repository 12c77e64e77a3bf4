package kimage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/kboost/kboost/decode"
)

// arm64 Image support.
//
// An arm64 Image (Documentation/arm64/booting.rst) is the kernel's memory
// image from _text on, with a 64-byte header: code0/code1, text_offset (u64 at
// 8), image_size (u64 at 16, the memory footprint including .bss), flags (u64
// at 24; bit 0 set means big-endian), "ARM\x64" at 0x38 and the offset of a
// PE/COFF header at 0x3c (EFI stub). Image byte 0 is _text; _stext follows the
// head text at the PE header's .text VirtualAddress. It has no symbols: the
// text sections are synthesized from a symbol table (kallsyms) by SetSymbols.
//
// A relocatable kernel (CONFIG_RELOCATABLE, Debian's) is linked with
// --no-apply-dynamic-relocs: every absolute pointer in its data is zero in the
// Image and its value is the addend of an R_AARCH64_RELATIVE entry of
// .rela.dyn (24 bytes: r_offset, r_info, r_addend), which the kernel applies
// to itself at boot. arm64Image finds that table by its shape and answers
// pointer reads through it.

const (
	a64HdrTextOffset = 8
	a64HdrImageSize  = 16
	a64HdrFlags      = 24
	a64HdrPEOffset   = 0x3c
	a64RelaEntry     = 24
	a64RRelative     = 1027 // R_AARCH64_RELATIVE
	// a64DefaultStextOff is _stext - _text when the PE header does not say:
	// .head.text then the text segment at SEGMENT_ALIGN (64 KiB).
	a64DefaultStextOff = 0x10000
)

// arm64Image is what File keeps about an arm64 Image.
type arm64Image struct {
	data      []byte
	stextOff  uint64 // _stext - _text
	imageSize uint64 // header image_size (memory footprint), >= len(data)
	base      uint64 // link-time address of Image byte 0 (_text)
	baseFrom  string // how base was found
	rela      []a64Rela
	relaOff   int // file offset of the first .rela.dyn entry, -1 when none
	// relr are the link addresses .relr.dyn relocates (CONFIG_RELR, 7.2),
	// sorted: there the Image holds the pointer's link-time value itself.
	relr    []uint64
	relrOff int // file offset of .relr.dyn, -1 when none
}

type a64Rela struct{ off, addend uint64 }

// ARM64ImageInfo is the header of an arm64 Image.
type ARM64ImageInfo struct {
	TextOffset uint64 // header text_offset (0 since Linux 5.8... and relocatable kernels)
	ImageSize  uint64 // memory footprint from _text, .bss included
	Flags      uint64
	StextOff   uint64 // _stext - _text (the PE .text VirtualAddress, else 0x10000)
}

// ParseARM64Image reads the header of an arm64 Image.
func ParseARM64Image(b []byte) (ARM64ImageInfo, error) {
	var info ARM64ImageInfo
	if !IsARM64Image(b) {
		return info, &FormatError{What: "arm64 Image header", Off: arm64ImageMagicOff, Why: `no "ARM\x64" magic`, Err: ErrFormat}
	}
	info.TextOffset = binary.LittleEndian.Uint64(b[a64HdrTextOffset:])
	info.ImageSize = binary.LittleEndian.Uint64(b[a64HdrImageSize:])
	info.Flags = binary.LittleEndian.Uint64(b[a64HdrFlags:])
	if info.Flags&1 != 0 {
		return info, &FormatError{What: "arm64 Image header", Off: a64HdrFlags, Why: "big-endian kernel (flags bit 0): only little-endian is supported", Err: ErrUnsupportedArch}
	}
	if info.ImageSize == 0 {
		info.ImageSize = uint64(len(b)) // before Linux 3.17 the field was 0
	}
	if info.ImageSize < uint64(len(b)) {
		info.ImageSize = uint64(len(b))
	}
	info.StextOff = a64DefaultStextOff
	if off, ok := peTextVA(b); ok && off < uint64(len(b)) {
		info.StextOff = off
	}
	return info, nil
}

// peTextVA returns the VirtualAddress of the PE/COFF section ".text", which
// the arm64 EFI header places at _stext - _text.
func peTextVA(b []byte) (uint64, bool) {
	if len(b) < 0x40 {
		return 0, false
	}
	pe := uint64(binary.LittleEndian.Uint32(b[a64HdrPEOffset:]))
	if pe == 0 || pe+24 > uint64(len(b)) || string(b[pe:pe+4]) != "PE\x00\x00" {
		return 0, false
	}
	nsec := uint64(binary.LittleEndian.Uint16(b[pe+6:]))
	optSize := uint64(binary.LittleEndian.Uint16(b[pe+20:]))
	sec := pe + 24 + optSize
	for i := uint64(0); i < nsec && i < 96; i++ {
		s := sec + 40*i
		if s+40 > uint64(len(b)) {
			return 0, false
		}
		if string(bytes.TrimRight(b[s:s+8], "\x00")) == ".text" {
			return uint64(binary.LittleEndian.Uint32(b[s+12:])), true
		}
	}
	return 0, false
}

// IsGzipARM64Image reports whether b is a gzip stream whose contents start with
// an arm64 Image header (the Image.gz some distributions install as vmlinuz).
func IsGzipARM64Image(b []byte) bool {
	if len(b) < 18 || b[0] != 0x1f || b[1] != 0x8b {
		return false
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return false
	}
	var head [0x40]byte
	if _, err := io.ReadFull(zr, head[:]); err != nil {
		return false
	}
	return IsARM64Image(head[:])
}

// openARM64Image makes a File of an arm64 Image (or a gzip-compressed one).
// Until SetSymbols, its only section is the whole Image (not executable).
func openARM64Image(b []byte) (*File, error) {
	if IsGzipARM64Image(b) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, corrupt("gzip arm64 Image", 0, "%v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, maxDecompressed+1))
		if err != nil {
			return nil, corrupt("gzip arm64 Image", -1, "%v", err)
		}
		if len(out) > maxDecompressed {
			return nil, corrupt("gzip arm64 Image", -1, "decompresses to more than %d bytes", maxDecompressed)
		}
		b = out
	}
	info, err := ParseARM64Image(b)
	if err != nil {
		return nil, err
	}
	im := &arm64Image{data: b, stextOff: info.StextOff, imageSize: info.ImageSize, relaOff: -1, relrOff: -1}
	im.findRela()
	im.findRelr()
	im.findRelaBeforeRelr()
	im.findBase(nil)
	f := &File{Kind: KindARM64Image, Arch: decode.ARM64, Machine: "EM_AARCH64", Symbols: &SymTab{}, image: b, a64: im}
	f.Sections = im.sections(nil)
	return f, nil
}

// findRela locates .rela.dyn: the longest run of 24-byte entries, 8-aligned,
// whose r_info is R_AARCH64_RELATIVE and whose r_offset and r_addend are
// kernel (upper-half) addresses.
func (im *arm64Image) findRela() {
	b := im.data
	isEnt := func(o int) bool {
		if o+a64RelaEntry > len(b) {
			return false
		}
		return binary.LittleEndian.Uint64(b[o+8:]) == a64RRelative &&
			b[o+7] == 0xff && b[o+6] == 0xff // r_offset >= 0xffff000000000000
	}
	bestOff, bestN := -1, 0
	for o := 0; o+a64RelaEntry <= len(b); o += 8 {
		if !isEnt(o) {
			continue
		}
		n := 0
		e := o
		for isEnt(e) {
			n++
			e += a64RelaEntry
		}
		if n > bestN {
			bestOff, bestN = o, n
		}
		// Entries at other phases of the same run are sub-runs: skip past it.
		o = e - 8
	}
	if bestN < 16 {
		return
	}
	im.relaOff = bestOff
	im.rela = make([]a64Rela, bestN)
	for i := range im.rela {
		o := bestOff + a64RelaEntry*i
		im.rela[i] = a64Rela{off: binary.LittleEndian.Uint64(b[o:]), addend: binary.LittleEndian.Uint64(b[o+16:])}
	}
	if !sort.SliceIsSorted(im.rela, func(i, j int) bool { return im.rela[i].off < im.rela[j].off }) {
		sort.Slice(im.rela, func(i, j int) bool { return im.rela[i].off < im.rela[j].off })
	}
}

// findRelaBeforeRelr finds the .rela.dyn of a RELR kernel (7.2), which
// the linker script puts just before .relr.dyn. The linker packs into
// .relr.dyn only the relocations of slots in 8-aligned input sections; the
// others stay R_AARCH64_RELATIVE entries of .rela.dyn. Among them are the
// kprobe blacklist entries of entry.S: its NOKPROBE macro emits `.quad sym`
// into _kprobe_blacklist with no alignment directive. GNU ld sized .rela.dyn
// before packing, so most of it is unused zero entries (R_AARCH64_NONE),
// and it also holds a few symbol relocations (ABS64, GLOB_DAT): too few
// RELATIVE entries in a row for findRela's shape test. Walking back from
// .relr.dyn over 24-byte entries of those kinds finds them by place.
func (im *arm64Image) findRelaBeforeRelr() {
	if len(im.rela) > 0 || im.relrOff < 0 {
		return
	}
	const (
		rABS64    = 257
		rCopy     = 1024
		rRelative = a64RRelative
	)
	b := im.data
	start := im.relrOff
	var rela []a64Rela
	for o := im.relrOff - a64RelaEntry; o >= 0; o -= a64RelaEntry {
		off := binary.LittleEndian.Uint64(b[o:])
		info := binary.LittleEndian.Uint64(b[o+8:])
		addend := binary.LittleEndian.Uint64(b[o+16:])
		typ := info & 0xffffffff
		switch {
		case off == 0 && info == 0 && addend == 0: // R_AARCH64_NONE: unused
		case off>>48 != 0xffff:
			o = -1 // not an entry: the start of .rela.dyn is passed
			continue
		case typ == rRelative:
			rela = append(rela, a64Rela{off: off, addend: addend})
		case typ == rABS64 || (typ >= rCopy && typ < rRelative):
			// a symbol's value: not one kboost reads
		default:
			o = -1
			continue
		}
		start = o
	}
	if len(rela) == 0 {
		return
	}
	im.relaOff = start
	sort.Slice(rela, func(i, j int) bool { return rela[i].off < rela[j].off })
	im.rela = rela
}

// kimageVAddr is KIMAGE_VADDR of Linux 6.1 arm64 for a configuration:
// MODULES_END = _PAGE_END(VA_BITS_MIN) + 128 MiB.
func kimageVAddr(cfg *KConfig) (uint64, bool) {
	if cfg == nil {
		return 0, false
	}
	v, ok := cfg.Value("ARM64_VA_BITS")
	if !ok {
		return 0, false
	}
	var bits uint64
	if _, err := fmt.Sscanf(v, "%d", &bits); err != nil || bits < 36 || bits > 52 {
		return 0, false
	}
	if bits > 48 {
		bits = 48 // VA_BITS_MIN
	}
	return -(uint64(1) << (bits - 1)) + 128<<20, true
}

// relocsFit reports whether base is consistent with the relocations: every
// sampled r_offset lies in the Image and its slot is zero there
// (--no-apply-dynamic-relocs).
func (im *arm64Image) relocsFit(base uint64) bool {
	if len(im.rela) == 0 {
		return false
	}
	step := max(1, len(im.rela)/257)
	for i := 0; i < len(im.rela); i += step {
		o, ok := im.fileOff(base, im.rela[i].off, 8)
		if !ok || binary.LittleEndian.Uint64(im.data[o:]) != 0 {
			return false
		}
	}
	return true
}

// fileOff is the file offset of the n bytes at link address a for an Image
// at base; ok is false when they are not all in the file.
func (im *arm64Image) fileOff(base, a uint64, n int) (uint64, bool) {
	if a < base {
		return 0, false
	}
	o := a - base
	if o > uint64(len(im.data)) || uint64(len(im.data))-o < uint64(n) {
		return 0, false
	}
	return o, true
}

// findBase sets the link address of Image byte 0: KIMAGE_VADDR from the
// configuration when the relocations agree, else the address, aligned as
// KIMAGE_VADDR always is (128 MiB: MODULES_VADDR + MODULES_VSIZE), at which
// they fit; without relocations it stays 0 until SetSymbols places the Image
// at kallsyms' _stext.
func (im *arm64Image) findBase(cfg *KConfig) {
	// Without relocations to check it against, the 6.1 formula is not
	// trusted: KIMAGE_VADDR moved (6.12's is 2 GiB above the modules' start,
	// found here through the relocations) and 7.2's Image has no RELA
	// table kboost reads (RELR), so kallsyms places it (SetSymbols).
	// (7.2's few RELA entries, see findRelaBeforeRelr, are too few to
	// check a base against.)
	if len(im.relr) > 0 {
		return
	}
	if a, ok := kimageVAddr(cfg); ok && len(im.rela) > 0 && im.relocsFit(a) {
		im.base, im.baseFrom = a, "KIMAGE_VADDR from CONFIG_ARM64_VA_BITS"
		return
	}
	if len(im.rela) == 0 {
		return
	}
	// The relocated slots lie in the Image: base is at most the lowest r_offset
	// and above the highest minus the Image's length.
	lo, hi := im.rela[0].off, im.rela[len(im.rela)-1].off
	const align = 128 << 20
	top := lo &^ (align - 1)
	for b := top; b+uint64(len(im.data)) > hi && b <= top; b -= align {
		if im.relocsFit(b) {
			im.base, im.baseFrom = b, "relocations (.rela.dyn)"
			return
		}
	}
}

// pointer returns the value the kernel stores at link address a (an 8-byte
// slot) at boot: its R_AARCH64_RELATIVE addend, or the Image's bytes when no
// relocation covers it. ok is false outside the Image.
func (im *arm64Image) pointer(a uint64) (uint64, bool) {
	i := sort.Search(len(im.rela), func(i int) bool { return im.rela[i].off >= a })
	if i < len(im.rela) && im.rela[i].off == a {
		return im.rela[i].addend, true
	}
	o, ok := im.fileOff(im.base, a, 8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(im.data[o:]), true
}

// relocated reports whether a relocation targets link address a.
func (im *arm64Image) relocated(a uint64) bool {
	i := sort.Search(len(im.rela), func(i int) bool { return im.rela[i].off >= a })
	if i < len(im.rela) && im.rela[i].off == a {
		return true
	}
	j := sort.Search(len(im.relr), func(j int) bool { return im.relr[j] >= a })
	return j < len(im.relr) && im.relr[j] == a
}

// a64RelrMin is the fewest entries a .relr.dyn run must have to be taken
// for the table (a kernel has thousands).
const a64RelrMin = 256

// findRelr locates .relr.dyn (SHT_RELR): the longest run of 8-byte words in
// which each even word is an upper-half, 8-aligned address above the range
// the words before it cover and each odd word a bitmap of the 63 slots after
// it (relocate_kernel's decoding).
func (im *arm64Image) findRelr() {
	b := im.data
	word := func(o int) uint64 { return binary.LittleEndian.Uint64(b[o:]) }
	// run decodes the run at o; it returns its length in words and its
	// number of bitmaps and, when out is not nil, appends the addresses it
	// relocates. (A sorted pointer table such as __mcount_loc reads as a run
	// of addresses alone: the table is the run with the most bitmaps.)
	run := func(o int, out *[]uint64) (n, bitmaps int) {
		var where uint64
		for ; o+8 <= len(b); o, n = o+8, n+1 {
			w := word(o)
			switch {
			case w&1 == 0:
				if w>>48 != 0xffff || w&7 != 0 || (n > 0 && w < where) {
					return n, bitmaps
				}
				if out != nil {
					*out = append(*out, w)
				}
				where = w + 8
			case n == 0:
				return 0, 0 // a run starts with an address
			default:
				bitmaps++
				for i := uint64(1); i < 64; i++ {
					if w>>i&1 != 0 && out != nil {
						*out = append(*out, where+(i-1)*8)
					}
				}
				where += 63 * 8
			}
		}
		return n, bitmaps
	}
	bestOff, bestBitmaps := -1, 0
	for o := 0; o+8 <= len(b); o += 8 {
		n, bm := run(o, nil)
		if bm > bestBitmaps {
			bestOff, bestBitmaps = o, bm
		}
		if n > 1 {
			o += 8 * (n - 1)
		}
	}
	if bestBitmaps < a64RelrMin {
		return
	}
	im.relrOff = bestOff
	run(bestOff, &im.relr)
	sort.Slice(im.relr, func(i, j int) bool { return im.relr[i] < im.relr[j] })
}

// a64Marks are the kallsyms symbols that split an Image into sections.
type a64Marks struct {
	stext, etext, sinit, einit uint64
	ok                         bool
}

func a64MarksOf(t *SymTab) a64Marks {
	var m a64Marks
	if t == nil {
		return m
	}
	get := func(n string) (uint64, bool) {
		s, ok := t.ByName(n)
		return s.Addr, ok
	}
	var ok1, ok2 bool
	m.stext, ok1 = get("_stext")
	m.etext, ok2 = get("_etext")
	m.ok = ok1 && ok2 && m.etext > m.stext
	m.sinit, ok1 = get("_sinittext")
	m.einit, ok2 = get("_einittext")
	if !ok1 || !ok2 || m.einit < m.sinit {
		m.sinit, m.einit = 0, 0
	}
	return m
}

// sections synthesizes the arm64 Image's sections (imageSections).
func (im *arm64Image) sections(t *SymTab) []Section {
	return imageSections(im.data, im.base, im.imageSize, t)
}

// imageSections synthesizes the sections of a kernel Image (data loaded at
// base): the whole Image when the text bounds are unknown, else .head.text,
// .text (_stext.._etext), .rodata, .init.text (_sinittext.._einittext),
// .data (the rest of the file) and .bss (imageSize beyond the file).
func imageSections(data []byte, base, imageSize uint64, t *SymTab) []Section {
	cache := func() *sectionCache { return &sectionCache{mem: data} }
	end := base + uint64(len(data))
	mk := func(name string, start, stop uint64, exec bool) Section {
		return Section{Name: name, Addr: start, Size: stop - start, Offset: start - base, Exec: exec, Alloc: true, cache: cache()}
	}
	var out []Section
	m := a64MarksOf(t)
	inImage := func(a uint64) bool { return a >= base && a <= end }
	if !m.ok || !inImage(m.stext) || !inImage(m.etext) {
		out = append(out, mk("Image", base, end, false))
	} else {
		out = append(out, mk(".head.text", base, m.stext, true), mk(".text", m.stext, m.etext, true))
		if m.einit > m.sinit && m.sinit >= m.etext && inImage(m.einit) {
			out = append(out, mk(".rodata", m.etext, m.sinit, false), mk(".init.text", m.sinit, m.einit, true), mk(".data", m.einit, end, false))
		} else {
			out = append(out, mk(".data", m.etext, end, false))
		}
	}
	if imageSize > uint64(len(data)) {
		out = append(out, Section{Name: ".bss", Addr: end, Size: imageSize - uint64(len(data)), Alloc: true, Write: true, NoBits: true})
	}
	return out
}

// setSymbolsARM64 attaches t to an arm64 Image File: a table from a KASLR
// boot (its _stext differs from the Image's) is shifted to link addresses,
// and the text sections are synthesized from its markers.
func (f *File) setSymbolsARM64(t *SymTab) int64 {
	im := f.a64
	if im.base == 0 || f.Config != nil {
		im.findBase(f.Config)
	}
	var slide int64
	if s, ok := t.ByName("_stext"); ok {
		if im.base == 0 {
			// No relocations and no configuration: the table's addresses are
			// taken as the link addresses.
			im.base, im.baseFrom = s.Addr-im.stextOff, "kallsyms _stext"
		} else if link := im.base + im.stextOff; link != s.Addr {
			slide = int64(link - s.Addr)
			t = t.Shift(slide)
		}
	}
	f.Symbols = t
	f.Sections = im.sections(t)
	return slide
}

// ARM64Base returns the link-time address of an arm64 Image's byte 0 (_text)
// and how it was found; ok is false for other files or when it is unknown.
func (f *File) ARM64Base() (base uint64, from string, ok bool) {
	if f.a64 == nil || f.a64.base == 0 {
		return 0, "", false
	}
	return f.a64.base, f.a64.baseFrom, true
}
