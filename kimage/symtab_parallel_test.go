package kimage

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestParseSymbolMapHalves checks that parsing a map in two halves at once gives
// exactly what one pass gives: the same symbols, and the same error with the
// same line number wherever the bad line is.
func TestParseSymbolMapHalves(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&b, "ffffffff81%06x T func_%d\n", i*16, i)
		if i%700 == 0 {
			b.WriteString("\n")
		}
	}
	text := b.String()
	parse := func(data string, threshold int) (*SymTab, error) {
		old := parallelMapSize
		parallelMapSize = threshold
		defer func() { parallelMapSize = old }()
		return parseSymbolMap([]byte(data))
	}
	one, err1 := parse(text, 1<<30)
	two, err2 := parse(text, 1)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if one.Len() != two.Len() || one.Len() != 5000 {
		t.Fatalf("%d vs %d symbols", one.Len(), two.Len())
	}
	for i := range one.syms {
		if one.syms[i] != two.syms[i] {
			t.Fatalf("symbol %d: %+v vs %+v", i, one.syms[i], two.syms[i])
		}
	}
	lines := strings.SplitAfter(text, "\n")
	for _, bad := range []int{10, len(lines) / 2, len(lines)/2 + 1, len(lines) - 3} {
		l := append([]string(nil), lines...)
		l[bad] = "not a symbol line\n"
		data := strings.Join(l, "")
		_, e1 := parse(data, 1<<30)
		_, e2 := parse(data, 1)
		if e1 == nil || e2 == nil || e1.Error() != e2.Error() || !errors.Is(e2, ErrCorrupt) {
			t.Fatalf("bad line %d: one pass says %v, halves say %v", bad+1, e1, e2)
		}
		if !strings.Contains(e2.Error(), fmt.Sprintf("line %d:", bad+1)) {
			t.Fatalf("bad line %d: %v", bad+1, e2)
		}
	}
	// All addresses zero (kptr_restrict) in both halves.
	var z bytes.Buffer
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&z, "0000000000000000 T func_%d\n", i)
	}
	if _, err := parse(z.String(), 1); !errors.Is(err, ErrKptrRestrict) {
		t.Fatalf("zero addresses: %v", err)
	}
}
