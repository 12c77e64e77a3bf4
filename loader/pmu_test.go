package loader

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseConfigField(t *testing.T) {
	for _, c := range []struct {
		in           string
		shift, width uint
		bad          bool
	}{
		{"config:0\n", 0, 1, false},
		{"config:32-63", 32, 32, false},
		{"config1:0", 0, 0, true},
		{"config:9-3", 0, 0, true},
		{"config:x", 0, 0, true},
	} {
		s, w, err := ParseConfigField(c.in)
		if (err != nil) != c.bad || !c.bad && (s != c.shift || w != c.width) {
			t.Errorf("%q: %d %d %v", c.in, s, w, err)
		}
	}
}

// The format of 6.18's uprobe_profile (measured): file, event name, hits.
func TestParseUprobeProfile(t *testing.T) {
	in := "  /tmp/h4exp/t f_lea                                                     10\n  /usr/bin/bash kboost_0x1a2                 0\nbad line\n"
	want := []UprobeProfile{{"/tmp/h4exp/t", "f_lea", 10}, {"/usr/bin/bash", "kboost_0x1a2", 0}}
	if d := cmp.Diff(want, ParseUprobeProfile([]byte(in))); d != "" {
		t.Error(d)
	}
}
