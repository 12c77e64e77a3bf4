package kimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

const arMagic = "!<arch>\n"

// ArMember is one member of an ar archive.
type ArMember struct {
	Name   string
	Offset int64 // offset of the data in the archive
	Size   int64
	r      io.ReaderAt
}

// Open returns a reader of the member's data.
func (m ArMember) Open() *io.SectionReader { return io.NewSectionReader(m.r, m.Offset, m.Size) }

// ReadAr lists the members of an ar archive (the container of a .deb) of the
// given total size; their data are read on demand through Open.
func ReadAr(r io.ReaderAt, size int64) ([]ArMember, error) {
	const what = "ar member header"
	var magic [len(arMagic)]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != arMagic {
		return nil, &FormatError{What: "ar archive", Off: 0, Why: `no "!<arch>" magic`, Err: ErrFormat}
	}
	var out []ArMember
	p := int64(len(arMagic))
	var h [60]byte
	for p < size {
		if _, err := r.ReadAt(h[:1], p); err != nil {
			return nil, corrupt(what, p, "read: %v", err)
		}
		if h[0] == '\n' { // padding byte after an odd-sized member
			p++
			continue
		}
		if p+60 > size {
			return nil, corrupt(what, p, "truncated header")
		}
		if _, err := r.ReadAt(h[:], p); err != nil {
			return nil, corrupt(what, p, "read: %v", err)
		}
		if h[58] != '`' || h[59] != '\n' {
			return nil, corrupt(what, p, "bad header terminator")
		}
		name := strings.TrimRight(string(h[0:16]), " ")
		name = strings.TrimSuffix(name, "/")
		n, err := strconv.ParseInt(strings.TrimSpace(string(h[48:58])), 10, 64)
		if err != nil || n < 0 {
			return nil, corrupt(what, p+48, "bad size field %q", h[48:58])
		}
		p += 60
		if n > size-p {
			return nil, corrupt(what, p-60, "member %q (%d bytes) runs past end of archive", name, n)
		}
		out = append(out, ArMember{Name: name, Offset: p, Size: n, r: r})
		p += n
	}
	return out, nil
}

// DebKernel is what a Debian linux-image package holds for kboost.
type DebKernel struct {
	Version   string // kernel release from the file names, e.g. "6.1.0-57-amd64"
	Vmlinuz   []byte // ./boot/vmlinuz-* (x86 bzImage, arm64 Image, ...)
	Config    []byte // ./boot/config-*, nil if absent
	SystemMap []byte // ./boot/System.map-*, nil if absent or Debian's placeholder
}

// ReadDeb reads the kernel files of a Debian kernel package on disk. It streams
// data.tar.* and stops as soon as the three ./boot files are found; only those
// files are kept in memory.
//
// A Debian 7.x linux-binary-<release> package holds only the image: its
// config and System.map are then read from the linux-base-<release> package
// beside it (same directory, any version), when there is one.
func ReadDeb(p string) (*DebKernel, error) {
	dk, err := readDebFile(p)
	if err != nil || dk.Config != nil {
		return dk, err
	}
	name := filepath.Base(p)
	if rest, ok := strings.CutPrefix(name, "linux-binary-"); ok {
		pkg, _, _ := strings.Cut(rest, "_")
		got, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "linux-base-"+pkg+"_*.deb"))
		if len(got) > 0 {
			base, err := readDebFiles(got[len(got)-1], false)
			if err != nil {
				return nil, err
			}
			dk.Config, dk.SystemMap = base.Config, base.SystemMap
		}
	}
	return dk, nil
}

func readDebFile(p string) (*DebKernel, error) { return readDebFiles(p, true) }

func readDebFiles(p string, needImage bool) (*DebKernel, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	dk, err := readDeb(fh, st.Size(), needImage)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return dk, nil
}

// ReadDebBytes is ReadDeb for a package in memory.
func ReadDebBytes(b []byte) (*DebKernel, error) {
	return readDeb(bytes.NewReader(b), int64(len(b)), true)
}

func readDeb(ra io.ReaderAt, size int64, needImage bool) (*DebKernel, error) {
	members, err := ReadAr(ra, size)
	if err != nil {
		return nil, err
	}
	var data *ArMember
	for i := range members {
		if strings.HasPrefix(members[i].Name, "data.tar") {
			data = &members[i]
			break
		}
	}
	if data == nil {
		return nil, &FormatError{What: "Debian package", Off: -1, Why: "no data.tar.* member (is this a .deb?)", Err: ErrFormat}
	}
	var r io.Reader
	src := bufio.NewReaderSize(data.Open(), 1<<16)
	switch ext := path.Ext(data.Name); ext {
	case ".xz":
		xr, err := xz.NewReader(src)
		if err != nil {
			return nil, corrupt(data.Name, data.Offset, "%v", err)
		}
		r = xr
	case ".zst":
		zr, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, corrupt(data.Name, data.Offset, "%v", err)
		}
		defer zr.Close()
		r = zr
	case ".gz":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, corrupt(data.Name, data.Offset, "%v", err)
		}
		r = zr
	case ".tar":
		r = src
	default:
		return nil, &FormatError{What: data.Name, Off: data.Offset, Why: "compression " + ext + " not supported (xz, zst, gz are)", Err: ErrUnsupportedCompression}
	}
	dk := &DebKernel{}
	var mapSeen bool
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, corrupt(data.Name, data.Offset, "tar: %v", err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		dir, base := path.Split(name)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		var dst *[]byte
		var release string
		// Debian 7.x keeps a kernel's files under usr/lib/modules/<release>/
		// (vmlinuz in linux-binary-*, config and System.map in linux-base-*).
		if rel, ok := strings.CutPrefix(dir, "usr/lib/modules/"); ok && strings.Count(rel, "/") == 1 {
			base += "-" + strings.TrimSuffix(rel, "/")
		} else if dir != "boot/" {
			continue
		}
		switch {
		case strings.HasPrefix(base, "vmlinuz-"), strings.HasPrefix(base, "vmlinux-"):
			dst, release = &dk.Vmlinuz, base[len("vmlinuz-"):]
		case strings.HasPrefix(base, "config-"):
			dst, release = &dk.Config, base[len("config-"):]
		case strings.HasPrefix(base, "System.map-"):
			dst, release = &dk.SystemMap, base[len("System.map-"):]
			mapSeen = true
		default:
			continue
		}
		if h.Size < 0 || h.Size > maxDecompressed {
			return nil, corrupt(data.Name, data.Offset, "%s: bad size %d", name, h.Size)
		}
		buf, err := readAllHint(io.LimitReader(tr, h.Size), boundHint(int(h.Size), int(data.Size)), outputLimit(int(data.Size)), data.Name+": "+name)
		if err != nil {
			return nil, err
		}
		*dst = buf
		if dk.Version == "" {
			dk.Version = release
		}
		if dk.Vmlinuz != nil && dk.Config != nil && mapSeen {
			break
		}
	}
	if dk.Vmlinuz == nil && needImage {
		return nil, fmt.Errorf("no ./boot/vmlinuz-* in %s (is this a linux-image package, not the meta package?): %w", data.Name, ErrNoKernel)
	}
	if dk.SystemMap != nil && isPlaceholderMap(dk.SystemMap) {
		dk.SystemMap = nil
	}
	return dk, nil
}

func isPlaceholderMap(b []byte) bool {
	return len(b) < 4096 && bytes.Contains(b, []byte("The real System.map is in"))
}

// open turns the package's kernel into a File (extracting the vmlinux).
func (dk *DebKernel) open() (*File, error) {
	var vml []byte
	switch {
	case IsBzImage(dk.Vmlinuz):
		v, err := ExtractVmlinux(dk.Vmlinuz)
		if err != nil {
			return nil, err
		}
		vml = v
	case bytes.HasPrefix(dk.Vmlinuz, []byte("\x7fELF")):
		vml = dk.Vmlinuz
	case IsARM64Image(dk.Vmlinuz) || IsGzipARM64Image(dk.Vmlinuz) || IsARMZImage(dk.Vmlinuz):
		f, err := OpenBytes(dk.Vmlinuz)
		if f != nil {
			f.Kind = KindDeb
			f.KernelVersion = dk.Version
			f.Config, _ = ParseKConfig(dk.Config)
		}
		return f, err
	default:
		return nil, &FormatError{What: "Debian package vmlinuz", Off: -1, Why: "neither a bzImage, an ELF, an arm64 Image nor an ARM zImage", Err: ErrFormat}
	}
	f, err := openELF("", nil, vml)
	if err != nil {
		return nil, err
	}
	f.Kind = KindDeb
	f.KernelVersion = dk.Version
	if dk.Config != nil {
		c, err := ParseKConfig(dk.Config)
		if err != nil {
			return nil, fmt.Errorf("config in package: %w", err)
		}
		f.Config = c
	}
	if dk.SystemMap != nil && f.Symbols.Len() == 0 {
		t, err := ParseSymbolMap(bytes.NewReader(dk.SystemMap))
		if err != nil && !errors.Is(err, ErrPlaceholderMap) {
			return nil, fmt.Errorf("package System.map: %w", err)
		}
		if t != nil {
			f.Symbols = t
		}
	}
	return f, nil
}
