package boost

import (
	"strings"
	"testing"
)

// TestA32GridGolden checks the A32 grid against the kernel's decisions in
// testdata/linux-6.1-arm.golden (Linux 6.1's arch/arm/probes code): for
// every word, its encoding and its cell must report the kernel's verdict
// (reject, simulate: emulate, slot: singlestep).
func TestA32GridGolden(t *testing.T) {
	testA32GridGolden(t, linux61ARM, A32GridLayout, false)
}

// TestThumbGridGolden is TestA32GridGolden for Thumb-2 (T16 and T32) with
// testdata/linux-6.1-arm-thumb.golden.
func TestThumbGridGolden(t *testing.T) {
	testA32GridGolden(t, linux61Thumb, ThumbGridLayout, true)
}

func testA32GridGolden(t *testing.T, p *Policy, l *ArmGridLayout, thumb bool) {
	g := p.ArmGrid(l)
	var checked, undef, missEnc, missCell int
	for _, r := range readA32Golden(t, thumb) {
		var want Verdict
		switch strings.Fields(r.want)[0] {
		case "reject":
			want = Reject
		case "simulate":
			want = Emulate
		case "slot":
			want = SingleStep
		default:
			t.Fatalf("golden %08x: %q", r.v, r.want)
		}
		e := g.EncOf(r.v)
		if e == nil {
			undef++
			continue
		}
		checked++
		row, col := l.CellOf(r.v)
		if e.Count[want] == 0 {
			missEnc++
			if missEnc <= 10 {
				t.Errorf("%08x: kernel %s, encoding %q (spec line %d) sampled %v", r.v, want, e.Op.Name, e.Op.Line, e.Count)
			}
		}
		if g.Cells[row][col].Count[want] == 0 {
			missCell++
			if missCell <= 10 {
				t.Errorf("%08x: kernel %s, cell %d/%d %v", r.v, want, row, col, g.Cells[row][col].Count)
			}
		}
	}
	t.Logf("%d golden rows checked (%d unallocated skipped): %d encodings and %d cells miss the kernel's verdict",
		checked, undef, missEnc, missCell)
	if checked < 1000 {
		t.Errorf("only %d rows checked", checked)
	}
}
