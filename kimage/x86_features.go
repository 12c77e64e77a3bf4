package kimage

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

//go:generate go run ./internal/cpuspec/cpugen -o x86_cpufeatures.go spec/x86-cpufeatures-6.1.spec spec/x86-cpufeatures-6.12.spec spec/x86-cpufeatures-7.2.spec

// x86FeatureSpec is one version's feature and bug bits (x86_cpufeatures.go,
// generated from spec/x86-cpufeatures-*.spec, which kimage/internal/cpuspec
// derives from the kernel's arch/x86/include/asm/cpufeatures.h and the
// naming rule of its mkcapflags.sh).
type x86FeatureSpec struct {
	version            string
	ncapints, nbugints int
	bits               []x86FeatureBit
}

// x86FeatureBit is one X86_FEATURE_* or X86_BUG_* bit; flag is its
// /proc/cpuinfo name ("flags" or "bugs" line), "" when the kernel does not
// show it.
type x86FeatureBit struct {
	name string
	bit  uint16
	flag string
	bug  bool
}

// ErrNoKnownFlags is returned when a CPU flag list names no feature of the
// kernel's table.
var ErrNoKnownFlags = errors.New("no known x86 CPU flag")

// X86FeatureTable names the x86 feature bits of one kernel version.
type X86FeatureTable struct {
	spec *x86FeatureSpec
	From string // which version's table, and why
}

// X86Features returns the feature table of the kernel release (such as
// "6.12.117+deb12-amd64"): its own version's, else the nearest older one
// kboost has (From says so), else the oldest.
func X86FeatureTableFor(release string) *X86FeatureTable {
	mm := kernelMajorMinor(release)
	var best *x86FeatureSpec
	for _, s := range x86FeatureSpecs {
		if kernelMajorMinor(s.version) == mm {
			return &X86FeatureTable{spec: s, From: "Linux " + s.version + " arch/x86/include/asm/cpufeatures.h"}
		}
		if release != "" && versionLess(s.version, release) {
			best = s
		}
	}
	why := "the nearest older version kboost has"
	if best == nil {
		best, why = x86FeatureSpecs[0], "the oldest version kboost has"
	}
	if release == "" {
		why = "kernel version unknown"
	}
	return &X86FeatureTable{spec: best, From: fmt.Sprintf("Linux %s arch/x86/include/asm/cpufeatures.h (%s)", best.version, why)}
}

// versionLess compares dotted kernel versions numerically (a release's
// suffix after the numbers is ignored).
func versionLess(a, b string) bool {
	pa, pb := versionParts(a), versionParts(b)
	for i := 0; i < 3; i++ {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func versionParts(v string) [3]int {
	var p [3]int
	for i, f := range strings.SplitN(v, ".", 3) {
		n := 0
		for _, r := range f {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
		}
		p[i] = n
	}
	return p
}

// Lookup finds a feature by its /proc/cpuinfo name, or by its macro name
// (X86_FEATURE_SMAP, SMAP, X86_BUG_SPECTRE_V2), in any case.
func (t *X86FeatureTable) Lookup(name string) (uint16, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, b := range t.spec.bits {
		if b.flag != "" && b.flag == name {
			return b.bit, true
		}
	}
	macro := strings.ToUpper(name)
	for _, b := range t.spec.bits {
		m := strings.TrimPrefix(macro, "X86_FEATURE_")
		if b.bug {
			m = strings.TrimPrefix(macro, "X86_BUG_")
		}
		if b.name == m && (b.bug == strings.HasPrefix(macro, "X86_BUG_") || macro == b.name) {
			return b.bit, true
		}
	}
	return 0, false
}

// Name is the bit's /proc/cpuinfo name, or its macro name when not shown.
func (t *X86FeatureTable) Name(bit uint16) string {
	for _, b := range t.spec.bits {
		if b.bit == bit {
			if b.flag != "" {
				return b.flag
			}
			if b.bug {
				return "X86_BUG_" + b.name
			}
			return "X86_FEATURE_" + b.name
		}
	}
	return fmt.Sprintf("x86 feature bit %d", bit)
}

// Hidden lists the features the kernel may set that /proc/cpuinfo never
// shows (no name in cpufeatures.h), by macro name.
func (t *X86FeatureTable) Hidden() []string {
	var out []string
	for _, b := range t.spec.bits {
		if b.flag == "" {
			out = append(out, b.name)
		}
	}
	return out
}

// ParseFlags reads a CPU named the way /proc/cpuinfo names it: the text of
// /proc/cpuinfo (the "flags" and "bugs" lines; with several CPUs, the
// features all of them have, as the kernel's boot_cpu_data keeps them), or a
// list of flag names separated by commas or spaces. X86_FEATURE_ALWAYS is
// always set. A name the table does not know is reported in notes; a list
// in which no name is known is an error (ErrNoKnownFlags).
func (t *X86FeatureTable) ParseFlags(text string) (X86Features, []string, error) {
	var lines []string
	cpuinfo := false
	var bugLines []string
	for _, l := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "flags":
			lines, cpuinfo = append(lines, v), true
		case "bugs":
			bugLines = append(bugLines, v)
		}
	}
	if !cpuinfo {
		lines = []string{strings.ReplaceAll(text, ",", " ")}
	}
	var set X86Features
	set.Add(X86FeatureAlways)
	var unknown []string
	known := 0
	// count: how many CPUs name each bit (the common set is kept)
	count := map[uint16]int{}
	seenUnknown := map[string]bool{}
	add := func(ls []string) {
		for _, l := range ls {
			mine := map[uint16]bool{}
			for _, name := range strings.Fields(l) {
				b, ok := t.Lookup(name)
				if !ok {
					if !seenUnknown[name] {
						seenUnknown[name] = true
						unknown = append(unknown, name)
					}
					continue
				}
				if !mine[b] {
					mine[b] = true
					count[b]++
				}
			}
		}
	}
	add(lines)
	cpus := len(lines)
	for b, n := range count {
		if n == cpus {
			set.Add(b)
			known++
		}
	}
	bugCount := map[uint16]int{}
	for b := range count {
		bugCount[b] = 0
	}
	for b := range count {
		delete(count, b)
	}
	add(bugLines)
	for b, n := range count {
		if n == len(bugLines) {
			set.Add(b)
		}
	}
	if known == 0 {
		return set, nil, fmt.Errorf("%w: none of %d names is a /proc/cpuinfo flag of %s (give /proc/cpuinfo or its flags, e.g. fpu,sse2,smap)", ErrNoKnownFlags, len(unknown), t.From)
	}
	var notes []string
	if len(unknown) > 0 {
		sort.Strings(unknown)
		notes = append(notes, fmt.Sprintf("%d CPU flags not in %s, ignored: %s", len(unknown), t.From, strings.Join(unknown, " ")))
	}
	return set, notes, nil
}

// Flags lists the set's features by /proc/cpuinfo name (hidden ones by
// macro name), in bit order.
func (t *X86FeatureTable) Flags(s *X86Features) []string {
	var out []string
	for _, b := range t.spec.bits {
		if s.Has(b.bit) {
			out = append(out, t.Name(b.bit))
		}
	}
	return out
}
