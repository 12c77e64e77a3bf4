//go:build linux && amd64

package bench

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The default build: Lua from Debian bookworm's lua5.4 source package.
const (
	luaVersion = "5.4.4"
	luaPool    = "/pool/main/l/lua5.4/"
	luaDsc     = "lua5.4_5.4.4-3+deb12u1.dsc"
	luaOrig    = "lua5.4_5.4.4.orig.tar.gz"
)

func mirror() string {
	if m := os.Getenv("KBOOST_DEBIAN_MIRROR"); m != "" {
		return strings.TrimRight(m, "/")
	}
	return "http://deb.debian.org/debian"
}

// luaProject returns the extracted Lua tree under cache/src, fetching and
// checking the orig tarball against the .dsc's SHA-256 the first time.
func luaProject(cache string) (string, error) {
	dir := filepath.Join(cache, "src")
	tree := filepath.Join(dir, "lua-"+luaVersion)
	if st, err := os.Stat(filepath.Join(tree, "Makefile")); err == nil && st.Mode().IsRegular() {
		return tree, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBench, err)
	}
	dsc, err := fetch(mirror() + luaPool + luaDsc)
	if err != nil {
		return "", err
	}
	want, err := dscSHA256(dsc, luaOrig)
	if err != nil {
		return "", err
	}
	orig, err := fetch(mirror() + luaPool + luaOrig)
	if err != nil {
		return "", err
	}
	if sum := sha256.Sum256(orig); hex.EncodeToString(sum[:]) != want {
		return "", fmt.Errorf("%w: %s: SHA-256 %x, the .dsc says %s", ErrBench, luaOrig, sum, want)
	}
	if err := os.WriteFile(filepath.Join(dir, luaOrig), orig, 0o644); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBench, err)
	}
	tmp, err := os.MkdirTemp(dir, "extract-")
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBench, err)
	}
	defer os.RemoveAll(tmp)
	if err := untar(orig, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(filepath.Join(tmp, "lua-"+luaVersion), tree); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBench, err)
	}
	return tree, nil
}

func fetch(url string) ([]byte, error) {
	c := http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Get(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBench, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: %s", ErrBench, url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBench, url, err)
	}
	return b, nil
}

// dscSHA256 finds file's line in the .dsc's Checksums-Sha256 field.
func dscSHA256(dsc []byte, file string) (string, error) {
	in := false
	sc := bufio.NewScanner(bytes.NewReader(dsc))
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, " ") {
			in = strings.HasPrefix(l, "Checksums-Sha256:")
			continue
		}
		if f := strings.Fields(l); in && len(f) == 3 && f[2] == file {
			return f[0], nil
		}
	}
	return "", fmt.Errorf("%w: %s names no SHA-256 of %s", ErrBench, luaDsc, file)
}

// untar extracts a .tar.gz's regular files and directories under dst.
func untar(tgz []byte, dst string) error {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBench, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrBench, err)
		}
		name := filepath.Clean(h.Name)
		if strings.HasPrefix(name, "..") || filepath.IsAbs(name) {
			return fmt.Errorf("%w: %s: a path outside the tree", ErrBench, h.Name)
		}
		p := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("%w: %w", ErrBench, err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return fmt.Errorf("%w: %w", ErrBench, err)
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrBench, err)
			}
			if err := os.WriteFile(p, b, os.FileMode(h.Mode)&0o755|0o644); err != nil {
				return fmt.Errorf("%w: %w", ErrBench, err)
			}
		}
	}
}
