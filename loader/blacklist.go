package loader

import (
	"bytes"
	"strconv"
	"strings"
)

// BlacklistRange is one line of kprobes/blacklist.
type BlacklistRange struct {
	Start, End uint64
	Symbol     string
}

// ParseBlacklist parses "0xSTART-0xEND<TAB>sym" lines.
func ParseBlacklist(b []byte) []BlacklistRange {
	var out []BlacklistRange
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) < 2 {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 64)
		e, err2 := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 64)
		if err1 != nil || err2 != nil || e < a {
			continue
		}
		out = append(out, BlacklistRange{a, e, f[1]})
	}
	return out
}
