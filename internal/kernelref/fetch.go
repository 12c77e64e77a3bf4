package kernelref

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// debianSuites names, for a kernel source version no installed suite has, the
// Debian suite whose linux-source-V package kboost fetches.
var debianSuites = map[string]string{"7.2": "sid"}

// SourceTarball returns Debian's linux-source-V tarball (V "6.1", "6.12",
// "7.2"): /usr/src/linux-source-V.tar.xz when the package is installed, else
// the copy in the cache (CacheDir/debian-src), fetched when missing. Fetching
// downloads the linux-source-V package of the suite in debianSuites with
// apt-get under an apt configuration of kboost's own (sources list, lists and
// archives under CacheDir/apt-SUITE; the system's sources are untouched) and
// takes the tarball out of it with dpkg-deb.
func SourceTarball(opts Options, v string) (string, error) {
	name := "linux-source-" + v
	sys := "/usr/src/" + name + ".tar.xz"
	if _, err := os.Stat(sys); err == nil {
		return sys, nil
	}
	suite, ok := debianSuites[v]
	if !ok {
		return "", fmt.Errorf("%s: %w (apt-get install %s)", sys, ErrNoSource, name)
	}
	opts.Version = "" // the cache directory is all it needs of the defaults
	opts, err := opts.withDefaults()
	if err != nil {
		return "", err
	}
	dst := filepath.Join(opts.CacheDir, "debian-src", name+".tar.xz")
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	deb, err := aptDownload(filepath.Join(opts.CacheDir, "apt-"+suite), suite, name)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	// dpkg-deb --fsys-tarfile | tar -xO ./usr/src/NAME.tar.xz
	sh := fmt.Sprintf("dpkg-deb --fsys-tarfile %q | tar -xOf - ./usr/src/%s.tar.xz", deb, name)
	cmd := exec.Command("sh", "-c", sh)
	cmd.Stdout = f
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("%s: %v: %s: %w", sh, err, strings.TrimSpace(stderr.String()), ErrTool)
	}
	return dst, os.Rename(tmp, dst)
}

// aptDownload fetches package pkg of suite into dir/debs (once) and returns the
// .deb's path. apt-get runs with dir's own sources list, lists and cache.
func aptDownload(dir, suite, pkg string) (string, error) {
	debs := filepath.Join(dir, "debs")
	if m, _ := filepath.Glob(filepath.Join(debs, pkg+"_*.deb")); len(m) == 1 {
		return m[0], nil
	}
	for _, d := range []string{debs, filepath.Join(dir, "lists", "partial"), filepath.Join(dir, "cache", "archives", "partial"), filepath.Join(dir, "sources.list.d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	list := filepath.Join(dir, "sources.list")
	src := fmt.Sprintf("deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian %s main\n", suite)
	if err := os.WriteFile(list, []byte(src), 0o644); err != nil {
		return "", err
	}
	args := []string{"-q", "-o", "Dir::Etc::sourcelist=" + list, "-o", "Dir::Etc::sourceparts=" + filepath.Join(dir, "sources.list.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(dir, "lists"), "-o", "Dir::Cache=" + filepath.Join(dir, "cache"),
		"-o", "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false"}
	if m, _ := filepath.Glob(filepath.Join(dir, "lists", "*_Packages*")); len(m) == 0 {
		if err := run(dir, nil, "apt-get", append(args, "update")...); err != nil {
			return "", err
		}
	}
	if err := run(debs, nil, "apt-get", append(args, "download", pkg)...); err != nil {
		return "", err
	}
	m, _ := filepath.Glob(filepath.Join(debs, pkg+"_*.deb"))
	if len(m) != 1 {
		return "", fmt.Errorf("apt-get download %s: %d .deb files in %s: %w", pkg, len(m), debs, ErrTool)
	}
	return m[0], nil
}
