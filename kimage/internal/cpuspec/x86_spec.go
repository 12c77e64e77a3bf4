package cpuspec

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// x86: the feature and bug bits with their /proc/cpuinfo names.
func init() {
	specArches["x86"] = &specArch{
		sources:  []string{"Makefile", "arch/x86/include/asm/cpufeatures.h", "arch/x86/kernel/cpu/mkcapflags.sh"},
		extract:  extractX86,
		write:    writeX86,
		lacks:    lacksX86,
		generate: generateX86,
	}
}

func lacksX86(s *Spec) string {
	if len(s.Features) == 0 || s.NCapInts == 0 || s.NBugInts == 0 {
		return "no feature lines or word counts"
	}
	return ""
}

func writeX86(bw *bufio.Writer, s *Spec) {
	fmt.Fprintf(bw, "ncapints %d\nnbugints %d\n", s.NCapInts, s.NBugInts)
	fmt.Fprintln(bw, "# feature|bug NAME BIT FLAG: arch/x86/include/asm/cpufeatures.h; FLAG is the /proc/cpuinfo name, - when not shown")
	for _, f := range s.Features {
		kind, flag := "feature", f.Flag
		if f.Bug {
			kind = "bug"
		}
		if flag == "" {
			flag = "-"
		}
		fmt.Fprintf(bw, "%s %s %d %s\n", kind, f.Name, f.Bit, flag)
	}
}

func generateX86(b *bytes.Buffer, specs []*Spec, id func(*Spec) string) {
	for _, s := range specs {
		fmt.Fprintf(b, "// x86Features%s are the feature and bug bits of Linux %s (arch/x86/include/asm/cpufeatures.h) with their /proc/cpuinfo names.\nvar x86Features%s = x86FeatureSpec{version: %q, ncapints: %d, nbugints: %d, bits: []x86FeatureBit{\n", id(s), s.Version, id(s), s.Version, s.NCapInts, s.NBugInts)
		for _, f := range s.Features {
			fmt.Fprintf(b, "\t{%q, %d, %q, %v},\n", f.Name, f.Bit, f.Flag, f.Bug)
		}
		b.WriteString("}}\n\n")
	}
	b.WriteString("// x86FeatureSpecs are the feature tables generated from the kernels' sources, oldest first.\nvar x86FeatureSpecs = []*x86FeatureSpec{")
	for i, s := range specs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(b, "&x86Features%s", id(s))
	}
	b.WriteString("}\n")
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
