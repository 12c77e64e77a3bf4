package kernelref

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

// FuzzReadTables: any text is a golden table (x86 rows, or arm64 rows) or
// is refused with an error wrapping ErrSyntax (a line longer than the
// scanner's buffer: bufio.ErrTooLong); every row read renders to a line that
// reads back to the same row; a Want renders to text that parses to itself.
func FuzzReadTables(f *testing.F) {
	f.Add("# header\n90\t64\tboost len=1\n\n5548:89e5|c3\t64,preempt,slot=1000\treject EILSEQ len=2\t# x\n")
	f.Add("# arm64\nd503201f\t-\tboost\tboost\n1f2003d5:d65f03c0\tnosym,extable\treject EINVAL\tsinglestep\t# n\n")
	f.Fuzz(func(t *testing.T, s string) {
		typed := func(err error) bool { return errors.Is(err, ErrSyntax) || errors.Is(err, bufio.ErrTooLong) }
		if tab, err := ReadTable(strings.NewReader(s)); err != nil {
			if !typed(err) {
				t.Fatalf("ReadTable: untyped error %v", err)
			}
		} else {
			for _, r := range tab.Rows {
				if _, err := ParseRow(r.String()); err != nil {
					t.Fatalf("row %q of line %d does not parse: %v", r.String(), r.Line, err)
				}
				if w, err := ParseWant(r.Want.String()); err != nil || w.String() != r.Want.String() {
					t.Fatalf("want %q parses to %q (%v)", r.Want.String(), w.String(), err)
				}
			}
		}
		rows, err := ReadA64Table(strings.NewReader(s))
		if err != nil {
			if !typed(err) {
				t.Fatalf("ReadA64Table: untyped error %v", err)
			}
			return
		}
		for _, r := range rows {
			again, err := ReadA64Table(strings.NewReader(r.String()))
			if err != nil || len(again) != 1 || again[0].String() != r.String() {
				t.Fatalf("row %q of line %d reads back as %v (%v)", r.String(), r.Line, again, err)
			}
		}
	})
}
