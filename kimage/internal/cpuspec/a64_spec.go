package cpuspec

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// arm64: the cpucaps, numbered by position, and the capability
// descriptions the kernel logs.
func init() {
	specArches["arm64"] = &specArch{
		sources:  []string{"Makefile", "arch/arm64/tools/cpucaps", "arch/arm64/kernel/cpufeature.c", "arch/arm64/kernel/cpu_errata.c"},
		extract:  extractA64,
		write:    writeA64,
		lacks:    lacksA64,
		generate: generateA64,
	}
}

func lacksA64(s *Spec) string {
	if len(s.Caps) == 0 {
		return "no cap lines"
	}
	return ""
}

func writeA64(bw *bufio.Writer, s *Spec) {
	fmt.Fprintln(bw, "# cap NAME: arch/arm64/tools/cpucaps, in order (the cpucap's number is its place)")
	for _, c := range s.Caps {
		fmt.Fprintf(bw, "cap %s\n", c)
	}
	fmt.Fprintln(bw, "# desc CAP \"TEXT\": .desc and .capability of arm64_features[] and arm64_errata[]")
	for _, d := range s.Descs {
		fmt.Fprintf(bw, "desc %s %s\n", d.Cap, strconv.Quote(d.Text))
	}
}

func generateA64(b *bytes.Buffer, specs []*Spec, id func(*Spec) string) {
	for _, s := range specs {
		fmt.Fprintf(b, "// a64Caps%s is arch/arm64/tools/cpucaps of Linux %s: a cpucap's number is its position.\nvar a64Caps%s = []string{\n", id(s), s.Version, id(s))
		for _, c := range s.Caps {
			fmt.Fprintf(b, "\t%q,\n", c)
		}
		fmt.Fprintf(b, "}\n\n// a64CapDescs%s are the capability descriptions of Linux %s (arm64_features[], arm64_errata[]).\nvar a64CapDescs%s = []a64CapDesc{\n", id(s), s.Version, id(s))
		for _, d := range s.Descs {
			fmt.Fprintf(b, "\t{%s, %q},\n", strconv.Quote(d.Text), d.Cap)
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("// a64CapSpecs are the cpucap numberings generated from the kernels' sources, oldest first.\nvar a64CapSpecs = []a64CapSpec{\n")
	for _, s := range specs {
		fmt.Fprintf(b, "\t{version: %q, names: a64Caps%s, descs: a64CapDescs%s},\n", s.Version, id(s), id(s))
	}
	b.WriteString("}\n")
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
