package boost

import (
	"math/rand"
	"sort"
	"testing"
)

// TestSiteWindowMatchesTables checks every query of a window against the full
// tables it narrows, on random nested and overlapping spans.
func TestSiteWindowMatchesTables(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	spans := func(n int, maxLen uint64) []Span {
		s := make([]Span, n)
		for i := range s {
			a := 0x1000 + uint64(rng.Intn(4000))
			s[i] = Span{a, a + 1 + uint64(rng.Int63n(int64(maxLen)))}
		}
		return s
	}
	for round := 0; round < 50; round++ {
		st := &StaticSites{
			FtraceLocs: NewSiteTable(spans(40, 1)), ExTableAddrs: NewSiteTable(spans(60, 1)),
			JumpLabels: NewSiteTable(spans(30, 5)), StaticCalls: NewSiteTable(spans(10, 5)),
			Bugs: NewSiteTable(spans(20, 1)), SMPLocks: NewSiteTable(spans(20, 1)),
			Entry: NewSiteTable(spans(2, 300)), Init: NewSiteTable(spans(3, 500)),
			TextRanges: NewSiteTable(spans(2, 3000)), BlacklistKnown: true,
		}
		if round%5 == 0 {
			st.JumpLabels = nil // unknown table
		}
		for _, s := range spans(25, 400) {
			st.Blacklist = append(st.Blacklist, BlacklistRange{Span: s, Kind: BlacklistKind(1 + rng.Intn(5))})
		}
		sort.Slice(st.Blacklist, func(i, j int) bool { return st.Blacklist[i].Start < st.Blacklist[j].Start })
		w := &siteWindow{base: st}
		for fn := 0; fn < 20; fn++ {
			lo := 0x1000 + uint64(rng.Intn(4000))
			hi := lo + 1 + uint64(rng.Intn(600))
			w.reset(lo, hi)
			for q := 0; q < 200; q++ {
				a := lo - 20 + uint64(rng.Intn(int(hi-lo)+40))
				s := Span{a, a + 1 + uint64(rng.Intn(15))}
				type pair struct{ hit, known bool }
				check := func(name string, got, want pair) {
					t.Helper()
					if got != want {
						t.Fatalf("round %d window [%#x,%#x) %s(%#x..%#x) = %v, tables say %v", round, lo, hi, name, s.Start, s.End, got, want)
					}
				}
				g1, g2 := w.Ftrace(s)
				w1, w2 := st.Ftrace(s)
				check("Ftrace", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.ExTable(s)
				w1, w2 = st.ExTable(s)
				check("ExTable", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.JumpLabel(s)
				w1, w2 = st.JumpLabel(s)
				check("JumpLabel", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.StaticCall(s)
				w1, w2 = st.StaticCall(s)
				check("StaticCall", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.SMPLock(s)
				w1, w2 = st.SMPLock(s)
				check("SMPLock", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.Bug(a)
				w1, w2 = st.Bug(a)
				check("Bug", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.EntryText(a)
				w1, w2 = st.EntryText(a)
				check("EntryText", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.InitText(a)
				w1, w2 = st.InitText(a)
				check("InitText", pair{g1, g2}, pair{w1, w2})
				g1, g2 = w.Text(a)
				w1, w2 = st.Text(a)
				check("Text", pair{g1, g2}, pair{w1, w2})
				gk, gh, gn := w.Blacklisted(a)
				wk, wh, wn := st.Blacklisted(a)
				if gk != wk || gh != wh || gn != wn {
					t.Fatalf("Blacklisted(%#x) in [%#x,%#x) = %v %v %v, tables say %v %v %v", a, lo, hi, gk, gh, gn, wk, wh, wn)
				}
			}
		}
	}
}
