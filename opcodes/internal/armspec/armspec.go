package armspec

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Line is one encoding line of a spec file.
type Line struct {
	Pattern string // as written
	Mask    uint32
	Value   uint32
	Width   int // 16 or 32
	Name    string
	Class   string   // Go identifier of the opcodes.Arm* class constant
	Flags   []string // Go identifiers of opcodes.Arm* flag constants
	Branch  string   // Go identifier of the opcodes.Branch* constant
	Cond    string   // Go identifier of the opcodes.ArmCond* constant
	Num     int      // line number in File
	File    string   // base name of the spec file the line is in (an included file's own name)
}

// Pos is the line's position, "file:line".
func (l Line) Pos() string { return fmt.Sprintf("%s:%d", l.File, l.Num) }

// Spec is a parsed spec file.
type Spec struct {
	File     string // base name, for messages and the generated header
	ISA      string // a64, a32, t32
	KeyShift uint
	KeyBits  uint
	Lines    []Line
}

// ParseError reports a malformed spec line.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// isa is one instruction set's part of the spec format.
type isa struct {
	ident string // Go identifier of its opcodes.Arm* ISA constant
	t16   bool   // 16-bit patterns are allowed too (Thumb's T16 encodings)
}

// isas are the instruction sets by the name the isa directive gives them;
// per-arch files add theirs (a64_isa.go, a32_isa.go).
var isas = map[string]isa{}

var classIdents = map[string]string{
	"unallocated": "ArmUnallocated", "branch": "ArmBranch", "exception": "ArmException",
	"system": "ArmSystem", "loadstore": "ArmLoadStore", "dpimm": "ArmDataImm", "dpreg": "ArmDataReg",
	"fpsimd": "ArmFPSIMD", "sve": "ArmSVE", "sme": "ArmSME",
}

var flagIdents = map[string]string{
	"pcrel": "ArmPCRel", "load": "ArmLoad", "store": "ArmStore", "excl": "ArmExclusive",
	"acq": "ArmAcquire", "rel": "ArmRelease", "atomic": "ArmAtomic", "pair": "ArmPair",
	"simd": "ArmSIMDReg", "hint": "ArmHint", "pac": "ArmPAC", "bti": "ArmBTI",
	"barrier": "ArmBarrier", "sysreg": "ArmSysReg", "wb": "ArmWriteback", "mops": "ArmMOPS",
	"alias": "ArmAlias", "group": "ArmGroup", "itflags": "ArmITFlags",
}

var branchIdents = map[string]string{
	"jmp": "BranchJmp", "jcc": "BranchJcc", "call": "BranchCall", "jmp-indirect": "BranchJmpInd",
	"call-indirect": "BranchCallInd", "ret": "BranchRet", "iret": "BranchIret", "int": "BranchInt",
	"ud": "BranchUD",
}

var condIdents = map[string]string{
	"rn=rm": "ArmCondRnEqRm", "rn=rm&!al": "ArmCondRnEqRmNotAL", "!al": "ArmCondNotAL",
	"imms<immr": "ArmCondImmsLtImmr", "lsl": "ArmCondLSL", "rd/rn=sp": "ArmCondRdOrRnSP",
	"movz": "ArmCondMovz", "movn": "ArmCondMovn", "orrmov": "ArmCondOrrMov", "badmask": "ArmCondBadMask", "oddpair": "ArmCondOddPair", "rt=rt2": "ArmCondRtEqRt2", "wboverlap": "ArmCondWBOverlap", "mopsregs": "ArmCondMOPSRegs",
	"rd=rm": "ArmCondRdEqRm", "pd=pm": "ArmCondPdEqPm", "pm=pg": "ArmCondPmEqPg", "pn=pm=pg": "ArmCondPnEqPmEqPg",
	"sve-badmask": "ArmCondSVEBadMask", "sve-movmask": "ArmCondSVEMovMask",
}

// Parse reads a spec file; file names it in messages. A spec read this way
// cannot include other files: use ParseFile for that.
func Parse(r io.Reader, file string) (*Spec, error) {
	s := &Spec{File: file, KeyShift: 25, KeyBits: 4}
	if err := parseInto(s, r, file, nil, 0); err != nil {
		return nil, err
	}
	return finish(s)
}

// ParseFile reads the spec file at path, and the files it includes (their
// names are relative to path's directory).
func ParseFile(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &Spec{File: filepath.Base(path), KeyShift: 25, KeyBits: 4}
	open := func(name string) (io.ReadCloser, error) { return os.Open(filepath.Join(filepath.Dir(path), name)) }
	if err := parseInto(s, f, s.File, open, 0); err != nil {
		return nil, err
	}
	return finish(s)
}

func finish(s *Spec) (*Spec, error) {
	if s.ISA == "" {
		return nil, &ParseError{File: s.File, Line: 1, Msg: "no `isa` directive"}
	}
	return s, nil
}

// maxIncludeDepth bounds nested includes (and so include cycles).
const maxIncludeDepth = 4

// parseInto appends the lines of r (named file) to s; open opens an included
// file, nil when includes are not possible.
func parseInto(s *Spec, r io.Reader, file string, open func(string) (io.ReadCloser, error), depth int) error {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		bad := func(format string, args ...any) error {
			return &ParseError{File: file, Line: n, Msg: fmt.Sprintf(format, args...)}
		}
		if !strings.Contains(text, "|") {
			f := strings.Fields(text)
			switch f[0] {
			case "isa":
				if len(f) != 2 || isas[f[1]].ident == "" {
					return bad("want `isa a64|a32|t32`")
				}
				s.ISA = f[1]
			case "index":
				if len(f) != 3 {
					return bad("want `index SHIFT BITS`")
				}
				sh, err1 := strconv.Atoi(f[1])
				nb, err2 := strconv.Atoi(f[2])
				if err1 != nil || err2 != nil || sh < 0 || nb < 1 || nb > 12 || sh+nb > 32 {
					return bad("bad index %q %q: SHIFT+BITS <= 32, 1 <= BITS <= 12", f[1], f[2])
				}
				s.KeyShift, s.KeyBits = uint(sh), uint(nb)
			case "include":
				if len(f) != 2 {
					return bad("want `include FILE`")
				}
				if open == nil {
					return bad("include %s: this spec is read without a directory (use ParseFile)", f[1])
				}
				if depth >= maxIncludeDepth {
					return bad("include %s: includes nested more than %d deep (a cycle?)", f[1], maxIncludeDepth)
				}
				if s.ISA == "" {
					return bad("include before the `isa` directive")
				}
				rc, err := open(f[1])
				if err != nil {
					return bad("include: %v", err)
				}
				err = parseInto(s, rc, filepath.Base(f[1]), open, depth+1)
				rc.Close()
				if err != nil {
					return err
				}
			default:
				return bad("unknown directive %q (want isa, index or include) or missing '|' separators", f[0])
			}
			continue
		}
		if s.ISA == "" {
			return bad("encoding before the `isa` directive")
		}
		parts := strings.Split(text, "|")
		if len(parts) != 4 {
			return bad("want PATTERN | NAME | CLASS | FLAGS, got %d fields", len(parts))
		}
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		l := Line{Pattern: parts[0], Name: parts[1], Num: n, File: file}
		mask, val, width, err := parsePattern(parts[0])
		if err != nil {
			return bad("%v", err)
		}
		if width != 32 && !(width == 16 && isas[s.ISA].t16) {
			return bad("pattern has %d positions, want 32", width)
		}
		if width == 16 {
			// A T16 encoding is the word 0000:hw; fixing the upper halfword
			// to zero keeps it from matching the second halfword of a T32
			// word (whose first halfword is never zero).
			mask |= 0xFFFF0000
		}
		l.Mask, l.Value, l.Width = mask, val, width
		if l.Name == "" || strings.ContainsAny(l.Name, " \t\"\\") {
			return bad("bad mnemonic %q", l.Name)
		}
		c, ok := classIdents[parts[2]]
		if !ok {
			return bad("unknown class %q", parts[2])
		}
		l.Class = c
		if (l.Name == "-") != (c == "ArmUnallocated") {
			return bad("name \"-\" goes with class unallocated and only with it")
		}
		for _, fl := range strings.FieldsFunc(parts[3], func(r rune) bool { return r == ' ' || r == ',' || r == '\t' }) {
			switch {
			case strings.HasPrefix(fl, "branch="):
				b, ok := branchIdents[fl[len("branch="):]]
				if !ok {
					return bad("unknown branch kind %q", fl)
				}
				l.Branch = b
			case strings.HasPrefix(fl, "if="):
				c, ok := condIdents[fl[len("if="):]]
				if !ok {
					return bad("unknown condition %q", fl)
				}
				l.Cond = c
			default:
				id, ok := flagIdents[fl]
				if !ok {
					return bad("unknown flag %q", fl)
				}
				l.Flags = append(l.Flags, id)
			}
		}
		s.Lines = append(s.Lines, l)
	}
	return sc.Err()
}

// parsePattern turns "sf:1 00 10001 0 x  imm12:12 Rn:5 Rd=11111" into a mask and
// value, most significant position first.
func parsePattern(p string) (mask, val uint32, width int, err error) {
	var bitsStr []byte
	for _, tok := range strings.Fields(p) {
		switch {
		case strings.Contains(tok, ":"):
			i := strings.IndexByte(tok, ':')
			n, e := strconv.Atoi(tok[i+1:])
			if e != nil || n < 1 || n > 32 || !isIdent(tok[:i]) {
				return 0, 0, 0, fmt.Errorf("bad field %q (want NAME:N)", tok)
			}
			bitsStr = append(bitsStr, bytes.Repeat([]byte("x"), n)...)
		case strings.Contains(tok, "="):
			i := strings.IndexByte(tok, '=')
			if !isIdent(tok[:i]) || !isBits(tok[i+1:]) {
				return 0, 0, 0, fmt.Errorf("bad field %q (want NAME=BITS)", tok)
			}
			bitsStr = append(bitsStr, tok[i+1:]...)
		case isBits(tok):
			bitsStr = append(bitsStr, tok...)
		default:
			return 0, 0, 0, fmt.Errorf("bad pattern token %q", tok)
		}
	}
	width = len(bitsStr)
	if width > 32 {
		return 0, 0, 0, fmt.Errorf("pattern has %d positions, more than 32", width)
	}
	for i, c := range bitsStr {
		bit := uint32(1) << (width - 1 - i)
		switch c {
		case '0':
			mask |= bit
		case '1':
			mask |= bit
			val |= bit
		}
	}
	return mask, val, width, nil
}

func isBits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c != '0' && c != '1' && c != 'x' {
			return false
		}
	}
	return true
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Generate renders the Go source of the tables for s: a variable named after
// the ISA in upper case (A64) of type *ArmTable.
func Generate(s *Spec, cmdline string) ([]byte, error) {
	var b bytes.Buffer
	up := strings.ToUpper(s.ISA)
	low := s.ISA
	fmt.Fprintf(&b, "// Code generated by %s from spec/%s; DO NOT EDIT.\n\n", cmdline, s.File)
	b.WriteString("package opcodes\n\n")
	fmt.Fprintf(&b, "// %s is the %s encoding table generated from spec/%s.\n", up, up, s.File)
	fmt.Fprintf(&b, "var %s = &ArmTable{ISA: %s, KeyShift: %d, KeyBits: %d, Ops: %sOps, Index: %sIndex[:]}\n\n",
		up, isas[s.ISA].ident, s.KeyShift, s.KeyBits, low, low)
	fmt.Fprintf(&b, "var %sOps = []ArmOp{\n", low)
	for _, l := range s.Lines {
		flags := "0"
		if len(l.Flags) > 0 {
			flags = strings.Join(l.Flags, " | ")
		}
		br := l.Branch
		if br == "" {
			br = "BranchNone"
		}
		cond := l.Cond
		if cond == "" {
			cond = "ArmCondNone"
		}
		fmt.Fprintf(&b, "\t{%q, %#08x, %#08x, %s, %s, %s, %s, %d, %q},\n", l.Name, l.Mask, l.Value, l.Class, flags, br, cond, l.Num, l.File)
	}
	b.WriteString("}\n\n")
	nkeys := 1 << s.KeyBits
	keyMask := uint32(nkeys-1) << s.KeyShift
	if len(s.Lines) > 1<<16 {
		return nil, fmt.Errorf("%s: %d lines, more than a uint16 index holds", s.File, len(s.Lines))
	}
	fmt.Fprintf(&b, "var %sIndex = [%d]ArmBucket{\n", low, nkeys)
	for k := 0; k < nkeys; k++ {
		kv := uint32(k) << s.KeyShift
		var idx []int
		for i, l := range s.Lines {
			if (l.Value^kv)&l.Mask&keyMask == 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) <= splitThreshold {
			fmt.Fprintf(&b, "\t%#x: {Ops: []uint16{%s}},\n", k, joinInts(idx))
			continue
		}
		sh, nb, subs := bestSplit(s, idx, keyMask)
		fmt.Fprintf(&b, "\t%#x: {SubShift: %d, SubBits: %d, Sub: [][]uint16{\n", k, sh, nb)
		for _, sub := range subs {
			fmt.Fprintf(&b, "\t\t{%s},\n", joinInts(sub))
		}
		b.WriteString("\t}},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting generated code: %w", err)
	}
	return src, nil
}

// Shadowed returns, for every line that can never match because earlier lines
// without conditions cover all of its words, the pair (covering line, covered
// line). It checks pairs only (a line covered by a union of several earlier
// lines is not reported).
func Shadowed(s *Spec) [][2]Line {
	var out [][2]Line
	for j, lj := range s.Lines {
		for _, li := range s.Lines[:j] {
			if li.Cond != "" {
				continue
			}
			// li covers lj when li's fixed bits are fixed the same way in lj.
			if li.Mask&lj.Mask == li.Mask && lj.Value&li.Mask == li.Value {
				out = append(out, [2]Line{li, lj})
				break
			}
		}
	}
	return out
}

// Cmdline is how the generated files name their generator.
const Cmdline = "go run ./gen -format arm"

// splitThreshold is the bucket size above which Generate splits a bucket on a
// second field.
const splitThreshold = 12

// bestSplit chooses the field (shift, bits <= 6, outside keyMask) that
// minimises the largest sub-bucket of the lines idx (then their total), and
// returns the sub-buckets in spec order.
func bestSplit(s *Spec, idx []int, keyMask uint32) (uint, uint, [][]int) {
	bestMax, bestSum := len(idx)+1, 0
	var bestSh, bestNb uint
	var best [][]int
	for nb := uint(1); nb <= 6; nb++ {
		for sh := uint(0); sh+nb <= 32; sh++ {
			fm := uint32(1<<nb-1) << sh
			if fm&keyMask != 0 {
				continue
			}
			subs := make([][]int, 1<<nb)
			mx, sum := 0, 0
			for v := range subs {
				sv := uint32(v) << sh
				for _, i := range idx {
					l := s.Lines[i]
					if (l.Value^sv)&l.Mask&fm == 0 {
						subs[v] = append(subs[v], i)
					}
				}
				mx = max(mx, len(subs[v]))
				sum += len(subs[v])
			}
			// Prefer a smaller worst case; among equals, fewer entries in all.
			if mx < bestMax || mx == bestMax && sum < bestSum {
				bestMax, bestSum, bestSh, bestNb, best = mx, sum, sh, nb, subs
			}
		}
	}
	return bestSh, bestNb, best
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
