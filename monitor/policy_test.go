package monitor

import (
	"strings"
	"testing"
)

func TestPolicyDecide(t *testing.T) {
	p, err := ParsePolicy(strings.NewReader("# comment\nallow openat path=/etc/hosts\ndeny openat path=/etc/\ndeny unlink\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		paths []string
		deny  bool
	}{
		{"openat", []string{"/etc/hosts"}, false}, {"openat", []string{"/etc/shadow"}, true},
		{"openat", []string{"/tmp/x"}, false}, {"unlink", nil, true}, {"read", nil, false},
	} {
		r := p.Decide(c.name, c.paths, nil)
		if got := r != nil && r.Deny; got != c.deny {
			t.Errorf("%s %q: deny=%v, want %v (rule %v)", c.name, c.paths, got, c.deny, r)
		}
	}
	c, err := ParsePolicy(strings.NewReader("deny openat caller=outer path=/etc/\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Decide("openat", []string{"/etc/x"}, []string{"inner", "main"}) != nil || c.Decide("openat", []string{"/etc/x"}, []string{"inner", "outer"}) == nil {
		t.Error("caller= rule")
	}
	for _, bad := range []string{"permit x", "deny", "deny a b", "deny a path=", "allow a path=/x extra", "deny a caller=x caller=y", "deny a path=/x path=/y"} {
		if _, err := ParsePolicy(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParsePolicy: no panic on any input; a typed error or a policy.
func FuzzParsePolicy(f *testing.F) {
	f.Add("deny openat path=/etc/\nallow *\n")
	f.Add("# x\n\n deny  unlink ")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParsePolicy(strings.NewReader(in))
		if err != nil {
			return
		}
		p.Decide("openat", []string{"/etc/x"}, []string{"main"})
	})
}
