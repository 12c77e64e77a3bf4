package kimage

import (
	"bytes"
	"errors"
	"testing"
)

// typed reports whether err wraps one of the package's sentinels.
func typed(err error) bool {
	for _, s := range []error{ErrFormat, ErrCorrupt, ErrUnsupportedArch, ErrUnsupportedCompression,
		ErrNoKernel, ErrPlaceholderMap, ErrKptrRestrict} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

func FuzzParseSymbolMap(f *testing.F) {
	f.Add([]byte(sampleMap))
	f.Add([]byte("0000000000000000 T x\n"))
	f.Add([]byte("ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"))
	f.Add([]byte("ffffffff81000000 t a\t[m]\nffffffff81000000 t b\t[m]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseSymbolMap(bytes.NewReader(b))
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for s := range st.All() {
			got, off, ok := st.Lookup(s.Addr)
			if !ok || got.Addr+off != s.Addr {
				t.Fatalf("Lookup(%#x) of an existing symbol = %+v %d %v", s.Addr, got, off, ok)
			}
			if _, ok := st.ByName(s.Name); !ok {
				t.Fatalf("ByName(%q) failed", s.Name)
			}
		}
		for range st.Funcs() {
		}
	})
}

func FuzzParseKConfig(f *testing.F) {
	f.Add([]byte(sampleConfig))
	f.Add([]byte("# CONFIG_A is not set\nCONFIG_B=\"x\\\"\"\n"))
	f.Add([]byte{0x1F, 0x8B, 8, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseKConfig(b)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		c.Bool("X")
		c.Value("CONFIG_X")
	})
}

func FuzzReadDeb(f *testing.F) {
	f.Add([]byte(arMagic + "debian-binary/  0           0     0     100644  4         `\n2.0\n"))
	f.Add([]byte(arMagic))
	f.Add([]byte(arMagic + "data.tar.xz/    0           0     0     100644  12        `\n\xfd7zXZ\x00\x00\x01i\"\xde6"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ReadDebBytes(b); err != nil && !typed(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzExtractVmlinux(f *testing.F) {
	f.Add(makeBzImage([]byte{0xFD, '7', 'z', 'X', 'Z', 0, 0, 1, 0x69, 0x22, 0xDE, 0x36, 2, 1, 4, 0}, "v"))
	f.Add(makeBzImage([]byte{0x1F, 0x8B, 8, 0, 0, 0, 0, 0}, "v"))
	f.Add(makeBzImage([]byte{0x28, 0xB5, 0x2F, 0xFD, 0, 0, 0, 0}, "v"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ExtractVmlinux(b); err != nil && !typed(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzDecodeXZ(f *testing.F) {
	f.Add([]byte{0xFD, '7', 'z', 'X', 'Z', 0, 0, 1, 0x69, 0x22, 0xDE, 0x36})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeXZ(b, 0); err != nil && !typed(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzOpenBytes(f *testing.F) {
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Add([]byte(arMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := OpenBytes(b)
		if err != nil {
			if !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		for _, s := range file.Sections {
			s.Data()
		}
		if file.Arch != nil {
			KernelTables(file)
		}
	})
}

func FuzzParsePoint(f *testing.F) {
	f.Add("vfs_read+0x10")
	f.Add("0xffffffff81000000")
	f.Add("deadbeef+0") // a symbol that printed as "deadbeef", an address
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePoint(s)
		if err != nil {
			return
		}
		if !p.IsAddr && p.Sym == "" {
			t.Fatalf("ParsePoint(%q) = empty point without error", s)
		}
		// A point prints as text that names it again.
		if q, err := ParsePoint(p.String()); err != nil || q != p {
			t.Fatalf("ParsePoint(%q) = %+v, printed %q parses to %+v (%v)", s, p, p.String(), q, err)
		}
	})
}

func FuzzDecodeLZMA2(f *testing.F) {
	f.Add([]byte{0xE0, 0x00, 0x05, 0x00, 0x08, 0x5D, 0x00, 0x30, 0x98, 0x88, 0x40, 0x00, 0x00, 0x00})
	f.Add([]byte{0x01, 0x00, 0x02, 'a', 'b', 'c', 0x00})
	// A real raw LZMA2 stream of machine code, from the xz tool.
	f.Add(xzCompress(f, x86Sample(f, 4096), "--format=raw", "--lzma2=preset=0,lc=1,lp=1,pb=1"))
	f.Add(xzCompress(f, x86Sample(f, 2048), "--format=raw", "--lzma2=preset=0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, n, err := decodeLZMA2(b, nil, 1<<20)
		if err == nil && (n > len(b) || len(out) > 1<<20) {
			t.Fatalf("consumed %d of %d, produced %d", n, len(b), len(out))
		}
	})
}
