package spec

import (
	"bufio"
	"bytes"
	"fmt"
	"go/format"
	"io"
	"sort"
	"strconv"
	"strings"
)

// MapNames lists the spec's map names in the order of the generated Tables.
var MapNames = []string{"one", "0f", "0f38", "0f3a", "3dnow", "xop8", "xop9", "xopa", "evex5", "evex6", "vex1", "vex2", "vex3"}

// Op is one parsed opcode form.
type Op struct {
	Mnemonic string
	Operands string
	Flags    []string // Go names of opcodes.F* constants
	Imm      string   // Go name of the opcodes.Imm* constant
	Branch   string   // Go name of the opcodes.Branch* constant
	Line     int
}

// Entry is everything the spec says about one opcode byte of one map.
type Entry struct {
	Plain  *Op
	Group  [8]*Op
	PGroup [4][8]*Op // group forms selected by a mandatory prefix (np, 66, f3, f2)
	Pfx    [4]*Op    // np, 66, f3, f2
	Exact  map[exactKey]*Op
}

// exactKey selects a form by its whole ModRM byte and, when pfx >= 0, a
// mandatory prefix (pfx -1: any prefix).
type exactKey struct {
	modrm byte
	pfx   int
}

// Spec is a parsed spec file.
type Spec struct {
	Maps map[string]*[256]Entry
}

// ParseError reports a malformed spec line.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("x86.spec:%d: %s", e.Line, e.Msg) }

var pfxIndex = map[string]int{"np": 0, "66": 1, "f3": 2, "f2": 3}

var flagNames = map[string]string{
	"i64": "FInv64", "o64": "FOnly64", "d64": "FDef64", "f64": "FForce64", "priv": "FPriv",
	"mem": "FModMem", "reg": "FModReg", "inv": "FInvalid", "prefix": "FPrefix", "modrm": "FModRM", "rmreg": "FModIgnored",
}

var branchNames = map[string]string{
	"jmp": "BranchJmp", "jcc": "BranchJcc", "loop": "BranchLoop", "call": "BranchCall",
	"jmp-indirect": "BranchJmpInd", "call-indirect": "BranchCallInd", "jmp-far": "BranchJmpFar",
	"call-far": "BranchCallFar", "ret": "BranchRet", "ret-far": "BranchRetFar", "iret": "BranchIret",
	"int": "BranchInt", "sys": "BranchSys", "ud": "BranchUD",
}

// Parse reads a spec file.
func Parse(r io.Reader) (*Spec, error) {
	s := &Spec{Maps: map[string]*[256]Entry{}}
	var cur *[256]Entry
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if f[0] == "map" {
			if len(f) != 2 || !known(f[1]) {
				return nil, &ParseError{n, fmt.Sprintf("bad map line %q", line)}
			}
			if s.Maps[f[1]] != nil {
				return nil, &ParseError{n, "map " + f[1] + " given twice"}
			}
			cur = new([256]Entry)
			s.Maps[f[1]] = cur
			continue
		}
		if cur == nil {
			return nil, &ParseError{n, "opcode before any map line"}
		}
		if err := parseLine(cur, f, n); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return s, nil
}

func known(name string) bool {
	for _, m := range MapNames {
		if m == name {
			return true
		}
	}
	return false
}

func parseRange(s string, max int) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	base := 16
	if max == 7 {
		base = 10
	}
	l, err := strconv.ParseUint(a, base, 8)
	if err != nil {
		return 0, 0, err
	}
	h := l
	if isRange {
		if h, err = strconv.ParseUint(b, base, 8); err != nil {
			return 0, 0, err
		}
	}
	if h < l || int(h) > max {
		return 0, 0, fmt.Errorf("bad range %q", s)
	}
	return int(l), int(h), nil
}

func parseLine(cur *[256]Entry, f []string, n int) error {
	key := f[0]
	var reg, exact, pfx string
	if i := strings.IndexAny(key, "/!"); i >= 0 {
		if key[i] == '/' {
			reg = key[i+1:]
		} else {
			exact = key[i+1:]
		}
		key = key[:i]
	}
	if i := strings.IndexByte(key, '.'); i >= 0 {
		pfx = key[i+1:]
		key = key[:i]
	}
	lo, hi, err := parseRange(key, 255)
	if err != nil {
		return &ParseError{n, "opcode: " + err.Error()}
	}
	if len(f) < 2 {
		return &ParseError{n, "missing mnemonic"}
	}
	op := &Op{Mnemonic: f[1], Line: n, Imm: "ImmNone", Branch: "BranchNone"}
	if op.Mnemonic == "-" {
		op.Mnemonic = ""
	}
	rest := f[2:]
	haveOperands := false
	if len(rest) > 0 && !isFlag(rest[0]) {
		haveOperands = true
		if rest[0] != "-" {
			op.Operands = rest[0]
		}
		rest = rest[1:]
	}
	for _, fl := range rest {
		if b, ok := strings.CutPrefix(fl, "br="); ok {
			bn, ok := branchNames[b]
			if !ok {
				return &ParseError{n, "unknown branch kind " + b}
			}
			op.Branch = bn
			continue
		}
		fn, ok := flagNames[fl]
		if !ok {
			return &ParseError{n, "unknown flag " + fl}
		}
		op.Flags = append(op.Flags, fn)
	}
	pi := -1
	if pfx != "" {
		var ok bool
		if pi, ok = pfxIndex[pfx]; !ok {
			return &ParseError{n, "unknown prefix " + pfx}
		}
	}
	for o := lo; o <= hi; o++ {
		e := &cur[o]
		switch {
		case reg != "" && pi >= 0:
			rl, rh, err := parseRange(reg, 7)
			if err != nil {
				return &ParseError{n, "reg: " + err.Error()}
			}
			parent := e.Plain
			if e.Pfx[pi] != nil {
				parent = e.Pfx[pi]
			}
			if parent == nil {
				return &ParseError{n, "group form before its plain or prefix line"}
			}
			for r := rl; r <= rh; r++ {
				g := *op
				if !haveOperands {
					g.Operands = parent.Operands
				}
				if err := finish(&g); err != nil {
					return &ParseError{n, err.Error()}
				}
				e.PGroup[pi][r] = &g
			}
		case reg != "":
			rl, rh, err := parseRange(reg, 7)
			if err != nil {
				return &ParseError{n, "reg: " + err.Error()}
			}
			if e.Plain == nil {
				return &ParseError{n, "group form before its plain line"}
			}
			for r := rl; r <= rh; r++ {
				g := *op
				if !haveOperands {
					g.Operands = e.Plain.Operands
				}
				g.Flags = mergeFlags(e.Plain.Flags, op.Flags)
				if err := finish(&g); err != nil {
					return &ParseError{n, err.Error()}
				}
				e.Group[r] = &g
			}
		case exact != "":
			b, err := strconv.ParseUint(exact, 16, 8)
			if err != nil {
				return &ParseError{n, "modrm: " + err.Error()}
			}
			parent := e.Plain
			if pi >= 0 && e.Pfx[pi] != nil {
				parent = e.Pfx[pi]
			}
			if parent == nil {
				return &ParseError{n, "exact form before its plain or prefix line"}
			}
			g := *op
			if !haveOperands {
				g.Operands = parent.Operands
			}
			if err := finish(&g); err != nil {
				return &ParseError{n, err.Error()}
			}
			if e.Exact == nil {
				e.Exact = map[exactKey]*Op{}
			}
			e.Exact[exactKey{byte(b), pi}] = &g
		case pi >= 0:
			g := *op
			if err := finish(&g); err != nil {
				return &ParseError{n, err.Error()}
			}
			e.Pfx[pi] = &g
		default:
			if e.Plain != nil {
				return &ParseError{n, fmt.Sprintf("opcode %02x given twice (line %d)", o, e.Plain.Line)}
			}
			g := *op
			if err := finish(&g); err != nil {
				return &ParseError{n, err.Error()}
			}
			e.Plain = &g
		}
	}
	return nil
}

func isFlag(s string) bool {
	_, ok := flagNames[s]
	return ok || strings.HasPrefix(s, "br=")
}

func mergeFlags(parent, own []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range append(append([]string{}, parent...), own...) {
		// A group form inherits mode flags but not validity ones of its own choosing.
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// finish derives the ModRM flag and the immediate kind from the operands.
func finish(op *Op) error {
	hasModRM := false
	for _, f := range op.Flags {
		if f == "FModRM" {
			hasModRM = true
		}
	}
	imm := []string{}
	if op.Operands != "" {
		for _, o := range strings.Split(op.Operands, ",") {
			switch o {
			case "":
				return fmt.Errorf("empty operand in %q", op.Operands)
			case "Ib", "Jb":
				imm = append(imm, "b")
			case "Iw":
				imm = append(imm, "w")
			case "Iz", "Jz":
				imm = append(imm, "z")
			case "Iv":
				imm = append(imm, "v")
			case "Id":
				imm = append(imm, "d")
			case "Ap":
				imm = append(imm, "p")
			case "Ob", "Ov":
				imm = append(imm, "o")
			case "Ib2":
				imm = append(imm, "2")
			default:
				// An addressing-method letter followed by a size in lower case (or
				// a bare M) is encoded in ModRM; register names (ES, DX) are not.
				if strings.ContainsRune("EGMRVWUNPQCDST", rune(o[0])) && (len(o) == 1 || o[1] >= 'a' && o[1] <= 'z') {
					hasModRM = true
				}
			}
		}
	}
	switch strings.Join(imm, "") {
	case "":
	case "b":
		op.Imm = "ImmB"
	case "w":
		op.Imm = "ImmW"
	case "z":
		op.Imm = "ImmZ"
	case "v":
		op.Imm = "ImmV"
	case "d":
		op.Imm = "ImmD"
	case "p":
		op.Imm = "ImmAp"
	case "o":
		op.Imm = "ImmMoffs"
	case "w2":
		op.Imm = "ImmWB"
	case "b2":
		op.Imm = "ImmBB"
	default:
		return fmt.Errorf("unsupported immediate combination in %q", op.Operands)
	}
	var fl []string
	for _, f := range op.Flags {
		if f != "FModRM" {
			fl = append(fl, f)
		}
	}
	if hasModRM {
		fl = append([]string{"FModRM"}, fl...)
	}
	op.Flags = fl
	return nil
}

// Generate renders the Go source of the tables.
func Generate(s *Spec) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by go run ./gen from spec/x86.spec; DO NOT EDIT.\n\npackage opcodes\n\n")
	for _, name := range MapNames {
		m := s.Maps[name]
		if m == nil {
			return nil, fmt.Errorf("spec has no map %s", name)
		}
		fmt.Fprintf(&b, "var table_%s = Table{\n", name)
		for o := 0; o < 256; o++ {
			e := &m[o]
			if e.Plain == nil && e.Pfx == [4]*Op{} {
				continue
			}
			fmt.Fprintf(&b, "0x%02x: {", o)
			if e.Plain != nil {
				fmt.Fprintf(&b, "Op: %s,", opLit(e.Plain))
			}
			if e.Group != [8]*Op{} {
				b.WriteString("Group: &[8]Op{")
				for r, g := range e.Group {
					if g != nil {
						fmt.Fprintf(&b, "%d: %s,", r, opLit(g))
					}
				}
				b.WriteString("},")
			}
			if e.Pfx != [4]*Op{} {
				b.WriteString("Pfx: &[4]Op{")
				for r, g := range e.Pfx {
					if g != nil {
						fmt.Fprintf(&b, "%d: %s,", r, opLit(g))
					}
				}
				b.WriteString("},")
			}
			if e.PGroup != [4][8]*Op{} {
				b.WriteString("PGroup: &[4][8]Op{")
				for pi, grp := range e.PGroup {
					if grp == [8]*Op{} {
						continue
					}
					fmt.Fprintf(&b, "%d: {", pi)
					for r, g := range grp {
						if g != nil {
							fmt.Fprintf(&b, "%d: %s,", r, opLit(g))
						}
					}
					b.WriteString("},")
				}
				b.WriteString("},")
			}
			if len(e.Exact) > 0 {
				keys := make([]exactKey, 0, len(e.Exact))
				for k := range e.Exact {
					keys = append(keys, k)
				}
				sort.Slice(keys, func(i, j int) bool {
					if keys[i].modrm != keys[j].modrm {
						return keys[i].modrm < keys[j].modrm
					}
					return keys[i].pfx < keys[j].pfx
				})
				b.WriteString("Exact: []ExactForm{")
				for _, k := range keys {
					fmt.Fprintf(&b, "{0x%02x, %d, %s},", k.modrm, k.pfx, opLit(e.Exact[k]))
				}
				b.WriteString("},")
			}
			b.WriteString("},\n")
		}
		b.WriteString("}\n\n")
	}
	b.WriteString("var tables = [...]*Table{")
	for _, name := range MapNames {
		fmt.Fprintf(&b, "&table_%s, ", name)
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}

func opLit(op *Op) string {
	flags := "0"
	if len(op.Flags) > 0 {
		flags = strings.Join(op.Flags, "|")
	}
	return fmt.Sprintf("Op{%q, %q, %s, %s, %s}", op.Mnemonic, op.Operands, flags, op.Imm, op.Branch)
}
