package boost

import "sort"

// An audit asks a dozen site questions at every instruction boundary of a
// function, and each question is a binary search over a table of the whole
// kernel (tens of thousands of entries). A window narrows every table of a
// *StaticSites to the entries that can matter inside one address range, once per
// function; queries inside the range then search a handful of entries (usually
// none), and queries outside it go to the full tables. Answers are identical.

// tableWindow is the part of one SiteTable that can overlap [lo, hi).
type tableWindow struct {
	t      *SiteTable
	lo, hi uint64 // the window; queries whose End lies in (lo, hi] are answered here
	spans  []Span
	maxEnd []uint64
	before uint64 // the table's maxEnd just below the window (0 if none)
}

func (w *tableWindow) reset(t *SiteTable, lo, hi uint64) {
	w.t, w.lo, w.hi = t, lo, hi
	w.spans, w.maxEnd, w.before = nil, nil, 0
	if !t.Known() {
		return
	}
	a := sort.Search(len(t.spans), func(i int) bool { return t.spans[i].Start >= lo })
	b := a + sort.Search(len(t.spans)-a, func(i int) bool { return t.spans[a+i].Start >= hi })
	w.spans, w.maxEnd = t.spans[a:b], t.maxEnd[a:b]
	if a > 0 {
		w.before = t.maxEnd[a-1]
	}
}

// Overlaps is SiteTable.Overlaps.
func (w *tableWindow) Overlaps(s Span) (hit, known bool) {
	if !w.t.Known() {
		return false, false
	}
	if s.End <= w.lo || s.End > w.hi {
		return w.t.Overlaps(s)
	}
	// The last span starting before s.End is in the window or just below it;
	// maxEnd is the prefix maximum of the whole table.
	lo, hi := 0, len(w.spans) // first span with Start >= s.End
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if w.spans[m].Start < s.End {
			lo = m + 1
		} else {
			hi = m
		}
	}
	i := lo - 1
	if i < 0 {
		return w.before > s.Start, true
	}
	return w.maxEnd[i] > s.Start, true
}

// siteWindow answers Sites queries for one function from windows of a
// *StaticSites. Not safe for concurrent use (one per Auditor).
type siteWindow struct {
	base                                                       *StaticSites
	lo, hi                                                     uint64
	ftrace, extable, jump, static, bug, smp, entry, init, text tableWindow
	black                                                      []int // blacklist indices overlapping [lo, hi), highest first
}

func (w *siteWindow) reset(lo, hi uint64) {
	b := w.base
	w.lo, w.hi = lo, hi
	w.ftrace.reset(b.FtraceLocs, lo, hi)
	w.extable.reset(b.ExTableAddrs, lo, hi)
	w.jump.reset(b.JumpLabels, lo, hi)
	w.static.reset(b.StaticCalls, lo, hi)
	w.bug.reset(b.Bugs, lo, hi)
	w.smp.reset(b.SMPLocks, lo, hi)
	w.entry.reset(b.Entry, lo, hi)
	w.init.reset(b.Init, lo, hi)
	w.text.reset(b.TextRanges, lo, hi)
	w.black = w.black[:0]
	if b.BlacklistKnown {
		b.maxEndOnce.Do(b.buildMaxEnd)
		i := sort.Search(len(b.Blacklist), func(i int) bool { return b.Blacklist[i].Start >= hi })
		for j := i - 1; j >= 0 && b.maxEnd[j] > lo; j-- {
			if r := b.Blacklist[j]; r.End > lo {
				w.black = append(w.black, j)
			}
		}
	}
}

func (w *siteWindow) Ftrace(s Span) (bool, bool)     { return w.ftrace.Overlaps(s) }
func (w *siteWindow) ExTable(s Span) (bool, bool)    { return w.extable.Overlaps(s) }
func (w *siteWindow) JumpLabel(s Span) (bool, bool)  { return w.jump.Overlaps(s) }
func (w *siteWindow) StaticCall(s Span) (bool, bool) { return w.static.Overlaps(s) }
func (w *siteWindow) Bug(a uint64) (bool, bool)      { return w.bug.Overlaps(Span{a, a + 1}) }
func (w *siteWindow) SMPLock(s Span) (bool, bool)    { return w.smp.Overlaps(s) }
func (w *siteWindow) EntryText(a uint64) (bool, bool) {
	return w.entry.Overlaps(Span{a, a + 1})
}
func (w *siteWindow) InitText(a uint64) (bool, bool) { return w.init.Overlaps(Span{a, a + 1}) }
func (w *siteWindow) Text(a uint64) (bool, bool)     { return w.text.Overlaps(Span{a, a + 1}) }

// Blacklisted is StaticSites.Blacklisted: of the ranges holding a, the one
// latest in the (Start-sorted) list wins.
func (w *siteWindow) Blacklisted(a uint64) (BlacklistKind, bool, bool) {
	b := w.base
	if !b.BlacklistKnown {
		return BlacklistNone, false, false
	}
	if a < w.lo || a >= w.hi {
		return b.Blacklisted(a)
	}
	for _, j := range w.black {
		if r := b.Blacklist[j]; a >= r.Start && a < r.End {
			return r.Kind, true, true
		}
	}
	return BlacklistNone, false, true
}
