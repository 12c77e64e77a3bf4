//go:build linux

package kimage

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Names as Debian's archives list them (bookworm-security, trixie, sid).
func TestPickVersionPackage(t *testing.T) {
	names := []string{
		"linux-image-6.12.107+deb12-amd64", "linux-image-6.12.117+deb12-amd64", "linux-image-6.12.9+deb12-amd64",
		"linux-image-6.12.117+deb12-amd64-dbg", "linux-image-6.12.117+deb12-amd64-unsigned",
		"linux-image-6.12.117+deb12-cloud-amd64", "linux-image-6.12.117+deb12-rt-amd64", "linux-image-6.12-amd64-dbg",
		"linux-image-6.1.0-57-amd64", "linux-image-6.1.0-9-amd64", "linux-image-7.2.13+deb14-amd64",
		"linux-image-6.12.117+deb12-arm64",
	}
	for _, c := range []struct{ version, flavour, want string }{
		{"6.12", "amd64", "linux-image-6.12.117+deb12-amd64"},
		{"6.12.107", "amd64", "linux-image-6.12.107+deb12-amd64"},
		{"6.12", "cloud-amd64", "linux-image-6.12.117+deb12-cloud-amd64"},
		{"6.12", "arm64", "linux-image-6.12.117+deb12-arm64"},
		{"6.1", "amd64", "linux-image-6.1.0-57-amd64"},
		{"7.2", "amd64", "linux-image-7.2.13+deb14-amd64"},
		{"7.1", "amd64", ""},
		{"6.1", "arm64", ""},
	} {
		if got := pickVersionPackage(names, c.version, c.flavour); got != c.want {
			t.Errorf("%s %s: got %q, want %q", c.version, c.flavour, got, c.want)
		}
	}
	for _, v := range []string{"", "6", "6.12.x", "../6.1", "6.12 "} {
		if validVersion(v) {
			t.Errorf("validVersion(%q) = true", v)
		}
	}
}

// A Debian 7.x kernel: the image in linux-binary-<release>, config and
// System.map in linux-base-<release>, both under usr/lib/modules/<release>/.
func TestReadDebSplitPackages(t *testing.T) {
	dir := t.TempDir()
	image := []byte("not really an image")
	sysmap := "ffffffff81000000 T _text\n"
	bin := buildDeb(t, "xz", map[string][]byte{"usr/lib/modules/7.2.13+deb14-amd64/vmlinuz": image})
	base := buildDeb(t, "xz", map[string][]byte{
		"usr/lib/modules/7.2.13+deb14-amd64/config":     []byte(sampleConfig),
		"usr/lib/modules/7.2.13+deb14-amd64/System.map": []byte(sysmap),
	})
	binP := filepath.Join(dir, "linux-binary-7.2.13+deb14-amd64_7.2.13-1_amd64.deb")
	baseP := filepath.Join(dir, "linux-base-7.2.13+deb14-amd64_7.2.13-1_amd64.deb")
	if err := os.Rename(bin, binP); err != nil {
		t.Fatal(err)
	}
	dk, err := ReadDeb(binP)
	if err != nil {
		t.Fatal(err)
	}
	if dk.Version != "7.2.13+deb14-amd64" || !bytes.Equal(dk.Vmlinuz, image) || dk.Config != nil {
		t.Errorf("alone: version %q, image %d bytes, config %d bytes", dk.Version, len(dk.Vmlinuz), len(dk.Config))
	}
	if err := os.Rename(base, baseP); err != nil {
		t.Fatal(err)
	}
	if dk, err = ReadDeb(binP); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dk.Vmlinuz, image) || string(dk.Config) != sampleConfig || string(dk.SystemMap) != sysmap {
		t.Errorf("with linux-base: image %d bytes, config %q, map %q", len(dk.Vmlinuz), dk.Config, dk.SystemMap)
	}
}
