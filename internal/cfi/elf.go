package cfi

import (
	"debug/elf"
	"fmt"
)

// FromELF indexes f's .eh_frame (an error wrapping ErrNoFDE when f has none).
func FromELF(f *elf.File) (*Table, error) {
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
