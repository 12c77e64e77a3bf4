package vm

import (
	"os"
	"path/filepath"

	"github.com/kboost/kboost/kimage"
)

// CacheDir is where vm keeps guest binaries and kallsyms dumps: $KBOOST_CACHE, or
// $HOME/.cache/kboost, the directory package kimage downloads kernels into.
func CacheDir() string { return kimage.CacheDir() }

// writeFileAtomic writes data to path through a temporary file and a rename, so a
// reader never sees a half-written cache entry.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, perm)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
	}
	return werr
}
