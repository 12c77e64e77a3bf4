package loader

import (
	"bytes"
	"encoding/binary"
)

// MemSection is one range of kernel memory to wrap as an ELF section.
type MemSection struct {
	Name string
	Addr uint64
	Data []byte
	Exec bool
}

// MemoryELF builds a minimal ELF64 x86-64 executable whose sections are the
// given memory ranges, so that package kimage can read a live kernel's memory
// (from /proc/kcore) the way it reads a vmlinux.
func MemoryELF(secs []MemSection) []byte {
	const ehsize, shentsize = 64, 64
	var shstr bytes.Buffer
	shstr.WriteByte(0)
	nameOff := make([]uint32, len(secs)+1)
	for i, s := range secs {
		nameOff[i] = uint32(shstr.Len())
		shstr.WriteString(s.Name)
		shstr.WriteByte(0)
	}
	nameOff[len(secs)] = uint32(shstr.Len())
	shstr.WriteString(".shstrtab\x00")

	var body bytes.Buffer
	offs := make([]uint64, len(secs))
	for i, s := range secs {
		for (ehsize+body.Len())%16 != 0 {
			body.WriteByte(0)
		}
		offs[i] = uint64(ehsize + body.Len())
		body.Write(s.Data)
	}
	strOff := uint64(ehsize + body.Len())
	body.Write(shstr.Bytes())
	for (ehsize+body.Len())%8 != 0 {
		body.WriteByte(0)
	}
	shoff := uint64(ehsize + body.Len())
	shnum := len(secs) + 2

	var out bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { _ = binary.Write(&out, le, v) }
	out.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	w(uint16(2))  // ET_EXEC
	w(uint16(62)) // EM_X86_64
	w(uint32(1))
	w(uint64(0)) // entry
	w(uint64(0)) // phoff
	w(shoff)
	w(uint32(0))
	w(uint16(ehsize))
	w(uint16(56))
	w(uint16(0))
	w(uint16(shentsize))
	w(uint16(shnum))
	w(uint16(shnum - 1)) // shstrndx
	out.Write(body.Bytes())
	sh := func(name, typ uint32, flags, addr, off, size, align uint64) {
		w(name)
		w(typ)
		w(flags)
		w(addr)
		w(off)
		w(size)
		w(uint32(0))
		w(uint32(0))
		w(align)
		w(uint64(0))
	}
	sh(0, 0, 0, 0, 0, 0, 0)
	for i, s := range secs {
		flags := uint64(2) // SHF_ALLOC
		if s.Exec {
			flags |= 4
		} else {
			flags |= 1
		}
		sh(nameOff[i], 1, flags, s.Addr, offs[i], uint64(len(s.Data)), 16)
	}
	sh(nameOff[len(secs)], 3, 0, 0, strOff, uint64(shstr.Len()), 1)
	return out.Bytes()
}
