package cli

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// FuzzParseHexArgs: the CLI's hex byte arguments ("48 8b 05", "0x90,0xc3",
// "\x0f\x0b") either give bytes whose plain hex reads back to the same bytes,
// or a usage error (exit status 2) with a message, for every arch; addresses
// likewise.
func FuzzParseHexArgs(f *testing.F) {
	f.Add("48 8b 05", "0x90,0xc3", `\x0f\x0b`)
	f.Add("4", "8", "")
	f.Add("zz", "0x", "ffffffff81000000")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		args := []string{a, b, c}
		for _, arch := range decode.Arches {
			got, err := hexArgs(arch, args, false, true)
			if err != nil {
				var ue *UsageError
				if !errors.As(err, &ue) || ue.Msg == "" {
					t.Fatalf("%s %q: error %T %v is not a usage error", arch.Name, args, err, err)
				}
				continue
			}
			again, err := hexArgs(arch, []string{hex.EncodeToString(got)}, false, true)
			if len(got) == 0 || err != nil || string(again) != string(got) {
				t.Fatalf("%s %q: % x, again % x (%v)", arch.Name, args, got, again, err)
			}
		}
		v, err := parseAddr(a)
		if err != nil {
			var ue *UsageError
			if !errors.As(err, &ue) || !strings.Contains(ue.Msg, "bad address") {
				t.Fatalf("parseAddr(%q): error %v", a, err)
			}
			return
		}
		if w, err := parseAddr(fmt.Sprintf("0X%X", v)); err != nil || w != v {
			t.Fatalf("parseAddr(%q) = %#x, again %#x (%v)", a, v, w, err)
		}
	})
}
