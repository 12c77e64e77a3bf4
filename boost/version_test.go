package boost

import (
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

func TestForKernel(t *testing.T) {
	for _, c := range []struct {
		release string
		mode    decode.Mode
		want    string
		note    string
	}{
		{"6.1.0-57-amd64", decode.Mode64, "linux-6.1", "kernel 6.1.0-57-amd64: policy linux-6.1"},
		{"6.12.117+deb13-amd64", decode.Mode64, "linux-6.12", "policy linux-6.12"},
		{"6.12.117+deb12-686", decode.Mode32, "linux-6.12", "policy linux-6.12"},
		{"7.2.13+deb14-arm64", decode.ModeA64, "linux-7.2-arm64", "policy linux-7.2-arm64"},
		{"6.18.44", decode.Mode64, "linux-6.12", "not modelled: policy linux-6.12 (the nearest older modelled version, 6.12)"},
		{"6.6.1", decode.ModeA64, "linux-6.1-arm64", "nearest older"},
		{"8.0", decode.Mode64, "linux-7.2", "not modelled"},
		{"5.10.0-30-amd64", decode.Mode64, "linux-6.1", "older than every modelled version"},
		{"", decode.Mode64, "linux-6.1", "kernel version unknown"},
		{"7.2.13", decode.ModeA32, "linux-6.1-arm", "policy linux-6.1-arm"},
		{"6.12.1", decode.ModeT32, "linux-6.1-thumb", "policy linux-6.1-thumb"},
	} {
		p, note := ForKernel(c.release, c.mode)
		if p == nil || p.Name != c.want || !strings.Contains(note, c.note) {
			t.Errorf("ForKernel(%q, %v) = %v, %q; want %s, a note with %q", c.release, c.mode, p, note, c.want, c.note)
		}
		if p != nil && !p.Supports(c.mode) {
			t.Errorf("%s does not model %v", p.Name, c.mode)
		}
	}
}

// TestDefaultPolicy: every arch kboost decodes has a default policy that
// models it, the one README.md names for it.
func TestDefaultPolicy(t *testing.T) {
	want := map[string]string{"x86-64": "linux-6.1", "i386": "linux-6.1", "arm64": "linux-6.1-arm64", "arm": "linux-6.1-arm", "thumb": "linux-6.1-thumb"}
	for _, a := range decode.Arches {
		p := DefaultPolicy(a)
		if p == nil || p.Name != want[a.Name] || !p.Supports(a.Mode) {
			t.Errorf("%s: default policy %v, want %s", a.Name, p, want[a.Name])
		}
	}
}
