package spec

import (
	"errors"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"00 add Eb,Gb\n",                        // before any map
		"map nosuch\n",                          // unknown map
		"map one\n00 add Eb,Gb\n00 add Eb,Gb\n", // twice
		"map one\n00/1 add\n",                   // group before plain
		"map one\nzz add\n",                     // bad hex
		"map one\n00 add Eb,Gb bogus\n",         // unknown flag
		"map one\n00 add Ib,Iz\n",               // unsupported immediate pair
	} {
		_, err := Parse(strings.NewReader(src))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse(%q) = %v, want *ParseError", src, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("map one\n00 add Eb,Gb\nf6 grp3 Eb\nf6/0 test Eb,Ib\n")
	f.Add("map 0f\n78.66 extrq Vdq,Ib,Ib2\n01!c1 vmcall -\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(strings.NewReader(src))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		_ = s
	})
}
