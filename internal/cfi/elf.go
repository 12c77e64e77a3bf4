package cfi

import (
	"debug/elf"
	"fmt"
)

// elfReaders read the unwind tables of other formats (per-arch files):
// the first that finds its table in a file serves the file.
var elfReaders []func(*elf.File) (t *Table, found bool, err error)

// FromELF indexes f's .eh_frame (an error wrapping ErrNoFDE when f has
// none), or the table of another format that f has instead (32-bit ARM's
// .ARM.exidx).
func FromELF(f *elf.File) (*Table, error) {
	for _, read := range elfReaders {
		if t, ok, err := read(f); ok {
			return t, err
		}
	}
	fr := f.Section(".eh_frame")
	if fr == nil || fr.Type == elf.SHT_NOBITS {
		return nil, fmt.Errorf("%w: no .eh_frame", ErrNoFDE)
	}
	data, err := fr.Data()
	if err != nil {
		return nil, &FormatError{Section: ".eh_frame", What: err.Error()}
	}
	var hdr Section
	if h := f.Section(".eh_frame_hdr"); h != nil && h.Type != elf.SHT_NOBITS {
		if b, err := h.Data(); err == nil {
			hdr = Section{Data: b, Addr: h.Addr}
		}
	}
	ptr := 8
	if f.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	return New(Section{Data: data, Addr: fr.Addr}, hdr, ptr)
}
