// Package sysspec reads the kernel's own system call tables (syscall_64.tbl,
// syscall_32.tbl, arch/arm/tools/syscall.tbl, asm-generic/unistd.h and the
// prototypes of include/linux/syscalls.h) into kboost's spec file, parses
// that spec and generates the Go tables of package sysent from it.
package sysspec

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kinds are the argument kinds the spec may name; sysent defines the same
// names as Kind values.
var Kinds = []string{"int", "uint", "ptr", "fd", "dirfd", "path", "oflags", "mode", "prot", "mmapflags", "signal"}

// Arch is one architecture's table in the spec.
type Arch struct {
	Name    string // decode.Arch name: x86-64, i386, arm64, arm
	Entries []Entry
}

// Entry is one system call number.
type Entry struct {
	Nr    int
	Name  string
	Entry string // kernel entry point (sys_openat)
}

// Arg is one argument of a prototype.
type Arg struct{ Name, Kind string }

// Spec is the whole spec file.
type Spec struct {
	Source string
	Protos map[string][]Arg // by entry point
	Arches []Arch
}

// Source names the kernel files Extract reads, relative to the source root.
var Source = struct{ X86_64, I386, ARM, Generic, Protos string }{
	"arch/x86/entry/syscalls/syscall_64.tbl",
	"arch/x86/entry/syscalls/syscall_32.tbl",
	"arch/arm/tools/syscall.tbl",
	"include/uapi/asm-generic/unistd.h",
	"include/linux/syscalls.h",
}

// arm64Defines are the __ARCH_WANT_* macros arch/arm64/include/uapi/asm/unistd.h
// sets before including asm-generic/unistd.h (Linux 6.1).
var arm64Defines = map[string]bool{
	"__ARCH_WANT_RENAMEAT": true, "__ARCH_WANT_NEW_STAT": true, "__ARCH_WANT_SET_GET_RLIMIT": true,
	"__ARCH_WANT_TIME32_SYSCALLS": true, "__ARCH_WANT_SYS_CLONE3": true, "__ARCH_WANT_MEMFD_SECRET": true,
}

// Extract builds the spec from the kernel files (read by name through
// read), plus extra prototypes (kboost's own, in the same C syntax, for
// arch-specific entry points syscalls.h does not declare; they win).
func Extract(source string, read func(path string) ([]byte, error), extra []byte) (*Spec, error) {
	s := &Spec{Source: source, Protos: map[string][]Arg{}}
	b, err := read(Source.Protos)
	if err != nil {
		return nil, err
	}
	parseProtos(b, s.Protos, false)
	parseProtos(extra, s.Protos, true)
	for _, t := range []struct {
		arch, file string
		abis       []string
	}{
		{"x86-64", Source.X86_64, []string{"common", "64"}},
		{"i386", Source.I386, []string{"i386"}},
		{"arm", Source.ARM, []string{"common", "eabi"}},
	} {
		b, err := read(t.file)
		if err != nil {
			return nil, err
		}
		es, err := parseTbl(b, t.abis)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.file, err)
		}
		s.Arches = append(s.Arches, Arch{Name: t.arch, Entries: es})
	}
	b, err = read(Source.Generic)
	if err != nil {
		return nil, err
	}
	es, err := parseGeneric(b, arm64Defines)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Source.Generic, err)
	}
	s.Arches = append(s.Arches, Arch{Name: "arm64", Entries: es})
	return s, nil
}

func parseTbl(b []byte, abis []string) ([]Entry, error) {
	var es []Entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("short line %q", line)
		}
		nr, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		want := false
		for _, a := range abis {
			want = want || f[1] == a
		}
		if !want {
			continue
		}
		e := Entry{Nr: nr, Name: f[2]}
		if len(f) >= 4 {
			e.Entry = f[3]
		}
		es = append(es, e)
	}
	return es, sc.Err()
}

var (
	reDefineNr = regexp.MustCompile(`^#define __NR(3264)?_(\w+)\s+(\d+)\s*$`)
	reAlias    = regexp.MustCompile(`^#define __NR_(\w+)\s+__NR3264_(\w+)\s*$`)
	reSyscall  = regexp.MustCompile(`^__(SYSCALL|SC_COMP|SC_3264|SC_COMP_3264)\(__NR(3264)?_(\w+),\s*(\w+)(?:,\s*(\w+))?`)
	reIf       = regexp.MustCompile(`defined\((\w+)\)`)
)

// parseGeneric evaluates asm-generic/unistd.h for a 64-bit, non-compat
// architecture with the given __ARCH_WANT_* macros: the few conditionals it
// uses are ORs of defined() and __BITS_PER_LONG tests.
func parseGeneric(b []byte, defs map[string]bool) ([]Entry, error) {
	type frame struct{ parent, cond, taken bool }
	var stack []frame
	on := true
	nr3264 := map[string]int{}
	entry := map[string]string{} // __NR name or 3264 name -> entry
	nrs := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "#if"):
			c := evalCond(line, defs, nr3264)
			stack = append(stack, frame{on, c, c})
			on = on && c
			continue
		case strings.HasPrefix(line, "#else"):
			if len(stack) == 0 {
				return nil, fmt.Errorf("#else without #if")
			}
			f := &stack[len(stack)-1]
			on = f.parent && !f.cond
			continue
		case strings.HasPrefix(line, "#endif"):
			if len(stack) == 0 {
				return nil, fmt.Errorf("#endif without #if")
			}
			on = stack[len(stack)-1].parent
			stack = stack[:len(stack)-1]
			continue
		}
		if !on {
			continue
		}
		if m := reDefineNr.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[3])
			if m[1] != "" {
				nr3264[m[2]] = n
			} else if m[2] != "syscalls" {
				nrs[m[2]] = n
			}
		} else if m := reAlias.FindStringSubmatch(line); m != nil {
			n, ok := nr3264[m[2]]
			if !ok {
				return nil, fmt.Errorf("alias of unknown __NR3264_%s", m[2])
			}
			nrs[m[1]] = n
			entry[m[1]] = entry["3264:"+m[2]]
		} else if m := reSyscall.FindStringSubmatch(line); m != nil {
			key := m[3]
			if m[2] != "" {
				key = "3264:" + m[3]
			}
			e := m[4]
			if (m[1] == "SC_3264" || m[1] == "SC_COMP_3264") && m[5] != "" {
				e = m[5] // the 64-bit entry
			}
			entry[key] = e
		}
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("unterminated #if")
	}
	var es []Entry
	for name, n := range nrs {
		es = append(es, Entry{Nr: n, Name: name, Entry: entry[name]})
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Nr < es[j].Nr })
	return es, sc.Err()
}

func evalCond(line string, defs map[string]bool, nr3264 map[string]int) bool {
	switch {
	case strings.HasPrefix(line, "#ifndef"):
		return !defs[strings.Fields(line)[1]]
	case strings.HasPrefix(line, "#ifdef"):
		name := strings.Fields(line)[1]
		if v, ok := strings.CutPrefix(name, "__NR3264_"); ok {
			_, d := nr3264[v]
			return d
		}
		return defs[name]
	}
	expr := strings.TrimPrefix(line, "#if")
	if i := strings.Index(expr, "/*"); i >= 0 {
		expr = expr[:i]
	}
	for _, or := range strings.Split(expr, "||") {
		all := true
		for _, t := range strings.Split(or, "&&") {
			t = strings.TrimSpace(t)
			v := false
			switch {
			case t == "__BITS_PER_LONG != 32", t == "__BITS_PER_LONG == 64":
				v = true
			case t == "__BITS_PER_LONG == 32":
			case strings.HasPrefix(t, "!"):
				m := reIf.FindStringSubmatch(t)
				v = m != nil && !defs[m[1]]
			default:
				m := reIf.FindStringSubmatch(t)
				v = m != nil && defs[m[1]]
			}
			all = all && v
		}
		if all {
			return true
		}
	}
	return false
}

var reProto = regexp.MustCompile(`asmlinkage\s+long\s+(\w+)\s*\(([^;]*)\)\s*;`)

// parseProtos reads `asmlinkage long sys_x(...);` declarations. The first
// declaration of a name wins unless override (syscalls.h declares some
// under alternative CONFIG_ branches).
func parseProtos(b []byte, protos map[string][]Arg, override bool) {
	// Join continuation lines, drop comments.
	src := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(string(b), " ")
	src = strings.Join(strings.Fields(src), " ")
	for _, m := range reProto.FindAllStringSubmatch(src, -1) {
		if _, ok := protos[m[1]]; ok && !override {
			continue
		}
		var args []Arg
		params := strings.TrimSpace(m[2])
		if params != "void" && params != "" {
			for i, p := range strings.Split(params, ",") {
				args = append(args, classify(m[1], i, strings.TrimSpace(p)))
			}
		}
		protos[m[1]] = args
	}
}

var (
	fdNames    = set("fd", "oldfd", "newfd", "fd_in", "fd_out", "epfd", "out_fd", "in_fd", "ufd", "pidfd", "fdin", "fdout")
	dirfdNames = set("dfd", "olddfd", "newdfd", "dirfd")
	typeWords  = set("const", "unsigned", "signed", "int", "long", "short", "char", "struct", "union", "__user", "void")
)

func set(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// classify gives an argument its kind from its C type and name: the
// kernel's prototypes are the only source.
func classify(entry string, i int, p string) Arg {
	words := strings.FieldsFunc(p, func(r rune) bool { return r == ' ' || r == '*' })
	name := ""
	if len(words) > 1 {
		last := words[len(words)-1]
		if !typeWords[last] && !strings.HasSuffix(last, "_t") && last != "u32" && last != "u64" && last != "__u32" && last != "__u64" && !(len(words) == 2 && words[0] == "struct") {
			name = last
		}
	}
	if name == "" {
		name = fmt.Sprintf("arg%d", i)
	}
	ptr := strings.Contains(p, "*")
	kind := "int"
	switch {
	case ptr && strings.Contains(p, "char __user *") && !strings.Contains(p, "*const") && strings.HasPrefix(p, "const") &&
		(strings.Contains(name, "name") || strings.Contains(name, "path") || name == "special" || name == "library" || name == "old" || name == "new"):
		kind = "path"
	case ptr:
		kind = "ptr"
	case fdNames[name]:
		kind = "fd"
	case dirfdNames[name]:
		kind = "dirfd"
	case name == "flags" && (entry == "sys_open" || entry == "sys_openat"):
		kind = "oflags"
	case name == "mode" && strings.Contains(p, "umode_t"):
		kind = "mode"
	case name == "prot":
		kind = "prot"
	case name == "flags" && strings.HasPrefix(entry, "sys_mmap"):
		kind = "mmapflags"
	case name == "sig" && !strings.Contains(p, "unsigned"):
		kind = "signal"
	case name == "addr" || name == "start" || name == "brk":
		kind = "ptr"
	case strings.Contains(p, "unsigned") || strings.Contains(p, "size_t") || strings.Contains(p, "u32") || strings.Contains(p, "u64"):
		kind = "uint"
	}
	return Arg{Name: name, Kind: kind}
}

// Write renders the spec file.
func (s *Spec) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# kboost system call spec: numbers, names, entry points and argument kinds,\n")
	fmt.Fprintf(bw, "# derived from %s by `go run ./sysent/gen -extract` (sysent/internal/sysspec).\n", s.Source)
	fmt.Fprintf(bw, "# Derived data: regenerate, do not edit. `proto ENTRY NAME:KIND...`, `arch NAME`, `NR NAME ENTRY`.\n")
	names := make([]string, 0, len(s.Protos))
	for n := range s.Protos {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(bw, "proto %s", n)
		for _, a := range s.Protos[n] {
			fmt.Fprintf(bw, " %s:%s", a.Name, a.Kind)
		}
		fmt.Fprintln(bw)
	}
	for _, a := range s.Arches {
		fmt.Fprintf(bw, "arch %s\n", a.Name)
		for _, e := range a.Entries {
			ent := e.Entry
			if ent == "" {
				ent = "-"
			}
			fmt.Fprintf(bw, "%d %s %s\n", e.Nr, e.Name, ent)
		}
	}
	return bw.Flush()
}

// Parse reads a spec file.
func Parse(r io.Reader) (*Spec, error) {
	s := &Spec{Protos: map[string][]Arg{}}
	kinds := set(Kinds...)
	sc := bufio.NewScanner(r)
	ln := 0
	var cur *Arch
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		switch f[0] {
		case "proto":
			if len(f) < 2 {
				return nil, fmt.Errorf("line %d: proto without a name", ln)
			}
			args := []Arg{}
			for _, a := range f[2:] {
				n, k, ok := strings.Cut(a, ":")
				if !ok || !kinds[k] {
					return nil, fmt.Errorf("line %d: bad argument %q (want NAME:KIND, KIND one of %v)", ln, a, Kinds)
				}
				args = append(args, Arg{n, k})
			}
			s.Protos[f[1]] = args
		case "arch":
			if len(f) != 2 {
				return nil, fmt.Errorf("line %d: arch takes one name", ln)
			}
			s.Arches = append(s.Arches, Arch{Name: f[1]})
			cur = &s.Arches[len(s.Arches)-1]
		default:
			if cur == nil || len(f) != 3 {
				return nil, fmt.Errorf("line %d: want `NR NAME ENTRY` inside an arch", ln)
			}
			nr, err := strconv.Atoi(f[0])
			if err != nil || nr < 0 || nr > 4096 {
				return nil, fmt.Errorf("line %d: bad number %q", ln, f[0])
			}
			e := Entry{Nr: nr, Name: f[1], Entry: f[2]}
			if e.Entry == "-" {
				e.Entry = ""
			}
			cur.Entries = append(cur.Entries, e)
		}
	}
	return s, sc.Err()
}

var goArch = map[string]string{"x86-64": "X86_64", "i386": "I386", "arm64": "ARM64", "arm": "ARM"}

// Generate renders the Go tables of package sysent.
func Generate(s *Spec) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by sysent/gen from spec/linux-6.1.spec; DO NOT EDIT.\n\npackage sysent\n\n")
	for _, a := range s.Arches {
		g, ok := goArch[a.Name]
		if !ok {
			return nil, fmt.Errorf("arch %q has no sysent table", a.Name)
		}
		fmt.Fprintf(&b, "var entries%s = []Entry{\n", g)
		for _, e := range a.Entries {
			fmt.Fprintf(&b, "{Nr: %d, Name: %q", e.Nr, e.Name)
			if args, ok := s.Protos[e.Entry]; ok && e.Entry != "" {
				fmt.Fprintf(&b, ", Known: true, Args: []Arg{")
				for _, a := range args {
					fmt.Fprintf(&b, "{%q, Kind%s}, ", a.Name, strings.ToUpper(a.Kind[:1])+a.Kind[1:])
				}
				fmt.Fprintf(&b, "}")
			}
			fmt.Fprintf(&b, "},\n")
		}
		fmt.Fprintf(&b, "}\n\n")
	}
	return format.Source(b.Bytes())
}
