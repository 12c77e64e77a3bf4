package uprobe

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/kboost/kboost/decode"
)

// Sentinel errors.
var (
	ErrNoSymbol  = errors.New("no such function")
	ErrNotMapped = errors.New("not in an executable segment")
)

// FormatError reports an ELF file kboost cannot use.
type FormatError struct {
	Path, Why string
	Err       error
}

func (e *FormatError) Error() string { return fmt.Sprintf("uprobe: %s: %s", e.Path, e.Why) }
func (e *FormatError) Unwrap() error { return e.Err }

// Kind is what sort of ELF file a Binary is.
type Kind string

// Kinds of binaries.
const (
	KindExec   Kind = "exec"   // ET_EXEC: fixed addresses (non-PIE)
	KindPIE    Kind = "pie"    // ET_DYN with an interpreter or DF_1_PIE
	KindShared Kind = "shared" // ET_DYN library
)

// Segment is one PT_LOAD program header.
type Segment struct {
	Vaddr, Off, Filesz, Memsz uint64
	Exec                      bool
}

// Func is one function symbol.
type Func struct {
	Name string
	Addr uint64 // virtual address (link-time)
	Size uint64
}

// Binary is an opened ELF file.
type Binary struct {
	Path    string
	Kind    Kind
	Static  bool   // an executable with no interpreter and no DT_NEEDED
	Go      bool   // built by the Go toolchain (.go.buildinfo / .gopclntab / Go build ID)
	SymFrom string // "symtab", "dynsym" (stripped) or "none"
	Arch    *decode.Arch
	Segs    []Segment
	Funcs   []Func // sorted by address, sizes > 0

	ef *elf.File
	r  io.ReaderAt
	fh *os.File
}

// Open reads path.
func Open(path string) (*Binary, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := newBinary(path, fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	b.fh = fh
	return b, nil
}

func newBinary(path string, r io.ReaderAt) (*Binary, error) {
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, &FormatError{Path: path, Why: "not an ELF file: " + err.Error()}
	}
	b := &Binary{Path: path, ef: ef, r: r}
	switch ef.Machine {
	case elf.EM_X86_64:
		b.Arch = decode.X86_64
		if ef.Class != elf.ELFCLASS64 {
			return nil, &FormatError{Path: path, Why: "x86-64 machine in a 32-bit ELF (x32) is not supported"}
		}
	case elf.EM_386:
		b.Arch = decode.I386
	case elf.EM_AARCH64:
		b.Arch = decode.ARM64
	default:
		return nil, &FormatError{Path: path, Why: fmt.Sprintf("machine %v: kboost audits x86 and arm64 uprobes (EM_X86_64, EM_386, EM_AARCH64)", ef.Machine)}
	}
	interp := false
	for _, p := range ef.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			b.Segs = append(b.Segs, Segment{Vaddr: p.Vaddr, Off: p.Off, Filesz: p.Filesz, Memsz: p.Memsz, Exec: p.Flags&elf.PF_X != 0})
		case elf.PT_INTERP:
			interp = true
		}
	}
	needed, _ := ef.DynString(elf.DT_NEEDED)
	pie := false
	if ds := ef.Section(".dynamic"); ds != nil {
		if d, err := ds.Data(); err == nil {
			pie = dynFlags1(ef, d)&uint64(elf.DF_1_PIE) != 0
		}
	}
	switch {
	case ef.Type == elf.ET_EXEC:
		b.Kind = KindExec
	case ef.Type == elf.ET_DYN && (interp || pie):
		b.Kind = KindPIE
	case ef.Type == elf.ET_DYN:
		b.Kind = KindShared
	default:
		return nil, &FormatError{Path: path, Why: fmt.Sprintf("%v: want an executable or a shared library", ef.Type)}
	}
	b.Static = b.Kind != KindShared && !interp && len(needed) == 0
	b.Go = ef.Section(".go.buildinfo") != nil || ef.Section(".gopclntab") != nil || ef.Section(".note.go.buildid") != nil
	if err := b.loadFuncs(); err != nil {
		return nil, err
	}
	return b, nil
}

// dynFlags1 returns DT_FLAGS_1 from the .dynamic contents.
func dynFlags1(ef *elf.File, d []byte) uint64 {
	sz := 16
	if ef.Class == elf.ELFCLASS32 {
		sz = 8
	}
	for i := 0; i+sz <= len(d); i += sz {
		var tag, val uint64
		if sz == 16 {
			tag, val = ef.ByteOrder.Uint64(d[i:]), ef.ByteOrder.Uint64(d[i+8:])
		} else {
			tag, val = uint64(ef.ByteOrder.Uint32(d[i:])), uint64(ef.ByteOrder.Uint32(d[i+4:]))
		}
		if elf.DynTag(tag) == elf.DT_FLAGS_1 {
			return val
		}
		if tag == 0 {
			break
		}
	}
	return 0
}

func (b *Binary) loadFuncs() error {
	syms, err := b.ef.Symbols()
	b.SymFrom = "symtab"
	if errors.Is(err, elf.ErrNoSymbols) {
		syms, err = b.ef.DynamicSymbols()
		b.SymFrom = "dynsym"
	}
	if errors.Is(err, elf.ErrNoSymbols) {
		b.SymFrom = "none"
		return nil
	}
	if err != nil {
		return &FormatError{Path: b.Path, Why: "symbol table: " + err.Error()}
	}
	seen := map[uint64]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Section == elf.SHN_UNDEF || s.Name == "" {
			continue
		}
		if seg := b.segment(s.Value); seg == nil || !seg.Exec {
			continue
		}
		// Aliases (memcpy@@GLIBC and __memcpy): keep the first name of an address.
		if seen[s.Value] {
			continue
		}
		seen[s.Value] = true
		b.Funcs = append(b.Funcs, Func{Name: s.Name, Addr: s.Value, Size: s.Size})
	}
	sort.Slice(b.Funcs, func(i, j int) bool { return b.Funcs[i].Addr < b.Funcs[j].Addr })
	return nil
}

// Close releases the file.
func (b *Binary) Close() error {
	if b.fh != nil {
		return b.fh.Close()
	}
	return nil
}

func (b *Binary) segment(vaddr uint64) *Segment {
	for i := range b.Segs {
		s := &b.Segs[i]
		if vaddr >= s.Vaddr && vaddr-s.Vaddr < s.Filesz {
			return s
		}
	}
	return nil
}

// FileOffset is the file offset of virtual address vaddr: what uprobe_events
// and the uprobe PMU take. Only bytes backed by the file have one.
func (b *Binary) FileOffset(vaddr uint64) (uint64, error) {
	s := b.segment(vaddr)
	if s == nil {
		return 0, fmt.Errorf("uprobe: %s: %#x: %w", b.Path, vaddr, ErrNotMapped)
	}
	return vaddr - s.Vaddr + s.Off, nil
}

// ExecOffset is FileOffset for code: vaddr must lie in an executable segment.
func (b *Binary) ExecOffset(vaddr uint64) (uint64, error) {
	s := b.segment(vaddr)
	if s == nil || !s.Exec {
		return 0, fmt.Errorf("uprobe: %s: %#x: %w (see readelf -l)", b.Path, vaddr, ErrNotMapped)
	}
	return vaddr - s.Vaddr + s.Off, nil
}

// Read returns n bytes at virtual address vaddr (fewer at the end of the
// segment's file contents).
func (b *Binary) Read(vaddr uint64, n int) ([]byte, error) {
	s := b.segment(vaddr)
	if s == nil {
		return nil, fmt.Errorf("uprobe: %s: %#x: %w", b.Path, vaddr, ErrNotMapped)
	}
	if n < 0 || n > MaxFuncSize+16 {
		return nil, &FormatError{Path: b.Path, Why: fmt.Sprintf("read of %d bytes at %#x", n, vaddr)}
	}
	if rest := s.Vaddr + s.Filesz - vaddr; uint64(n) > rest {
		n = int(rest)
	}
	buf := make([]byte, n)
	if _, err := b.r.ReadAt(buf, int64(vaddr-s.Vaddr+s.Off)); err != nil && err != io.EOF {
		return nil, &FormatError{Path: b.Path, Why: fmt.Sprintf("read %#x: %v", vaddr, err)}
	}
	return buf, nil
}

// Func finds a function by name.
func (b *Binary) Func(name string) (Func, bool) {
	for _, f := range b.Funcs {
		if f.Name == name {
			return f, true
		}
	}
	// Versioned dynamic names ("memcpy@@GLIBC_2.14") answer to their base.
	for _, f := range b.Funcs {
		if base, _, ok := strings.Cut(f.Name, "@"); ok && base == name {
			return f, true
		}
	}
	return Func{}, false
}

// FuncAt finds the function holding vaddr.
func (b *Binary) FuncAt(vaddr uint64) (Func, bool) {
	i := sort.Search(len(b.Funcs), func(i int) bool { return b.Funcs[i].Addr > vaddr }) - 1
	if i >= 0 && vaddr-b.Funcs[i].Addr < b.Funcs[i].Size {
		return b.Funcs[i], true
	}
	return Func{}, false
}
