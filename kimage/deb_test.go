package kimage

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// buildDeb makes a kernel-like .deb with dpkg-deb (an independent builder).
func buildDeb(t *testing.T, comp string, files map[string][]byte) string {
	t.Helper()
	dpkg := needTool(t, "dpkg-deb")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755)
	os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(
		"Package: linux-image-6.1.0-99-test\nVersion: 6.1.999-1\nArchitecture: amd64\nMaintainer: kboost tests <t@example.invalid>\nDescription: test kernel\n"), 0o644)
	for name, data := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, data, 0o644)
	}
	out := filepath.Join(t.TempDir(), "k_"+comp+".deb")
	run(t, "", dpkg, "--root-owner-group", "-Z"+comp, "--build", root, out)
	return out
}

func TestReadDeb(t *testing.T) {
	elfPath := buildKernelLike(t, 64)
	elfBytes, _ := os.ReadFile(elfPath)
	vmlinuz := makeBzImage(sizeAppend(xzCompress(t, elfBytes, "--check=crc32", "--x86", "--lzma2=preset=0"), len(elfBytes)), "6.1.0-99-test (x) #1")
	sysmap := "ffffffff81000000 T _text\nffffffff81000010 T func_x\n"
	placeholder := "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"
	for _, comp := range []string{"xz", "gzip", "zstd"} {
		for _, realMap := range []bool{false, true} {
			m := placeholder
			if realMap {
				m = sysmap
			}
			deb := buildDeb(t, comp, map[string][]byte{
				"boot/vmlinuz-6.1.0-99-test":    vmlinuz,
				"boot/config-6.1.0-99-test":     []byte(sampleConfig),
				"boot/System.map-6.1.0-99-test": []byte(m),
				"lib/modules/6.1.0-99-test/x":   []byte("module"),
			})
			dk, err := ReadDeb(deb)
			if err != nil {
				t.Fatalf("%s: %v", comp, err)
			}
			if dk.Version != "6.1.0-99-test" || !bytes.Equal(dk.Vmlinuz, vmlinuz) || string(dk.Config) != sampleConfig {
				t.Errorf("%s: got version %q, vmlinuz %d bytes, config %d bytes", comp, dk.Version, len(dk.Vmlinuz), len(dk.Config))
			}
			if realMap != (dk.SystemMap != nil) || (realMap && string(dk.SystemMap) != sysmap) {
				t.Errorf("%s realMap=%v: SystemMap %q", comp, realMap, dk.SystemMap)
			}
			f, err := Open(deb)
			if err != nil {
				t.Fatalf("%s: Open: %v", comp, err)
			}
			if f.Kind != KindDeb || f.Arch.Name != "x86-64" || f.KernelVersion != "6.1.0-99-test" || !f.Config.Bool("KPROBES") {
				t.Errorf("%s: Open gave %v %v %q", comp, f.Kind, f.Arch, f.KernelVersion)
			}
			// The ELF has its own symbols, which win over the map.
			if _, ok := f.Symbols.ByName("bug_site"); !ok {
				t.Errorf("%s: ELF symbols missing", comp)
			}
		}
	}
	// A package without a kernel (e.g. the meta package).
	deb := buildDeb(t, "xz", map[string][]byte{"usr/share/doc/x/README": []byte("hi")})
	if _, err := ReadDeb(deb); !errors.Is(err, ErrNoKernel) || !strings.Contains(err.Error(), "meta package") {
		t.Errorf("no kernel: %v", err)
	}
}

func TestReadAr(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(arMagic)
	add := func(name, data string) {
		h := []byte(strings.Repeat(" ", 60))
		copy(h, name+"/")
		copy(h[48:], []byte(strings.TrimSpace(strings.Repeat(" ", 0))+itoa(len(data))))
		h[58], h[59] = '`', '\n'
		b.Write(h)
		b.WriteString(data)
		if len(data)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	add("debian-binary", "2.0\n")
	add("odd", "abc")
	add("x", "12")
	ms, err := ReadAr(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	data := func(m ArMember) string {
		d, _ := io.ReadAll(m.Open())
		return string(d)
	}
	if len(ms) != 3 || ms[0].Name != "debian-binary" || data(ms[1]) != "abc" || data(ms[2]) != "12" {
		t.Fatalf("members %+v", ms)
	}
	// Truncation is a typed error, not a panic.
	for n := len(arMagic); n < b.Len(); n += 7 {
		if _, err := ReadAr(bytes.NewReader(b.Bytes()[:n]), int64(n)); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("truncated at %d: %v", n, err)
		}
	}
	if _, err := ReadDebBytes(b.Bytes()); !errors.Is(err, ErrFormat) {
		t.Errorf("ar without data.tar: %v", err)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}
