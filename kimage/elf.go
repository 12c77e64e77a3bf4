package kimage

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kboost/kboost/decode"
)

// elfArches maps the ELF machines kboost decodes to their instruction set: the
// only per-machine knowledge Open needs.
var elfArches = map[elf.Machine]*decode.Arch{
	elf.EM_X86_64:  decode.X86_64,
	elf.EM_386:     decode.I386,
	elf.EM_AARCH64: decode.ARM64,
	elf.EM_ARM:     decode.ARM, // with Thumb spans: a32_elf.go
}

func supportedMachines() string {
	return "EM_X86_64 (x86-64), EM_386 (i386), EM_AARCH64 (arm64), EM_ARM (arm and thumb)"
}

// openELF parses an ELF image either from an open file (fh) or from memory.
func openELF(path string, fh *os.File, mem []byte) (*File, error) {
	var ra io.ReaderAt
	if mem != nil {
		ra = bytes.NewReader(mem)
	} else {
		ra = fh
	}
	ef, err := elf.NewFile(ra)
	if err != nil {
		return nil, &FormatError{What: "ELF header", Off: 0, Why: err.Error(), Err: ErrCorrupt}
	}
	arch, ok := elfArches[ef.Machine]
	if !ok {
		return nil, &FormatError{What: "ELF header", Off: 0x12, Err: ErrUnsupportedArch,
			Why: fmt.Sprintf("machine %v is not supported (supported: %s)", ef.Machine, supportedMachines())}
	}
	f := &File{
		Path: path, Kind: KindELF, Arch: arch, Machine: ef.Machine.String(),
		Type: ef.Type, Entry: ef.Entry, image: mem,
	}
	if fh != nil {
		f.closer = fh
	}
	for i, s := range ef.Sections {
		if s.Type == elf.SHT_NULL {
			continue
		}
		f.Sections = append(f.Sections, Section{
			index: i,
			Name:  s.Name, Addr: s.Addr, Size: s.Size, Offset: s.Offset,
			Exec:   s.Flags&elf.SHF_EXECINSTR != 0,
			Alloc:  s.Flags&elf.SHF_ALLOC != 0,
			Write:  s.Flags&elf.SHF_WRITE != 0,
			NoBits: s.Type == elf.SHT_NOBITS,
			cache:  &sectionCache{src: ra, mem: mem},
		})
	}
	if len(f.Sections) == 0 {
		// No section headers: describe the loadable segments instead.
		for i, p := range ef.Progs {
			if p.Type != elf.PT_LOAD {
				continue
			}
			f.Sections = append(f.Sections, Section{
				Name: fmt.Sprintf("LOAD%d", i), Addr: p.Vaddr, Size: p.Filesz, Offset: p.Off,
				Exec: p.Flags&elf.PF_X != 0, Alloc: true, Write: p.Flags&elf.PF_W != 0,
				cache: &sectionCache{src: ra, mem: mem},
			})
		}
	}
	syms, err := elfSymbols(ef)
	if err != nil {
		return nil, err
	}
	f.Symbols = syms
	if ef.Machine == elf.EM_ARM {
		f.setARMSpans(ef)
	}
	f.KernelVersion = f.findLinuxBanner()
	return f, nil
}

// elfSymbols builds a SymTab from .symtab, or .dynsym when there is none.
func elfSymbols(ef *elf.File) (*SymTab, error) {
	ss, err := ef.Symbols()
	if errors.Is(err, elf.ErrNoSymbols) {
		ss, err = ef.DynamicSymbols()
	}
	if errors.Is(err, elf.ErrNoSymbols) {
		return NewSymTab(nil), nil
	}
	if err != nil {
		return nil, &FormatError{What: "ELF symbol table", Off: -1, Why: err.Error(), Err: ErrCorrupt}
	}
	out := make([]Symbol, 0, len(ss))
	for _, s := range ss {
		typ := elf.ST_TYPE(s.Info)
		if s.Name == "" || typ == elf.STT_SECTION || typ == elf.STT_FILE || s.Section == elf.SHN_UNDEF {
			continue
		}
		if ef.Machine == elf.EM_ARM {
			if _, ok := MappingSymbol(s.Name); ok {
				continue
			}
			if armThumbSym(s) {
				s.Value &^= 1 // a Thumb function's first instruction
			}
		}
		bind := elf.ST_BIND(s.Info)
		var exec, write, nobits bool
		region := int(s.Section) + 1
		if int(s.Section) < len(ef.Sections) && s.Section < elf.SHN_LORESERVE {
			sec := ef.Sections[s.Section]
			exec = sec.Flags&elf.SHF_EXECINSTR != 0
			write = sec.Flags&elf.SHF_WRITE != 0
			nobits = sec.Type == elf.SHT_NOBITS
		}
		var letter byte
		switch {
		case s.Section == elf.SHN_ABS:
			letter, region = 'A', regionAbs
		case exec:
			letter = 'T'
		case nobits:
			letter = 'B'
		case write:
			letter = 'D'
		default:
			letter = 'R'
		}
		if bind == elf.STB_WEAK {
			if exec {
				letter = 'W'
			} else {
				letter = 'V'
			}
		} else if bind == elf.STB_LOCAL {
			letter += 'a' - 'A'
		}
		out = append(out, Symbol{
			Name: s.Name, Addr: s.Value, Size: s.Size, Type: letter,
			// Untyped global code symbols (assembly entry points) count as
			// functions; untyped local ones are labels inside functions.
			Func:   typ == elf.STT_FUNC || (typ == elf.STT_NOTYPE && exec && bind != elf.STB_LOCAL),
			region: region,
		})
	}
	return NewSymTab(out), nil
}

// findLinuxBanner returns the release from the kernel's "Linux version X ..."
// banner in .rodata, or "".
func (f *File) findLinuxBanner() string {
	s, ok := f.Section(".rodata")
	if !ok || s.Size > 256<<20 {
		return ""
	}
	// Only kernels have the banner; avoid reading .rodata of ordinary programs.
	if _, ok := f.Section("__ex_table"); !ok {
		if _, ok := f.Section("__ksymtab"); !ok {
			return ""
		}
	}
	d, err := s.Data()
	if err != nil {
		return ""
	}
	const banner = "Linux version "
	i := bytes.Index(d, []byte(banner))
	if i < 0 {
		return ""
	}
	rest := d[i+len(banner):]
	if j := bytes.IndexAny(rest, " \x00\n"); j > 0 && j < 128 {
		v := string(rest[:j])
		if !strings.ContainsAny(v, "%") {
			return v
		}
	}
	return ""
}
