package vm

import (
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/cavaliergopher/cpio"
)

// File is one regular file of an initramfs.
type File struct {
	Name string      // absolute or relative path inside the archive, e.g. "/init"
	Mode fs.FileMode // permission bits; 0 means 0644
	Data []byte
}

// WriteInitramfs writes files as a gzip-compressed newc ("070701") cpio archive, the
// format the kernel unpacks into its rootfs. Parent directories are added (mode
// 0755), entries are sorted, and timestamps and owners are zero, so the same files
// always give the same bytes. Names must be clean paths without "..".
func WriteInitramfs(w io.Writer, files []File) error {
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	if err := writeCpio(zw, files); err != nil {
		return err
	}
	return zw.Close()
}

func writeCpio(w io.Writer, files []File) error {
	byName := make(map[string]*File, len(files))
	dirs := make(map[string]bool)
	for i := range files {
		f := &files[i]
		name, err := archiveName(f.Name)
		if err != nil {
			return err
		}
		if _, dup := byName[name]; dup {
			return fmt.Errorf("%w: %q twice", ErrInitramfs, f.Name)
		}
		byName[name] = f
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for d := range dirs {
		if _, clash := byName[d]; clash {
			return fmt.Errorf("%w: %q is both a file and a directory", ErrInitramfs, d)
		}
	}
	names := make([]string, 0, len(byName)+len(dirs))
	for n := range byName {
		names = append(names, n)
	}
	for d := range dirs {
		names = append(names, d)
	}
	// Sorted paths list each directory before its contents ("a" < "a/b").
	sort.Strings(names)

	cw := cpio.NewWriter(w)
	for _, n := range names {
		if f, ok := byName[n]; ok {
			perm := f.Mode.Perm()
			if perm == 0 {
				perm = 0o644
			}
			hdr := &cpio.Header{Name: n, Mode: cpio.TypeReg | cpio.FileMode(perm), Size: int64(len(f.Data)), Links: 1}
			if err := cw.WriteHeader(hdr); err != nil {
				return err
			}
			if _, err := cw.Write(f.Data); err != nil {
				return err
			}
			continue
		}
		hdr := &cpio.Header{Name: n, Mode: cpio.TypeDir | 0o755, Links: 2}
		if err := cw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	return cw.Close()
}

// archiveName turns "/init" or "lib/modules/x.ko" into the relative form cpio uses.
func archiveName(name string) (string, error) {
	n := strings.TrimPrefix(name, "/")
	if n == "" || path.Clean(n) != n || n == "." || strings.HasPrefix(n, "../") || n == ".." {
		return "", fmt.Errorf("%w: bad file name %q (want a clean path such as /init)", ErrInitramfs, name)
	}
	return n, nil
}
