package loader

import (
	"bytes"
	"testing"

	"github.com/kboost/kboost/kimage"
)

// TestMemoryELF reads the synthetic ELF back with package kimage.
func TestMemoryELF(t *testing.T) {
	text := []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}
	data := bytes.Repeat([]byte{7}, 100)
	f, err := kimage.OpenBytes(MemoryELF([]MemSection{
		{Name: ".text", Addr: 0xffffffff81000000, Data: text, Exec: true},
		{Name: ".rodata", Addr: 0xffffffff82000000, Data: data},
	}))
	if err != nil {
		t.Fatal(err)
	}
	if f.Arch == nil || f.Arch.PtrSize != 8 {
		t.Fatalf("arch %+v", f.Arch)
	}
	b, err := f.ReadAt(0xffffffff81000001, 4)
	if err != nil || !bytes.Equal(b, text[1:]) {
		t.Errorf("text: %x %v", b, err)
	}
	if s, ok := f.SectionAt(0xffffffff81000000); !ok || !s.Exec {
		t.Errorf("text section %+v", s)
	}
	if s, ok := f.SectionAt(0xffffffff82000010); !ok || s.Exec {
		t.Errorf("rodata section %+v", s)
	}
	if b, err := f.ReadAt(0xffffffff82000000+96, 4); err != nil || !bytes.Equal(b, data[96:]) {
		t.Errorf("rodata: %x %v", b, err)
	}
	if _, err := f.ReadAt(0xffffffff82000000+98, 4); err == nil {
		t.Error("read past the end of a section")
	}
}
