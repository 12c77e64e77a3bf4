package cpuspec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
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

// specArch is one architecture's part of the spec format: the kernel files
// Extract reads and how, its lines of a spec, what a complete spec of it
// has, and package kimage's tables Generate writes.
type specArch struct {
	sources  []string
	extract  func(s *Spec, read func(path string) ([]byte, error)) error
	write    func(bw *bufio.Writer, s *Spec)
	lacks    func(s *Spec) string // what a parsed spec misses, "" if nothing
	generate func(b *bytes.Buffer, specs []*Spec, id func(*Spec) string)
}

// specArches are the architectures by Spec.Arch; per-arch files add theirs
// (a64_spec.go, x86_spec.go).
var specArches = map[string]*specArch{}

// archNames lists specArches for a message: "arm64 or x86".
func archNames() string {
	return strings.Join(slices.Sorted(maps.Keys(specArches)), " or ")
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
	if a := specArches[s.Arch]; a != nil {
		a.write(bw, s)
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
			if specArches[rest] == nil {
				return nil, bad("arch %q: want %s", rest, archNames())
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
	if msg := specArches[s.Arch].lacks(s); msg != "" {
		return nil, &SpecError{Line: n, Msg: msg}
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
