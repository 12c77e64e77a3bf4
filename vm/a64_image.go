package vm

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// ARM64ImageTables returns the jump-label sites and exception-table entries
// of the arm64 kernel in the package deb, as kimage.KernelTables locates them
// in its Image (by the ADRP+ADD pairs of the functions that walk each table,
// named by the package's kallsyms dump: DebKallsyms, booting the kernel once
// when the dump is not cached; cfg chooses the QEMU settings of that boot).
// The Image must map onto the kernel rep was recorded from: see
// CheckImageMatches. dk is the package as kimage.ReadDeb read it (nil: read
// deb).
func ARM64ImageTables(ctx context.Context, deb string, dk *kimage.DebKernel, cfg Config, rep *guest.ARM64Report) (*guest.ARM64Tables, error) {
	cfg.Arch = ARM64
	if dk == nil {
		var err error
		if dk, err = kimage.ReadDeb(deb); err != nil {
			return nil, err
		}
	}
	ks, err := DebKallsyms(ctx, deb, cfg)
	if err != nil {
		return nil, err
	}
	syms, err := kimage.LoadSymbols(ks)
	if err != nil {
		return nil, fmt.Errorf("vm: kallsyms of %s: %w", filepath.Base(deb), err)
	}
	f, err := kimage.OpenBytes(dk.Vmlinuz)
	if err != nil {
		return nil, fmt.Errorf("vm: %s: %w", filepath.Base(deb), err)
	}
	defer f.Close()
	// The configuration places the Image (with its relocations) and sizes
	// the BUG entries.
	if f.Config, err = kimage.ParseKConfig(dk.Config); err != nil {
		return nil, fmt.Errorf("vm: config of %s: %w", filepath.Base(deb), err)
	}
	f.SetSymbols(syms)
	base, _, ok := f.ARM64Base()
	if !ok {
		return nil, fmt.Errorf("vm: %s: the arm64 Image's load address is unknown", filepath.Base(deb))
	}
	if err := CheckImageMatches(f.Image(), base, rep); err != nil {
		return nil, err
	}
	tabs, err := kimage.KernelTables(f)
	if err != nil {
		return nil, fmt.Errorf("vm: %s: %w", filepath.Base(deb), err)
	}
	return tablesForPrediction(tabs)
}

// tablesForPrediction keeps what the arm64 recorder's predictions use from
// kimage's tables: the jump-label sites (which must have been found) and the
// exception-table entries (ExTableUnknown when they were not: the 7.2 Image's
// table is not located yet).
func tablesForPrediction(tabs *kimage.Tables) (*guest.ARM64Tables, error) {
	if !tabs.JumpLabel.Known() {
		return nil, fmt.Errorf("vm: %s", &tabs.JumpLabel)
	}
	t := &guest.ARM64Tables{JumpLabels: append([]uint64{}, tabs.JumpLabel.Addrs.Addrs()...)}
	if tabs.ExTable.Known() {
		t.ExTable = append([]uint64{}, tabs.ExTable.Addrs.Addrs()...)
	} else {
		t.ExTableUnknown = true
	}
	return t, nil
}

// CheckImageMatches checks that a kernel image loaded at base (its byte 0)
// is the kernel a record was made from: of the words of the recorded
// functions outside the init text (bytes read from /proc/kcore), at least
// nine in ten must equal the image's at the same address (boot-time patching
// of ftrace entries, alternatives and jump labels changes a few).
func CheckImageMatches(img []byte, base uint64, rep *guest.ARM64Report) error {
	same, checked := 0, 0
	for _, f := range rep.Funcs {
		code, err := hex.DecodeString(f.Bytes)
		if err != nil || f.Addr < base || f.Init {
			continue
		}
		off := f.Addr - base
		if off > uint64(len(img)) || uint64(len(code)) > uint64(len(img))-off {
			continue
		}
		for i := 0; i+4 <= len(code); i += 4 {
			checked++
			if bytes.Equal(img[off+uint64(i):off+uint64(i)+4], code[i:i+4]) {
				same++
			}
		}
	}
	if checked == 0 || same < checked*9/10 {
		return fmt.Errorf("vm: the kernel image at %#x does not map onto the recorded kernel (%d of %d words equal)", base, same, checked)
	}
	return nil
}
