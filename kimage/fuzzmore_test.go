package kimage

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzParseBzImage: any bytes are refused with a typed error or give a
// payload that lies inside the file, after the setup sectors.
func FuzzParseBzImage(f *testing.F) {
	f.Add(makeBzImage([]byte{0xFD, '7', 'z', 'X', 'Z', 0, 0, 1, 0x69, 0x22, 0xDE, 0x36}, "6.1.0-1-amd64"))
	f.Add(makeBzImage([]byte{0x1F, 0x8B, 8, 0, 0, 0, 0, 0}, ""))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseBzImage(b)
		if err != nil {
			var fe *FormatError
			if !typed(err) || !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		sects := int(b[bzSetupSects])
		if sects == 0 {
			sects = 4
		}
		if info.PayloadLen <= 0 || info.PayloadOffset < (sects+1)*512 || info.PayloadOffset+info.PayloadLen > len(b) {
			t.Fatalf("payload [%#x,+%#x) of a %d-byte file with %d setup sectors", info.PayloadOffset, info.PayloadLen, len(b), sects)
		}
		if len(info.KernelVersion) >= 512 || strings.IndexByte(info.KernelVersion, 0) >= 0 {
			t.Fatalf("kernel version %q", info.KernelVersion)
		}
	})
}

// FuzzReadAr: any bytes are refused with a typed error or list members that
// follow one another inside the archive, each readable in full.
func FuzzReadAr(f *testing.F) {
	f.Add([]byte(arMagic + "debian-binary/  0           0     0     100644  4         `\n2.0\n"))
	f.Add([]byte(arMagic + "a/              0           0     0     100644  1         `\nx\nb/              0           0     0     100644  0         `\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := ReadAr(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		end := int64(len(arMagic))
		for _, m := range ms {
			if m.Offset < end+60 || m.Size < 0 || m.Offset+m.Size > int64(len(b)) {
				t.Fatalf("member %q at [%d,+%d), previous ended at %d, archive %d bytes", m.Name, m.Offset, m.Size, end, len(b))
			}
			if n, err := m.Open().Read(make([]byte, min(m.Size, 64))); m.Size > 0 && (err != nil || n != int(min(m.Size, 64))) {
				t.Fatalf("member %q: read %d bytes, %v", m.Name, n, err)
			}
			end = m.Offset + m.Size
		}
	})
}

// FuzzParseCaps: a --cpu-caps list is refused naming the unknown cpucap, or
// gives a set that holds the always-on cpucaps and that the names of its own
// members give again.
func FuzzParseCaps(f *testing.F) {
	f.Add("workaround_device_load_acquire, ARM64_HAS_LSE_ATOMICS,HAS_PAN")
	f.Add("HAS_ADDRESS_AUTH_ARCH_QARMA5")
	f.Add("none")
	f.Add(",,NO_SUCH_CAP")
	n := &A64CapNames{Names: a64Caps61}
	f.Fuzz(func(t *testing.T, list string) {
		s, err := n.ParseCaps(list)
		if err != nil {
			var ce *CapError
			if !errors.As(err, &ce) || ce.Name == "" {
				t.Fatalf("%q: error %v", list, err)
			}
			if _, ok := n.Lookup(ce.Name); ok {
				t.Fatalf("%q: %q refused but known", list, ce.Name)
			}
			return
		}
		var names []string
		for _, c := range s.Caps() {
			names = append(names, n.Name(c))
		}
		for _, a := range A64CapsAlways {
			c, _ := n.Lookup(a)
			if !s.Has(c) {
				t.Fatalf("%q: %s missing from %v", list, a, names)
			}
		}
		again, err := n.ParseCaps(strings.Join(names, ","))
		if err != nil || again != s {
			t.Fatalf("%q: its own names %v give %v (%v)", list, names, again.Caps(), err)
		}
	})
}

// FuzzX86KernelTables: a kernel-like x86 ELF (built by gcc from
// kernelLikeAsm, 64- and 32-bit) with any bytes written over any part of it
// opens or is refused with a typed error, and its special-site tables are
// read or refused with one; a symbol found by address is found by name.
func FuzzX86KernelTables(f *testing.F) {
	var imgs [][]byte
	for _, bits := range []int{64, 32} {
		b, err := os.ReadFile(buildKernelLike(f, bits))
		if err != nil {
			f.Fatal(err)
		}
		imgs = append(imgs, b)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint32(0x18), false)
	f.Add(bytes.Repeat([]byte{0}, 64), uint32(0x1000), true)
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00\x80"), uint32(0x28), false)
	f.Fuzz(func(t *testing.T, data []byte, off uint32, is32 bool) {
		base := imgs[0]
		if is32 {
			base = imgs[1]
		}
		img := append([]byte(nil), base...)
		o := int(off) % len(img)
		copy(img[o:], data)
		file, err := OpenBytes(img)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if syms := file.Symbols; syms != nil {
			for s := range syms.All() {
				if got, ok := syms.ByName(s.Name); !ok || got.Name != s.Name {
					t.Fatalf("symbol %q not found by name", s.Name)
				}
			}
		}
		if file.Arch == nil {
			return
		}
		tabs, err := KernelTables(file)
		if err != nil {
			if !typed(err) {
				t.Fatalf("KernelTables: untyped error %v", err)
			}
			return
		}
		for _, x := range tabs.All() {
			_ = x.String()
		}
	})
}
