package kernelsim

import (
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// FuzzParseCond checks the --it condition parser on any input: no panic,
// and a condition it accepts names itself (or is a documented alias).
func FuzzParseCond(f *testing.F) {
	for _, s := range []string{"eq", "NE", "hs", "lo", "al", "nv", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := parseCond(s)
		if !ok {
			return
		}
		l := strings.ToLower(s)
		if c > 14 || l != decode.Cond(c).String() && !(l == "hs" && c == 2) && !(l == "lo" && c == 3) {
			t.Fatalf("%q parsed as %d (%v)", s, c, decode.Cond(c))
		}
	})
}
