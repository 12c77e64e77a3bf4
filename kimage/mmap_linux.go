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
