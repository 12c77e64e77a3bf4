package cpuspec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Sources are the kernel files Extract reads, by architecture.
var Sources = map[string][]string{
	"arm64": {"Makefile", "arch/arm64/tools/cpucaps", "arch/arm64/kernel/cpufeature.c", "arch/arm64/kernel/cpu_errata.c"},
	"x86":   {"Makefile", "arch/x86/include/asm/cpufeatures.h", "arch/x86/kernel/cpu/mkcapflags.sh"},
}

// ExtractTarball is Extract for a linux-source tarball (tar pulls out the
// few files it reads).
func ExtractTarball(tarball, arch string) (*Spec, error) {
	dir, err := os.MkdirTemp("", "kboost-cpuspec-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := Unpack(tarball, dir, Sources[arch]...); err != nil {
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
// files read returns (paths as in Sources).
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
	switch arch {
	case "arm64":
		err = extractA64(s, read)
	case "x86":
		err = extractX86(s, read)
	default:
		err = fmt.Errorf("cpuspec: arch %q: want arm64 or x86", arch)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

var (
	a64Desc = regexp.MustCompile(`^\s*\.desc\s*=\s*"([^"]*)"\s*,`)
	a64Cap  = regexp.MustCompile(`^\s*\.capability\s*=\s*ARM64_([A-Za-z0-9_]+)\s*,`)
)

func extractA64(s *Spec, read func(string) ([]byte, error)) error {
	b, err := read("arch/arm64/tools/cpucaps")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			s.Caps = append(s.Caps, l)
		}
	}
	// Each capability entry of arm64_features[] and arm64_errata[] names its
	// .desc, then its .capability, within one initializer.
	for _, p := range []string{"arch/arm64/kernel/cpufeature.c", "arch/arm64/kernel/cpu_errata.c"} {
		b, err := read(p)
		if err != nil {
			return err
		}
		desc := ""
		for _, l := range strings.Split(string(b), "\n") {
			if m := a64Desc.FindStringSubmatch(l); m != nil {
				desc = m[1]
			} else if m := a64Cap.FindStringSubmatch(l); m != nil && desc != "" {
				s.Descs = append(s.Descs, Desc{Text: desc, Cap: m[1]})
				desc = ""
			} else if strings.HasPrefix(strings.TrimSpace(l), "}") {
				desc = ""
			}
		}
	}
	if len(s.Caps) == 0 || len(s.Descs) == 0 {
		return fmt.Errorf("cpuspec: %d cpucaps, %d descriptions: not a kernel tree", len(s.Caps), len(s.Descs))
	}
	return nil
}

var (
	x86Words   = regexp.MustCompile(`(?m)^#define\s+(NCAPINTS|NBUGINTS)\s+([0-9]+)`)
	x86Define  = regexp.MustCompile(`^#\s*define\s+X86_(FEATURE|BUG)_([A-Za-z0-9_]+)\s+(.*)$`)
	x86FeatBit = regexp.MustCompile(`^\(\s*([0-9]+)\s*\*\s*32\s*\+\s*([0-9]+)\s*\)`)
	x86BugBit  = regexp.MustCompile(`^X86_BUG\(\s*(?:([0-9]+)\s*\*\s*32\s*\+\s*)?([0-9]+)\s*\)`)
	x86Quoted  = regexp.MustCompile(`/\*\s*("[^"]*")`)
)

func extractX86(s *Spec, read func(string) ([]byte, error)) error {
	h, err := read("arch/x86/include/asm/cpufeatures.h")
	if err != nil {
		return err
	}
	sh, err := read("arch/x86/kernel/cpu/mkcapflags.sh")
	if err != nil {
		return err
	}
	// Up to 6.11 mkcapflags.sh names an unquoted feature by its macro name in
	// lower case and hides only "" ones; later it shows quoted names only.
	byName := strings.Contains(string(sh), `VALUE="\"$NAME\""`)
	for _, m := range x86Words.FindAllStringSubmatch(string(h), -1) {
		n, _ := strconv.Atoi(m[2])
		if m[1] == "NCAPINTS" {
			s.NCapInts = n
		} else {
			s.NBugInts = n
		}
	}
	if s.NCapInts == 0 || s.NBugInts == 0 {
		return fmt.Errorf("cpuspec: cpufeatures.h: no NCAPINTS/NBUGINTS")
	}
	seen := map[string]bool{}
	for _, l := range strings.Split(string(h), "\n") {
		m := x86Define.FindStringSubmatch(strings.ReplaceAll(l, "\t", " "))
		if m == nil {
			continue
		}
		bug, name, rest := m[1] == "BUG", m[2], strings.TrimSpace(m[3])
		var word, bit int
		if bug {
			b := x86BugBit.FindStringSubmatch(rest)
			if b == nil {
				continue // X86_BUG(x) itself
			}
			word, _ = strconv.Atoi("0" + b[1])
			bit, _ = strconv.Atoi(b[2])
			word += s.NCapInts
		} else {
			b := x86FeatBit.FindStringSubmatch(rest)
			if b == nil {
				return fmt.Errorf("cpuspec: cpufeatures.h: X86_FEATURE_%s = %q: not (W*32+B)", name, rest)
			}
			word, _ = strconv.Atoi(b[1])
			bit, _ = strconv.Atoi(b[2])
		}
		key := m[1] + name
		if seen[key] {
			continue
		}
		seen[key] = true
		flag := ""
		if q := x86Quoted.FindStringSubmatch(rest); q != nil {
			flag = strings.ToLower(strings.Trim(q[1], `"`))
		} else if byName {
			flag = strings.ToLower(name)
		}
		s.Features = append(s.Features, Feature{Name: name, Bit: word*32 + bit, Flag: flag, Bug: bug})
	}
	return nil
}
