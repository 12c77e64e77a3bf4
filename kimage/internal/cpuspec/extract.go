package cpuspec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// Sources are the kernel files Extract reads for arch (nil for an unknown
// one).
func Sources(arch string) []string {
	if a := specArches[arch]; a != nil {
		return a.sources
	}
	return nil
}

// ExtractTarball is Extract for a linux-source tarball (tar pulls out the
// few files it reads).
func ExtractTarball(tarball, arch string) (*Spec, error) {
	dir, err := os.MkdirTemp("", "kboost-cpuspec-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := Unpack(tarball, dir, Sources(arch)...); err != nil {
		return nil, err
	}
	return ExtractDir(dir, arch)
}

// Unpack extracts the files (paths inside the kernel tree, globs allowed)
// of a linux-source tarball into dir, without its top directory.
func Unpack(tarball, dir string, files ...string) error {
	args := []string{"-xJf", tarball, "-C", dir, "--strip-components=1", "--wildcards"}
	for _, f := range files {
		args = append(args, "*/"+f)
	}
	if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tar %s: %v: %s", tarball, err, out)
	}
	return nil
}

// ExtractDir is Extract for an unpacked kernel tree.
func ExtractDir(dir, arch string) (*Spec, error) {
	return Extract(arch, func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, p)) })
}

var makeVar = regexp.MustCompile(`(?m)^(VERSION|PATCHLEVEL|SUBLEVEL) = ([0-9]+)$`)

// Extract derives arch's spec ("arm64" or "x86") from the kernel source
// files read returns (paths as Sources gives them).
func Extract(arch string, read func(path string) ([]byte, error)) (*Spec, error) {
	mk, err := read("Makefile")
	if err != nil {
		return nil, err
	}
	v := map[string]string{}
	for _, m := range makeVar.FindAllStringSubmatch(string(mk), 3) {
		v[m[1]] = m[2]
	}
	s := &Spec{Arch: arch, Version: v["VERSION"] + "." + v["PATCHLEVEL"] + "." + v["SUBLEVEL"]}
	if a := specArches[arch]; a != nil {
		err = a.extract(s, read)
	} else {
		err = fmt.Errorf("cpuspec: arch %q: want %s", arch, archNames())
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}
