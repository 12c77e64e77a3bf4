package uprobe

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// USDT is one .note.stapsdt probe.
type USDT struct {
	Provider string `json:"provider"`
	Name     string `json:"name"`
	Addr     Hex    `json:"addr"` // probe site (virtual, link-time)
	// Semaphore is the address of the probe's enable counter (0: none);
	// SemaphoreOffset its file offset, the kernel's ref_ctr_offset.
	Semaphore       Hex    `json:"semaphore"`
	SemaphoreOffset Hex    `json:"semaphore_offset,omitempty"`
	Args            string `json:"args"`
}

const ntStapsdt = 3

// USDT parses the file's .note.stapsdt probes. Addresses are adjusted for
// prelinking by .stapsdt.base, as libbpf and SystemTap do. Malformed notes are
// an error naming the offset.
func (b *Binary) USDT() ([]USDT, error) {
	sec := b.ef.Section(".note.stapsdt")
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, &FormatError{Path: b.Path, Why: ".note.stapsdt: " + err.Error()}
	}
	var baseAddr uint64
	hasBase := false
	if s := b.ef.Section(".stapsdt.base"); s != nil {
		baseAddr, hasBase = s.Addr, true
	}
	ptr := 8
	if b.ef.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	bo := b.ef.ByteOrder
	word := func(p []byte) uint64 {
		if ptr == 8 {
			return bo.Uint64(p)
		}
		return uint64(bo.Uint32(p))
	}
	var out []USDT
	for off := 0; off < len(data); {
		bad := func(why string) error {
			return &FormatError{Path: b.Path, Why: fmt.Sprintf(".note.stapsdt+%#x: %s", off, why)}
		}
		if len(data)-off < 12 {
			return nil, bad("truncated note header")
		}
		namesz, descsz, typ := int(bo.Uint32(data[off:])), int(bo.Uint32(data[off+4:])), bo.Uint32(data[off+8:])
		p := off + 12
		nameEnd := p + align4(namesz)
		if namesz < 0 || descsz < 0 || nameEnd > len(data) || nameEnd+descsz > len(data) || nameEnd < p {
			return nil, bad("note size past the section")
		}
		name := data[p : p+namesz]
		desc := data[nameEnd : nameEnd+descsz]
		next := nameEnd + align4(descsz)
		if typ == ntStapsdt && bytes.Equal(bytes.TrimRight(name, "\x00"), []byte("stapsdt")) {
			if len(desc) < 3*ptr {
				return nil, bad("descriptor shorter than three addresses")
			}
			pc, base, sema := word(desc), word(desc[ptr:]), word(desc[2*ptr:])
			strs := bytes.SplitN(desc[3*ptr:], []byte{0}, 4)
			if len(strs) < 3 {
				return nil, bad("provider, name and arguments not NUL-terminated")
			}
			if hasBase {
				pc += baseAddr - base
				if sema != 0 {
					sema += baseAddr - base
				}
			}
			u := USDT{Provider: printable(strs[0]), Name: printable(strs[1]), Args: printable(strs[2]), Addr: Hex(pc), Semaphore: Hex(sema)}
			if sema != 0 {
				if fo, err := b.FileOffset(sema); err == nil {
					u.SemaphoreOffset = Hex(fo)
				}
			}
			out = append(out, u)
		}
		if next <= off {
			break
		}
		off = next
	}
	return out, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

// printable keeps strings from a binary safe to print: non-printable bytes
// become '?'.
func printable(b []byte) string {
	o := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		o[i] = c
	}
	return string(o)
}
