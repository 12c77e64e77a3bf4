//go:build linux

package loader

import (
	"debug/elf"
	"fmt"
	"os"
)

// Kcore reads kernel virtual memory through /proc/kcore (root only).
type Kcore struct {
	f    *os.File
	segs []elf.ProgHeader
}

// OpenKcore opens /proc/kcore and reads its segment table.
func OpenKcore() (*Kcore, error) {
	f, err := os.Open("/proc/kcore")
	if err != nil {
		if os.IsPermission(err) {
			return nil, fmt.Errorf("/proc/kcore: %w", ErrNotRoot)
		}
		return nil, fmt.Errorf("loader: %w (the kernel needs CONFIG_PROC_KCORE; lockdown forbids it)", err)
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("/proc/kcore: %w", err)
	}
	k := &Kcore{f: f}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD {
			k.segs = append(k.segs, p.ProgHeader)
		}
	}
	return k, nil
}

// Read returns n bytes at kernel address addr.
func (k *Kcore) Read(addr uint64, n int) ([]byte, error) {
	for _, s := range k.segs {
		if addr >= s.Vaddr && addr+uint64(n) <= s.Vaddr+s.Memsz {
			b := make([]byte, n)
			if _, err := k.f.ReadAt(b, int64(s.Off+addr-s.Vaddr)); err != nil {
				return nil, fmt.Errorf("kcore: read %d bytes at %#x: %w", n, addr, err)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("kcore: %#x (+%d) is in no segment", addr, n)
}

// Close closes /proc/kcore.
func (k *Kcore) Close() error { return k.f.Close() }
