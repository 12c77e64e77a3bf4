package sysspec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ExtractTarball derives the spec from a Debian linux-source tarball: tar
// (with xz) pulls out the few files Extract reads.
func ExtractTarball(tarball string, extra []byte) (*Spec, error) {
	dir, err := os.MkdirTemp("", "kboost-sysent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	top := strings.TrimSuffix(filepath.Base(tarball), ".tar.xz")
	files := []string{Source.X86_64, Source.I386, Source.ARM, Source.Generic, Source.Protos}
	args := []string{"-xJf", tarball, "-C", dir}
	for _, f := range files {
		args = append(args, top+"/"+f)
	}
	if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tar %s: %v: %s", tarball, err, out)
	}
	return Extract(top, func(p string) ([]byte, error) {
		return os.ReadFile(filepath.Join(dir, top, p))
	}, extra)
}
