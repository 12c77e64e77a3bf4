package boost_test

import (
	"testing"

	"github.com/kboost/kboost/boost"
)

// FuzzParseNames: ParseVerdict and Lookup accept exactly the names that
// Verdict.String and Policy.Name print.
func FuzzParseNames(f *testing.F) {
	for _, s := range []string{"boost", "singlestep", "reject", "linux-6.1", "uprobes-x86", "linux-6.1-arm64", "", "Boost"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := boost.ParseVerdict(s); err == nil && v.String() != s {
			t.Fatalf("ParseVerdict(%q) = %v", s, v)
		} else if err != nil && err.Error() == "" {
			t.Fatalf("ParseVerdict(%q): empty error", s)
		}
		if p, err := boost.Lookup(s); err == nil && p.Name != s {
			t.Fatalf("Lookup(%q) = %s", s, p.Name)
		} else if err != nil && err.Error() == "" {
			t.Fatalf("Lookup(%q): empty error", s)
		}
	})
}
