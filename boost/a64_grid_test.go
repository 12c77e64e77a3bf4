package boost

import (
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/kernelref"
	"github.com/kboost/kboost/opcodes"
)

// goldenVerdict is the verdict a row of the kernel's golden table
// (testdata/linux-6.1-arm64.golden) states for a kprobe or a uprobe.
func goldenVerdict(t *testing.T, s string) Verdict {
	t.Helper()
	switch f := strings.Fields(s); f[0] {
	case "reject":
		return Reject
	case "simulate":
		return Emulate
	case "slot", "xol":
		return SingleStep
	default:
		t.Fatalf("golden outcome %q", s)
	}
	return 0
}

// TestA64GridGolden checks the grid against the kernel: for every plain row
// of the golden table (a word probed alone, no function context), the grid's
// encoding for that word and the word's cell must both report the verdict
// the kernel's own code gave, under linux-6.1-arm64 (kprobe column) and
// uprobes-arm64 (uprobe column). An encoding whose samples all agree must
// have the kernel's verdict as its Verdict.
func TestA64GridGolden(t *testing.T) {
	rows := readA64Golden(t, a64Golden61)
	for _, tc := range []struct {
		p      *Policy
		column func(r *kernelref.A64Row) string
	}{
		{linux61ARM64, func(r *kernelref.A64Row) string { return r.Kprobe }},
		{uprobesARM64, func(r *kernelref.A64Row) string { return r.Uprobe }},
	} {
		g := tc.p.A64Grid()
		var checked, undef, missEnc, missCell, wrongUniform int
		for i := range rows {
			r := &rows[i]
			if len(r.Pre) > 0 || r.NoSym || r.ExTable || r.Mis != 0 {
				continue
			}
			want := goldenVerdict(t, tc.column(r))
			e := g.EncOf(r.Word)
			if e == nil {
				undef++
				continue
			}
			checked++
			row, col := A64CellOf(r.Word)
			cell := &g.Cells[row][col]
			if e.Count[want] == 0 {
				missEnc++
				if missEnc < 20 {
					t.Errorf("%s: line %d %08x (%s): kernel %s, grid encoding %q (spec line %d) only %v",
						tc.p.Name, r.Line, r.Word, r.Note, want, e.Op.Name, e.Op.Line, e.Count)
				}
			}
			if cell.Count[want] == 0 {
				missCell++
				if missCell < 20 {
					t.Errorf("%s: line %d %08x: kernel %s, cell %x/%d (%s) has %v", tc.p.Name, r.Line, r.Word, want, row, col, cell.Code(), cell.Count)
				}
			}
			if !e.Mixed && e.Verdict != want {
				wrongUniform++
			}
		}
		t.Logf("%s: %d golden rows checked (%d unallocated words skipped); %d encodings miss the verdict, %d cells, %d uniform encodings differ",
			tc.p.Name, checked, undef, missEnc, missCell, wrongUniform)
		if checked < 1000 {
			t.Errorf("%s: only %d rows checked", tc.p.Name, checked)
		}
		if wrongUniform > 0 {
			t.Errorf("%s: %d encodings with uniform samples give another verdict than the kernel", tc.p.Name, wrongUniform)
		}
	}
}

// TestA64GridBoostModel checks the boost-arm64 grid against the model's
// definition: it boosts only what Linux 6.1 single-steps (the same slot with
// the BRK replaced by a branch back), so every word the grid shows boosted
// must be single-stepped by linux-6.1-arm64, and the grid must boost some
// encodings of every class that Linux 6.1 steps in bulk.
func TestA64GridBoostModel(t *testing.T) {
	g := boostARM64.A64Grid()
	k := linux61ARM64.A64Grid()
	var boosted int
	for i := range g.Encs {
		e := &g.Encs[i]
		if e.Verdict != Boost {
			continue
		}
		boosted++
		d := linux61ARM64.ClassifyBytesEnv(a64Bytes(e.Word), decode.ModeA64, g.Addr, linux61ARM64.GridEnv())
		if d.Verdict != SingleStep {
			t.Errorf("%08x (%s): boost-arm64 boosts it, linux-6.1-arm64 says %s %v", e.Word, e.Op.Name, d.Verdict, d.ReasonIDs())
		}
	}
	for _, c := range []opcodes.ArmClass{opcodes.ArmLoadStore, opcodes.ArmDataImm, opcodes.ArmDataReg, opcodes.ArmFPSIMD} {
		if k.Classes[c].Count[SingleStep] > 0 && g.Classes[c].Count[Boost] == 0 {
			t.Errorf("class %s: linux-6.1-arm64 steps %d encodings, boost-arm64 boosts none", c, k.Classes[c].Count[SingleStep])
		}
	}
	if boosted == 0 {
		t.Fatal("boost-arm64 boosts no encoding")
	}
	t.Logf("boost-arm64: %d of %d encodings boosted", boosted, len(g.Encs))
}
