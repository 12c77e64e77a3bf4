// Command gen keeps package sysent's tables: with -extract it derives the
// spec file from the kernel's own system call tables, otherwise it
// generates tables.go from the spec.
//
//	go run ./gen -extract /usr/src/linux-source-6.1.tar.xz -spec spec/linux-6.1.spec
//	go run ./gen -spec spec/linux-6.1.spec -o tables.go
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kboost/kboost/sysent/internal/sysspec"
)

func main() {
	extract := flag.String("extract", "", "kernel source tarball (linux-source-*.tar.xz) or unpacked source directory to derive the spec from")
	specPath := flag.String("spec", "spec/linux-6.1.spec", "spec file")
	extra := flag.String("extra", "spec/extra-protos.h", "kboost's extra prototypes")
	out := flag.String("o", "tables.go", "Go file to write")
	flag.Parse()
	if err := run(*extract, *specPath, *extra, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(tarball, specPath, extra, out string) error {
	if tarball != "" {
		ex, err := os.ReadFile(extra)
		if err != nil {
			return err
		}
		var s *sysspec.Spec
		if st, serr := os.Stat(tarball); serr == nil && st.IsDir() {
			s, err = sysspec.Extract(filepath.Base(tarball), func(p string) ([]byte, error) {
				return os.ReadFile(filepath.Join(tarball, p))
			}, ex)
		} else {
			s, err = sysspec.ExtractTarball(tarball, ex)
		}
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := s.Write(&b); err != nil {
			return err
		}
		return os.WriteFile(specPath, b.Bytes(), 0o644)
	}
	f, err := os.Open(specPath)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := sysspec.Parse(f)
	if err != nil {
		return err
	}
	src, err := sysspec.Generate(s)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
