//go:build linux

package kimage

import (
	"bytes"
	"errors"
	"os"
	"syscall"
)

// OpenMapped is Open for an ELF file that is mapped into memory instead of
// read: sections are views of a private (copy-on-write) mapping, so nothing is
// copied and the page cache serves the bytes. The sections' Data, ReadAt
// results and Image are valid only until Close. Other inputs are opened as Open
// does.
func OpenMapped(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var head [4]byte
	n, _ := fh.ReadAt(head[:], 0)
	st, err := fh.Stat()
	if err != nil || n < 4 || !bytes.Equal(head[:], []byte("\x7fELF")) || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() != int64(int(st.Size())) {
		fh.Close()
		return Open(path)
	}
	mem, err := syscall.Mmap(int(fh.Fd()), 0, int(st.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
	if err != nil {
		fh.Close()
		return Open(path)
	}
	f, err := openELF(path, nil, mem)
	if err != nil {
		syscall.Munmap(mem)
		fh.Close()
		return nil, err
	}
	f.closer = &mapping{mem: mem, fh: fh}
	return f, nil
}

type mapping struct {
	mem []byte
	fh  *os.File
}

func (m *mapping) Close() error {
	return errors.Join(syscall.Munmap(m.mem), m.fh.Close())
}

// mappedMapSize is the size from which a symbol map is mapped instead of read.
const mappedMapSize = 1 << 20

// readSymbolFile returns the contents of a symbol map. A regular file of at
// least mappedMapSize bytes is mapped read-only with its page tables filled
// in one call (MAP_POPULATE): on virtual machines where every page fault is
// an exit to the hypervisor, reading a kallsyms copy into fresh memory cost
// more than parsing it. The mapping is never unmapped, since the symbol
// names parsed from it are substrings of it and a symbol table lives as long
// as the process that loaded it; maps are loaded once per process.
func readSymbolFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < mappedMapSize || st.Size() != int64(int(st.Size())) {
		return os.ReadFile(path)
	}
	mem, err := syscall.Mmap(int(fh.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_POPULATE)
	if err != nil {
		return os.ReadFile(path)
	}
	return mem, nil
}
