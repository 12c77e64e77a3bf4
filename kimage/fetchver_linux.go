//go:build linux

package kimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// versionSuites are the Debian suites searched, in order, for a kernel
// version the system's own apt sources do not carry: trixie has 6.12
// (+deb13), unstable the newest (7.x, +deb14).
var versionSuites = []string{"trixie", "sid"}

// suiteListsMaxAge is how long a suite's downloaded package lists are used
// before apt-get update runs again.
const suiteListsMaxAge = 24 * time.Hour

// FetchDebianKernelVersion is FetchDebianKernel for a chosen kernel version
// ("6.12", "7.2", or a full "6.12.117"): the newest linux-image-<version>.*
// package of meta's flavour that apt knows of, first in the system's own
// sources, then in the suites of versionSuites, each read through a
// temporary apt configuration under CacheDir()/apt/<suite> (lists per architecture set) (the system's
// sources and lists are not touched). Where the linux-image package is a
// metapackage (Debian 7.x: the image is in linux-binary-<release>, the
// config in linux-base-<release>), those two are downloaded and the
// linux-binary package's path is returned; ReadDeb finds its linux-base
// sibling.
func FetchDebianKernelVersion(ctx context.Context, meta, version string) (string, error) {
	arch, ok := debMetaArch[meta]
	if !ok {
		return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownPackage, meta, strings.Join(knownMetas(), ", "))
	}
	if !validVersion(version) {
		return "", fmt.Errorf("%w: version %q: want MAJOR.MINOR or MAJOR.MINOR.PATCH, such as 6.12 or 7.2.13", ErrUnknownPackage, version)
	}
	if err := ensureDpkgArch(ctx, arch); err != nil {
		return "", err
	}
	dir := filepath.Join(CacheDir(), "debs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	flavour := strings.TrimPrefix(meta, "linux-image-")
	var tried []string
	for _, suite := range append([]string{""}, versionSuites...) {
		var apt aptConfig
		if suite != "" {
			var err error
			if apt, err = suiteConfig(ctx, suite, arch); err != nil {
				return "", err
			}
		}
		pkg, err := newestVersionPackage(ctx, apt, version, flavour)
		if err != nil {
			return "", err
		}
		if pkg == "" {
			tried = append(tried, cmpOr(suite, "the system's sources"))
			continue
		}
		return downloadImage(ctx, apt, dir, pkg, arch)
	}
	return "", fmt.Errorf("%w: no linux-image-%s*-%s package in %s", ErrUnknownPackage, version, flavour, strings.Join(tried, ", "))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)

func validVersion(v string) bool { return versionRE.MatchString(v) }

// aptConfig is the -o options of a temporary apt configuration (nil: the
// system's).
type aptConfig []string

func (c aptConfig) args(cmd ...string) []string { return append(append([]string{}, c...), cmd...) }

// suiteConfig writes (once) a sources list for suite and refreshes its lists
// when they are missing or older than suiteListsMaxAge.
func suiteConfig(ctx context.Context, suite, arch string) (aptConfig, error) {
	d := filepath.Join(CacheDir(), "apt", suite)
	native, _ := runIn(ctx, "", "dpkg", "--print-architecture")
	archs := strings.TrimSpace(string(native))
	if archs != arch {
		archs += "," + arch
	}
	// One lists directory per architecture set: apt-get update deletes the
	// lists its sources do not name, so an amd64-only update in a shared
	// directory removed the arm64 Packages while the arm64 stamp stayed fresh.
	lists := filepath.Join(d, "lists-"+strings.ReplaceAll(archs, ",", "-"))
	for _, sub := range []string{filepath.Join(lists, "partial"), filepath.Join(d, "cache/archives/partial")} {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return nil, err
		}
	}
	src := fmt.Sprintf("deb [arch=%s signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n", archs, debianMirror(), suite)
	list := filepath.Join(d, "sources-"+strings.ReplaceAll(archs, ",", "-")+".list")
	if old, err := os.ReadFile(list); err != nil || string(old) != src {
		if err := os.WriteFile(list, []byte(src), 0o644); err != nil {
			return nil, err
		}
	}
	cfg := aptConfig{
		"-o", "Dir::Etc::sourcelist=" + list,
		"-o", "Dir::Etc::sourceparts=/nonexistent",
		"-o", "Dir::State::Lists=" + lists,
		"-o", "Dir::Cache=" + filepath.Join(d, "cache"),
		"-o", "APT::Sandbox::User=root",
	}
	stamp := filepath.Join(lists, "updated")
	if st, err := os.Stat(stamp); err == nil && time.Since(st.ModTime()) < suiteListsMaxAge {
		return cfg, nil
	}
	if out, err := runIn(ctx, "", "apt-get", cfg.args("update")...); err != nil {
		return nil, fmt.Errorf("apt-get update for Debian %s (sources %s): %v: %s", suite, list, err, lastLines(out))
	}
	if err := os.WriteFile(stamp, nil, 0o644); err != nil {
		return nil, err
	}
	return cfg, nil
}

// debianMirror is $KBOOST_DEBIAN_MIRROR, else deb.debian.org.
func debianMirror() string {
	if m := os.Getenv("KBOOST_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// newestVersionPackage names the newest linux-image-<version>[.N]<abi>-<flavour>
// package apt knows of ("" if none): 6.12 matches linux-image-6.12.117+deb13-amd64,
// 6.1 matches linux-image-6.1.0-57-amd64.
func newestVersionPackage(ctx context.Context, apt aptConfig, version, flavour string) (string, error) {
	out, err := runIn(ctx, "", "apt-cache", apt.args("pkgnames", "linux-image-"+version)...)
	if err != nil && len(out) > 0 {
		return "", fmt.Errorf("apt-cache pkgnames linux-image-%s: %v: %s", version, err, lastLines(out))
	}
	return pickVersionPackage(strings.Fields(string(out)), version, flavour), nil
}

// pickVersionPackage is the newest of names that is linux-image-<version>,
// then more .N, then an ABI (+debNN or -NN), then -<flavour> ("" if none).
func pickVersionPackage(names []string, version, flavour string) string {
	re := regexp.MustCompile(`^linux-image-` + regexp.QuoteMeta(version) + `(\.[0-9]+)*(\+deb[0-9]+|-[0-9]+)?-` + regexp.QuoteMeta(flavour) + `$`)
	best := ""
	for _, n := range names {
		if re.MatchString(n) && (best == "" || lessRelease(best, n)) {
			best = n
		}
	}
	return best
}

var numRE = regexp.MustCompile(`[0-9]+`)

// lessRelease orders package names by their numbers in turn (6.12.9 < 6.12.117).
func lessRelease(a, b string) bool {
	na, nb := numRE.FindAllString(a, -1), numRE.FindAllString(b, -1)
	for i := 0; i < len(na) && i < len(nb); i++ {
		x, _ := strconv.Atoi(na[i])
		y, _ := strconv.Atoi(nb[i])
		if x != y {
			return x < y
		}
	}
	return len(na) < len(nb)
}

// downloadImage downloads pkg (or, for a metapackage, its linux-binary and
// linux-base dependencies) into dir unless cached, and returns the path of
// the package that holds the kernel image.
func downloadImage(ctx context.Context, apt aptConfig, dir, pkg, arch string) (string, error) {
	want := []string{pkg}
	out, err := runIn(ctx, "", "apt-cache", apt.args("depends", pkg+":"+arch)...)
	if err != nil {
		return "", fmt.Errorf("apt-cache depends %s:%s: %v: %s", pkg, arch, err, lastLines(out))
	}
	release := strings.TrimPrefix(pkg, "linux-image-")
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "Depends:" && strings.TrimSuffix(f[1], ":"+arch) == "linux-binary-"+release {
			want = []string{"linux-binary-" + release, "linux-base-" + release}
		}
	}
	var paths []string
	for _, p := range want {
		got, err := downloadOne(ctx, apt, dir, p, arch)
		if err != nil {
			return "", err
		}
		paths = append(paths, got)
	}
	return paths[0], nil
}

func downloadOne(ctx context.Context, apt aptConfig, dir, pkg, arch string) (string, error) {
	if p := newestCached(dir, pkg, arch); p != "" {
		return p, nil
	}
	tmp, err := os.MkdirTemp(dir, ".download-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := runIn(ctx, tmp, "apt-get", apt.args("download", pkg+":"+arch)...); err != nil {
		return "", fmt.Errorf("apt-get download %s:%s: %v: %s", pkg, arch, err, lastLines(out))
	}
	got, _ := filepath.Glob(filepath.Join(tmp, pkg+"_*_"+arch+".deb"))
	if len(got) != 1 {
		return "", fmt.Errorf("apt-get download %s:%s left %d matching files in %s", pkg, arch, len(got), tmp)
	}
	dst := filepath.Join(dir, filepath.Base(got[0]))
	if err := os.Rename(got[0], dst); err != nil {
		return "", err
	}
	return dst, nil
}
