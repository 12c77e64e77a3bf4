package cpuspec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrSpec is the error of a malformed spec file.
var ErrSpec = errors.New("cpuspec: malformed spec")

// SpecError names the line of a malformed spec.
type SpecError struct {
	Line int
	Msg  string
}

func (e *SpecError) Error() string { return fmt.Sprintf("cpuspec: line %d: %s", e.Line, e.Msg) }
func (e *SpecError) Unwrap() error { return ErrSpec }

// Desc is an arm64 capability description and the cpucap it describes.
type Desc struct{ Text, Cap string }

// Feature is an x86 feature or bug bit.
type Feature struct {
	Name string // without X86_FEATURE_ / X86_BUG_
	Bit  int    // word*32+bit; bugs count from NCAPINTS*32
	Flag string // the /proc/cpuinfo name, "" when not shown
	Bug  bool
}

// Spec is one kernel version's tables: an arm64 or an x86 one.
type Spec struct {
	Arch    string // "arm64" or "x86"
	Version string // the kernel's VERSION.PATCHLEVEL.SUBLEVEL
	// arm64
	Caps  []string // by number, without ARM64_
	Descs []Desc   // in source order
	// x86
	NCapInts, NBugInts int
	Features           []Feature // in header order
}

// Short is "6.1" of Version "6.1.192".
func (s *Spec) Short() string {
	p := strings.SplitN(s.Version, ".", 3)
	if len(p) < 2 {
		return s.Version
	}
	return p[0] + "." + p[1]
}

// Write prints s in the spec format Parse reads.
func (s *Spec) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# Linux %s %s tables, derived by kimage/internal/cpuspec/cpugen -extract\n", s.Version, s.Arch)
	fmt.Fprintf(bw, "arch %s\nversion %s\n", s.Arch, s.Version)
	switch s.Arch {
	case "arm64":
		fmt.Fprintln(bw, "# cap NAME: arch/arm64/tools/cpucaps, in order (the cpucap's number is its place)")
		for _, c := range s.Caps {
			fmt.Fprintf(bw, "cap %s\n", c)
		}
		fmt.Fprintln(bw, "# desc CAP \"TEXT\": .desc and .capability of arm64_features[] and arm64_errata[]")
		for _, d := range s.Descs {
			fmt.Fprintf(bw, "desc %s %s\n", d.Cap, strconv.Quote(d.Text))
		}
	case "x86":
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
	return bw.Flush()
}

// Parse reads a spec file.
func Parse(r io.Reader) (*Spec, error) {
	s := &Spec{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	bad := func(format string, a ...any) error { return &SpecError{Line: n, Msg: fmt.Sprintf(format, a...)} }
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, rest, _ := strings.Cut(line, " ")
		switch key {
		case "arch":
			if rest != "arm64" && rest != "x86" {
				return nil, bad("arch %q: want arm64 or x86", rest)
			}
			s.Arch = rest
		case "version":
			if rest == "" {
				return nil, bad("empty version")
			}
			s.Version = rest
		case "cap":
			if !isName(rest) {
				return nil, bad("cap %q is not a name", rest)
			}
			s.Caps = append(s.Caps, rest)
		case "desc":
			c, q, _ := strings.Cut(rest, " ")
			txt, err := strconv.Unquote(q)
			if err != nil || !isName(c) || txt == "" {
				return nil, bad("want desc CAP \"TEXT\"")
			}
			s.Descs = append(s.Descs, Desc{Text: txt, Cap: c})
		case "ncapints", "nbugints":
			v, err := strconv.Atoi(rest)
			if err != nil || v <= 0 || v > 64 {
				return nil, bad("%s %q: want a word count", key, rest)
			}
			if key == "ncapints" {
				s.NCapInts = v
			} else {
				s.NBugInts = v
			}
		case "feature", "bug":
			f := strings.Fields(rest)
			if len(f) != 3 || !isName(f[0]) {
				return nil, bad("want %s NAME BIT FLAG", key)
			}
			bit, err := strconv.Atoi(f[1])
			if err != nil || bit < 0 || bit >= 64*32*2 {
				return nil, bad("bit %q", f[1])
			}
			flag := f[2]
			if flag == "-" {
				flag = ""
			}
			s.Features = append(s.Features, Feature{Name: f[0], Bit: bit, Flag: flag, Bug: key == "bug"})
		default:
			return nil, bad("unknown key %q", key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if s.Arch == "" || s.Version == "" {
		return nil, &SpecError{Line: n, Msg: "no arch or version line"}
	}
	if s.Arch == "arm64" && len(s.Caps) == 0 {
		return nil, &SpecError{Line: n, Msg: "no cap lines"}
	}
	if s.Arch == "x86" && (len(s.Features) == 0 || s.NCapInts == 0 || s.NBugInts == 0) {
		return nil, &SpecError{Line: n, Msg: "no feature lines or word counts"}
	}
	for _, f := range s.Features {
		if lim := 32 * (s.NCapInts + s.NBugInts); f.Bit >= lim || (f.Bug != (f.Bit >= 32*s.NCapInts)) {
			return nil, &SpecError{Line: n, Msg: fmt.Sprintf("%s: bit %d outside its words", f.Name, f.Bit)}
		}
	}
	return s, nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return true
}
