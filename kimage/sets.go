package kimage

import (
	"slices"
	"sort"
)

// AddrSet is a sorted set of addresses with O(log n) queries. The zero value
// is empty.
type AddrSet struct {
	a []uint64
}

// NewAddrSet sorts and deduplicates a (taking ownership of it).
func NewAddrSet(a []uint64) AddrSet {
	slices.Sort(a)
	return AddrSet{a: slices.Compact(a)}
}

// Len returns the number of addresses.
func (s AddrSet) Len() int { return len(s.a) }

// Addrs returns the sorted addresses (do not modify).
func (s AddrSet) Addrs() []uint64 { return s.a }

// Contains reports whether x is in the set.
func (s AddrSet) Contains(x uint64) bool {
	_, ok := slices.BinarySearch(s.a, x)
	return ok
}

// In returns the addresses in [lo, hi) (a sub-slice: do not modify).
func (s AddrSet) In(lo, hi uint64) []uint64 {
	i, _ := slices.BinarySearch(s.a, lo)
	j := i + sort.Search(len(s.a)-i, func(k int) bool { return s.a[i+k] >= hi })
	return s.a[i:j]
}

// Any reports whether some address lies in [lo, hi).
func (s AddrSet) Any(lo, hi uint64) bool { return len(s.In(lo, hi)) > 0 }

// Range is the half-open address range [Start, End), with an optional name (the
// function or table entry it came from).
type Range struct {
	Start, End uint64
	Name       string
}

// Contains reports whether addr lies in the range.
func (r Range) Contains(addr uint64) bool { return addr >= r.Start && addr < r.End }

// RangeSet is a set of disjoint ranges sorted by start, with O(log n) queries.
// Overlapping or touching input ranges are merged (the first name is kept).
type RangeSet struct {
	r []Range
}

// NewRangeSet sorts and merges rs (taking ownership of it). Empty ranges are
// dropped.
func NewRangeSet(rs []Range) RangeSet {
	rs = slices.DeleteFunc(rs, func(r Range) bool { return r.End <= r.Start })
	slices.SortStableFunc(rs, func(a, b Range) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start < out[n-1].End {
			if r.End > out[n-1].End {
				out[n-1].End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return RangeSet{r: slices.Clip(out)}
}

// Len returns the number of (merged) ranges.
func (s RangeSet) Len() int { return len(s.r) }

// Ranges returns the ranges in order (do not modify).
func (s RangeSet) Ranges() []Range { return s.r }

// Find returns the range holding addr.
func (s RangeSet) Find(addr uint64) (Range, bool) {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].End > addr })
	if i < len(s.r) && s.r[i].Start <= addr {
		return s.r[i], true
	}
	return Range{}, false
}

// Contains reports whether some range holds addr.
func (s RangeSet) Contains(addr uint64) bool {
	_, ok := s.Find(addr)
	return ok
}

// Overlaps reports whether some range intersects [lo, hi).
func (s RangeSet) Overlaps(lo, hi uint64) bool {
	if hi <= lo {
		return false
	}
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].End > lo })
	return i < len(s.r) && s.r[i].Start < hi
}
