package loader

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseBlacklist: any kprobes/blacklist text gives ordered ranges with a
// one-word symbol, at most one per line, that print back (as the kernel
// prints them) to text giving the same ranges.
func FuzzParseBlacklist(f *testing.F) {
	f.Add([]byte("0xffffffff81000000-0xffffffff81000010\tfoo\n0xffffffff81000020-0xffffffff81000030\tbar\nbad\n0x2-0x1\tx\n"))
	f.Add([]byte("ffffffff81000000-ffffffff81000000 a [m]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rs := ParseBlacklist(b)
		if len(rs) > bytes.Count(b, []byte("\n"))+1 {
			t.Fatalf("%d ranges from %d lines", len(rs), bytes.Count(b, []byte("\n"))+1)
		}
		var out strings.Builder
		for _, r := range rs {
			if r.End < r.Start || r.Symbol == "" || strings.ContainsAny(r.Symbol, " \t\r\n\v\f") {
				t.Fatalf("range %+v", r)
			}
			fmt.Fprintf(&out, "0x%016x-0x%016x\t%s\n", r.Start, r.End, r.Symbol)
		}
		if again := ParseBlacklist([]byte(out.String())); len(rs) > 0 && !reflect.DeepEqual(again, rs) {
			t.Fatalf("%q gives %+v, printed %q gives %+v", b, rs, out.String(), again)
		}
	})
}
