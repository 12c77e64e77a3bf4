//go:build linux

package kimage

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// debMetaArch maps Debian kernel meta packages to their dpkg architecture.
var debMetaArch = map[string]string{
	"linux-image-amd64":       "amd64",
	"linux-image-cloud-amd64": "amd64",
	"linux-image-rt-amd64":    "amd64",
	"linux-image-686":         "i386",
	"linux-image-686-pae":     "i386",
	"linux-image-arm64":       "arm64",
	"linux-image-cloud-arm64": "arm64",
	"linux-image-rt-arm64":    "arm64",
	"linux-image-armmp":       "armhf",
	"linux-image-armmp-lpae":  "armhf",
	"linux-image-marvell":     "armel",
	"linux-image-rpi":         "armel",
}

// CacheDir returns $KBOOST_CACHE, else $HOME/.cache/kboost.
func CacheDir() string {
	if d := os.Getenv("KBOOST_CACHE"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "kboost")
	}
	return filepath.Join(os.TempDir(), "kboost-cache")
}

// FetchDebianKernel returns the path of the current linux-image package that the
// Debian meta package meta (e.g. "linux-image-amd64", "linux-image-686",
// "linux-image-arm64", "linux-image-armmp") depends on, downloading it with
// apt-get into CacheDir()/debs unless it is already there. A foreign architecture
// is enabled first when needed (dpkg --add-architecture + apt-get update, which
// needs root). When apt cannot resolve the package, a cached package of the same
// flavour is used if there is one.
func FetchDebianKernel(ctx context.Context, meta string) (string, error) {
	arch, ok := debMetaArch[meta]
	if !ok {
		return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownPackage, meta, strings.Join(knownMetas(), ", "))
	}
	dir := filepath.Join(CacheDir(), "debs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	flavour := strings.TrimPrefix(meta, "linux-image-")
	pkg, err := resolveKernelPackage(ctx, meta, arch)
	if err != nil {
		if p := newestCached(dir, "linux-image-*-"+flavour, arch); p != "" {
			return p, nil
		}
		return "", err
	}
	return downloadOne(ctx, nil, dir, pkg, arch)
}

func knownMetas() []string {
	var m []string
	for k := range debMetaArch {
		m = append(m, k)
	}
	sort.Strings(m)
	return m
}

// resolveKernelPackage asks apt-cache which linux-image-<ABI>-<flavour> the meta
// package depends on, enabling the architecture and updating lists if needed.
func resolveKernelPackage(ctx context.Context, meta, arch string) (string, error) {
	if err := ensureDpkgArch(ctx, arch); err != nil {
		return "", err
	}
	pkg, err := aptDepends(ctx, meta, arch)
	if err == nil {
		return pkg, nil
	}
	// Lists may be missing or stale: update once and retry.
	if out, uerr := runIn(ctx, "", "apt-get", "update"); uerr != nil {
		return "", fmt.Errorf("resolving %s: %v; apt-get update failed too: %v: %s", meta, err, uerr, lastLines(out))
	}
	return aptDepends(ctx, meta, arch)
}

func aptDepends(ctx context.Context, meta, arch string) (string, error) {
	out, err := runIn(ctx, "", "apt-cache", "depends", meta+":"+arch)
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s:%s: %v: %s", meta, arch, err, lastLines(out))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == "Depends:" && strings.HasPrefix(f[1], "linux-image-") {
			name, _, _ := strings.Cut(f[1], ":")
			if !strings.ContainsAny(name, "<>") {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("apt-cache depends %s:%s names no linux-image package", meta, arch)
}

// ensureDpkgArch enables a foreign dpkg architecture when it is not yet known.
func ensureDpkgArch(ctx context.Context, arch string) error {
	native, err := runIn(ctx, "", "dpkg", "--print-architecture")
	if err != nil {
		return fmt.Errorf("dpkg --print-architecture: %v (is this a Debian system?): %w", err, errNotSupported)
	}
	if strings.TrimSpace(string(native)) == arch {
		return nil
	}
	foreign, _ := runIn(ctx, "", "dpkg", "--print-foreign-architectures")
	for _, a := range strings.Fields(string(foreign)) {
		if a == arch {
			return nil
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("architecture %s is not enabled: run as root `dpkg --add-architecture %s && apt-get update`", arch, arch)
	}
	if out, err := runIn(ctx, "", "dpkg", "--add-architecture", arch); err != nil {
		return fmt.Errorf("dpkg --add-architecture %s: %v: %s", arch, err, lastLines(out))
	}
	if out, err := runIn(ctx, "", "apt-get", "update"); err != nil {
		return fmt.Errorf("apt-get update: %v: %s", err, lastLines(out))
	}
	return nil
}

// newestCached returns the most recently modified dir/<pkg>_*_<arch>.deb.
func newestCached(dir, pkg, arch string) string {
	got, _ := filepath.Glob(filepath.Join(dir, pkg+"_*_"+arch+".deb"))
	best, bestT := "", int64(0)
	for _, p := range got {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
			continue
		}
		if t := st.ModTime().UnixNano(); best == "" || t > bestT {
			best, bestT = p, t
		}
	}
	return best
}

func runIn(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	return cmd.CombinedOutput()
}

func lastLines(b []byte) string {
	s := strings.TrimSpace(string(b))
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}
