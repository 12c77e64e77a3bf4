package kimage

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"github.com/kboost/kboost/decode"
)

// Kind is the container format Open recognised.
type Kind int

const (
	KindUnknown    Kind = iota
	KindELF             // an ELF file (vmlinux, module, executable)
	KindDeb             // a Debian kernel package; the File describes its vmlinux
	KindBzImage         // an x86 bzImage (vmlinuz); the File describes its vmlinux
	KindARM64Image      // an arm64 kernel Image (sections synthesized from symbols: see SetSymbols)
	KindARMImage        // a 32-bit ARM kernel Image, alone or from a zImage (sections from symbols)
)

var kindNames = [...]string{"unknown", "ELF", "Deb", "BzImage", "ARM64Image", "ARMImage"}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Section is one section of the (possibly extracted) ELF image. Data reads the
// contents on first use and caches them; copies of a Section share the cache.
type Section struct {
	Name   string
	Addr   uint64 // virtual address
	Size   uint64 // size in memory
	Offset uint64 // offset in the ELF image
	Exec   bool   // SHF_EXECINSTR
	Alloc  bool   // SHF_ALLOC
	Write  bool   // SHF_WRITE
	NoBits bool   // SHT_NOBITS (.bss): no file contents
	// Spans, for an EM_ARM executable section, say where it holds ARM code,
	// Thumb code and data (see CodeSpans); nil elsewhere.
	Spans []decode.Span

	index int // ELF section header index (0: not from a section header)
	cache *sectionCache
}

type sectionCache struct {
	once sync.Once
	src  io.ReaderAt
	mem  []byte // whole image when in memory
	data []byte
	err  error
}

// Data returns the section contents (nil for NOBITS sections). When the image is
// in memory the result is a sub-slice of it: do not modify it.
func (s Section) Data() ([]byte, error) {
	if s.NoBits || s.cache == nil {
		return nil, nil
	}
	c := s.cache
	c.once.Do(func() {
		end := s.Offset + s.Size
		if c.mem != nil {
			if end > uint64(len(c.mem)) || end < s.Offset {
				c.err = corrupt("section "+s.Name, int64(s.Offset), "contents [%#x,%#x) past end of file (%#x)", s.Offset, end, len(c.mem))
				return
			}
			c.data = c.mem[s.Offset:end:end]
			return
		}
		if s.Size > maxDecompressed {
			c.err = corrupt("section "+s.Name, int64(s.Offset), "size %#x too large", s.Size)
			return
		}
		buf := make([]byte, s.Size)
		if _, err := c.src.ReadAt(buf, int64(s.Offset)); err != nil {
			c.err = corrupt("section "+s.Name, int64(s.Offset), "read: %v", err)
			return
		}
		c.data = buf
	})
	return c.data, c.err
}

// Contains reports whether the section's memory range holds addr.
func (s Section) Contains(addr uint64) bool {
	return s.Alloc && addr >= s.Addr && addr-s.Addr < s.Size
}

// File is an opened binary input. For a .deb or bzImage it describes the
// extracted vmlinux (kept in memory); for an ELF on disk the sections are read
// lazily from the file.
type File struct {
	Path          string
	Kind          Kind
	Arch          *decode.Arch // nil when the machine is not supported
	Machine       string       // ELF machine name, e.g. "EM_X86_64", "EM_AARCH64"
	Type          elf.Type     // ET_EXEC, ET_REL, ET_DYN, ...
	Entry         uint64
	Sections      []Section // in section-header order
	Symbols       *SymTab   // never nil; may be empty
	Config        *KConfig  // nil when unknown
	KernelVersion string    // kernel release ("6.1.0-57-amd64") when known

	image  []byte // the whole ELF image when in memory
	closer io.Closer
	a64    *arm64Image // arm64 Image only (a64_image.go)
	a32    *armImage   // 32-bit ARM Image only (a32_image.go)
}

// Close releases the open file, if any. Sections already read stay valid.
func (f *File) Close() error {
	if f.closer != nil {
		err := f.closer.Close()
		f.closer = nil
		return err
	}
	return nil
}

// Image returns the whole ELF image when it is in memory (.deb, bzImage or
// OpenBytes), else nil.
func (f *File) Image() []byte { return f.image }

// Section returns the first section with the given name.
func (f *File) Section(name string) (Section, bool) {
	for _, s := range f.Sections {
		if s.Name == name {
			return s, true
		}
	}
	return Section{}, false
}

// ExecSections returns the executable sections with contents, in file order.
func (f *File) ExecSections() []Section {
	var out []Section
	for _, s := range f.Sections {
		if s.Exec && !s.NoBits && s.Size > 0 {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offset < out[j].Offset })
	return out
}

// SectionAt returns the allocated section with contents holding addr.
func (f *File) SectionAt(addr uint64) (Section, bool) {
	for i := range f.Sections {
		if s := &f.Sections[i]; s.Contains(addr) && !s.NoBits {
			return *s, true
		}
	}
	return Section{}, false
}

// ReadAt returns n bytes of the image at virtual address addr (a sub-slice of
// the cached section data: do not modify it). The range must lie in one section.
func (f *File) ReadAt(addr uint64, n int) ([]byte, error) {
	s, ok := f.SectionAt(addr)
	if !ok {
		return nil, fmt.Errorf("read %d bytes at %#x: %w", n, addr, ErrAddress)
	}
	d, err := s.Data()
	if err != nil {
		return nil, err
	}
	off := addr - s.Addr
	if n < 0 || off+uint64(n) > uint64(len(d)) {
		return nil, fmt.Errorf("read %d bytes at %#x: crosses the end of %s: %w", n, addr, s.Name, ErrAddress)
	}
	return d[off : off+uint64(n)], nil
}

// Open opens path and recognises it by content: ELF, Debian kernel package,
// x86 bzImage or arm64 Image (plain or gzip-compressed). An arm64 Image has
// no symbols: its text sections appear when SetSymbols attaches a kallsyms
// table (see a64_image.go).
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var head [0x260]byte
	n, _ := io.ReadFull(fh, head[:])
	h := head[:n]
	switch {
	case bytes.HasPrefix(h, []byte("\x7fELF")):
		f, err := openELF(path, fh, nil)
		if err != nil {
			fh.Close()
			return nil, err
		}
		return f, nil
	case bytes.HasPrefix(h, []byte(arMagic)):
		fh.Close()
		dk, err := ReadDeb(path)
		if err != nil {
			return nil, err
		}
		f, err := dk.open()
		if f != nil {
			f.Path = path
		}
		if err != nil {
			return f, fmt.Errorf("%s: %w", path, err)
		}
		return f, nil
	}
	// Everything else is read whole.
	b, err := io.ReadAll(io.NewSectionReader(fh, 0, 1<<62))
	fh.Close()
	if err != nil {
		return nil, err
	}
	f, err := OpenBytes(b)
	if f != nil {
		f.Path = path
	}
	if err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// OpenBytes is Open for an input already in memory. For ELF input the sections
// are sub-slices of b.
func OpenBytes(b []byte) (*File, error) {
	switch {
	case bytes.HasPrefix(b, []byte("\x7fELF")):
		return openELF("", nil, b)
	case bytes.HasPrefix(b, []byte(arMagic)):
		dk, err := ReadDebBytes(b)
		if err != nil {
			return nil, err
		}
		return dk.open()
	case IsBzImage(b):
		info, err := ParseBzImage(b)
		if err != nil {
			return nil, err
		}
		vml, err := ExtractVmlinux(b)
		if err != nil {
			return nil, err
		}
		f, err := openELF("", nil, vml)
		if err != nil {
			return nil, err
		}
		f.Kind = KindBzImage
		if r := firstWord(info.KernelVersion); r != "" {
			f.KernelVersion = r
		}
		return f, nil
	case IsARM64Image(b) || IsGzipARM64Image(b):
		return openARM64Image(b)
	case IsARMZImage(b):
		img, err := ExtractARMZImage(b)
		if err != nil {
			return nil, err
		}
		return openARMImage(img), nil
	case IsARMImage(b):
		return openARMImage(b), nil
	}
	return nil, &FormatError{What: "input", Off: 0, Err: ErrFormat,
		Why: "not an ELF file, Debian package (ar), x86 bzImage, arm64 Image, ARM zImage or ARM Image"}
}

func firstWord(s string) string {
	if i := bytes.IndexAny([]byte(s), " \t\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// SetSymbols attaches a symbol table (e.g. from LoadSymbols) to the file. When
// both the table and the image know the kernel's start (symbol _text, section
// .text) and they differ, as with a kallsyms dump of a kernel booted with KASLR,
// the table is shifted into the image's link-time addresses; the shift applied
// (image minus table) is returned.
//
// For an arm64 Image the table's _stext places the Image (shifted to the
// link address the relocations or the configuration give), and the sections
// .text (_stext.._etext), .init.text (_sinittext.._einittext) and the data
// around them are synthesized from its markers.
func (f *File) SetSymbols(t *SymTab) int64 {
	if f.a64 != nil {
		return f.setSymbolsARM64(t)
	}
	if f.a32 != nil {
		return f.setSymbolsARM(t)
	}
	var slide int64
	if s, ok := t.ByName("_text"); ok {
		if sec, ok := f.Section(".text"); ok && sec.Addr != s.Addr {
			slide = int64(sec.Addr - s.Addr)
			t = t.Shift(slide)
		}
	}
	f.Symbols = t
	return slide
}

// SymbolStarts returns the sorted addresses of the symbols inside sec (but
// its start) where an instruction can begin: where a linear sweep restarts,
// as objdump restarts at every symbol of the section. Module symbols are
// left out, and so are addresses no instruction set of the section aligns
// to, and in a relocatable object the symbols of other sections.
func (f *File) SymbolStarts(sec Section) []uint64 {
	align := uint64(0)
	for _, sp := range f.CodeSpans(sec) {
		if sp.Arch != nil && (align == 0 || uint64(sp.Arch.InsnAlign) < align) {
			align = uint64(sp.Arch.InsnAlign)
		}
	}
	if align == 0 {
		align = 1
	}
	var starts []uint64
	// In a relocatable object every section starts at 0: only its own
	// symbols are in it.
	own := func(sym Symbol) bool { return f.Type != elf.ET_REL || sec.index == 0 || sym.region == sec.index+1 }
	for sym := range f.Symbols.All() {
		if sym.Module == "" && sec.Contains(sym.Addr) && sym.Addr != sec.Addr && sym.Addr%align == 0 && own(sym) {
			starts = append(starts, sym.Addr)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	out := starts[:0]
	for i, v := range starts {
		if i == 0 || v != starts[i-1] {
			out = append(out, v)
		}
	}
	return out
}
