package kernelref

import (
	"fmt"
	"regexp"
	"strings"
)

// A piece names one top-level C construct to cut out of a kernel source file.
type piece struct {
	file string // path inside the source tree
	kind pieceKind
	name string // function, struct or macro name; for kindRange the first line's prefix
	end  string // kindRange: prefix of the last line
	nth  int    // kindFunc: take the nth definition (1-based); 0: it must be unique
	// optional pieces exist only in some kernel versions; missing, they are empty.
	optional bool
	// fix rewrites the extracted text (kept to the minimum the host needs).
	fix func(string) string
}

type pieceKind uint8

const (
	kindFunc   pieceKind = iota // a function definition, through its closing "}"
	kindStruct                  // "struct NAME {" through "};"
	kindRange                   // from a line starting with name through a line starting with end
	kindLines                   // every line matching the regexp in name
)

// cut returns the text of p from src. It fails when the construct is missing or
// ambiguous, so a changed kernel tree is reported instead of compiled wrongly.
func (p piece) cut(src string) (string, error) {
	lines := strings.Split(src, "\n")
	switch p.kind {
	case kindFunc:
		return cutFunc(lines, p.name, p.nth)
	case kindStruct:
		return cutBlock(lines, "struct "+p.name+" {", "};")
	case kindRange:
		return cutBlock(lines, p.name, p.end)
	case kindLines:
		re, err := regexp.Compile(p.name)
		if err != nil {
			return "", err
		}
		var out []string
		for _, l := range lines {
			if re.MatchString(l) {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return "", fmt.Errorf("%q not found: no line matches", p.name)
		}
		return strings.Join(out, "\n") + "\n", nil
	}
	return "", fmt.Errorf("unknown piece kind %d", p.kind)
}

// cutFunc finds the one definition of name at column 0: a line that starts with
// the name (or has a return type before it) followed by "(" and that is not a
// prototype, plus the return-type line before it when the type stands alone.
func cutFunc(lines []string, name string, nth int) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty function name")
	}
	re, err := regexp.Compile(`^([A-Za-z_][A-Za-z0-9_ ]*[ *])?` + regexp.QuoteMeta(name) + `\(`)
	if err != nil {
		return "", fmt.Errorf("function name %q: %v", name, err)
	}
	var defs []int
	for i, l := range lines {
		if re.MatchString(l) && !strings.HasSuffix(strings.TrimSpace(l), ";") {
			defs = append(defs, i)
		}
	}
	switch {
	case len(defs) == 0:
		return "", fmt.Errorf("function %s not found", name)
	case nth == 0 && len(defs) > 1:
		return "", fmt.Errorf("function %s is defined %d times (lines %d and %d)", name, len(defs), defs[0]+1, defs[1]+1)
	case nth > len(defs):
		return "", fmt.Errorf("function %s has %d definitions, not %d", name, len(defs), nth)
	}
	start := defs[0]
	if nth > 0 {
		start = defs[nth-1]
	}
	first := start
	if i := strings.Index(lines[start], name+"("); i >= 0 && !strings.Contains(lines[start][:i], " ") && start > 0 {
		prev := strings.TrimSpace(lines[start-1])
		if prev != "" && !strings.HasSuffix(prev, ";") && !strings.HasSuffix(prev, "}") &&
			!strings.HasSuffix(prev, "*/") && !strings.HasPrefix(prev, "#") {
			first = start - 1
		}
	}
	for i := start; i < len(lines); i++ {
		if lines[i] == "}" {
			return strings.Join(lines[first:i+1], "\n") + "\n", nil
		}
	}
	return "", fmt.Errorf("function %s has no closing brace at column 0", name)
}

// cutBlock returns the lines from the single line starting with begin through the
// next line starting with end.
func cutBlock(lines []string, begin, end string) (string, error) {
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, begin) {
			if start >= 0 {
				return "", fmt.Errorf("%q occurs twice (lines %d and %d)", begin, start+1, i+1)
			}
			start = i
		}
	}
	if start < 0 {
		return "", fmt.Errorf("%q not found", begin)
	}
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], end) {
			return strings.Join(lines[start:i+1], "\n") + "\n", nil
		}
	}
	return "", fmt.Errorf("%q has no end %q", begin, end)
}
