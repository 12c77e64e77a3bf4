// Command cpugen keeps package kimage's CPU capability tables: with
// -extract it derives a spec file from a kernel source tarball, otherwise
// it generates the Go tables of one architecture from its spec files.
//
//	go run ./internal/cpuspec/cpugen -extract /usr/src/linux-source-6.1.tar.xz -arch x86 -o spec/x86-cpufeatures-6.1.spec
//	go run ./internal/cpuspec/cpugen -o x86_cpufeatures.go spec/x86-cpufeatures-6.1.spec ...
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/kboost/kboost/kimage/internal/cpuspec"
)

func main() {
	extract := flag.String("extract", "", "kernel source tarball (linux-source-*.tar.xz) to derive a spec from")
	arch := flag.String("arch", "", "with -extract: arm64 or x86")
	out := flag.String("o", "", "file to write")
	flag.Parse()
	if err := run(*extract, *arch, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "cpugen:", err)
		os.Exit(1)
	}
}

func run(tarball, arch, out string, specs []string) error {
	if out == "" {
		return fmt.Errorf("-o FILE is required")
	}
	if tarball != "" {
		s, err := cpuspec.ExtractTarball(tarball, arch)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := s.Write(&b); err != nil {
			return err
		}
		return os.WriteFile(out, b.Bytes(), 0o644)
	}
	src, err := cpuspec.GenerateFiles(specs)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
