package boost

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kboost/kboost/internal/memhint"

	"github.com/kboost/kboost/decode"
)

// Span is a half-open address range [Start, End).
type Span struct{ Start, End uint64 }

// Overlaps reports whether s and t share an address.
func (s Span) Overlaps(t Span) bool { return s.Start < t.End && t.Start < s.End }

// BlacklistKind says why an address is on the kprobe blacklist.
type BlacklistKind uint8

const (
	BlacklistNone     BlacklistKind = iota
	BlacklistSymbol                 // NOKPROBE_SYMBOL() (the _kprobe_blacklist section)
	BlacklistKprobes                // .kprobes.text (__kprobes)
	BlacklistNoinstr                // .noinstr.text
	BlacklistEntry                  // entry text (__entry_text_start..end, x86 arch list)
	BlacklistIRQEntry               // .irqentry.text / .softirqentry.text (older kernels)
	BlacklistOther                  // any other range the kernel lists
)

// Rule returns the rule id of the blacklist kind.
func (k BlacklistKind) Rule() string { return blacklistRule(k).ID }

// Sites is what an offline audit knows about special addresses of one kernel
// image. Every query returns known=false when the corresponding table is not
// available, so "unknown (no table)" differs from "no". Range queries take a
// half-open Span and report whether any site overlaps it, with the kernel's
// notion of a site's extent:
//   - Ftrace: one address per ftrace record (__mcount_loc); hit when a record
//     address lies in the span (ftrace_location_range).
//   - ExTable: the faulting-instruction address of each __ex_table entry; hit
//     when one lies in the span (search_exception_tables).
//   - JumpLabel: [code, code+size) of each __jump_table entry (2 or 5 bytes);
//     hit on overlap (jump_label_text_reserved's addr_conflict).
//   - StaticCall: [addr, addr+5) of each static_call_sites entry.
//   - Bug: the address of each __bug_table entry (find_bug: exact match).
//   - SMPLock: the address of each .smp_locks entry (alternatives_text_reserved).
//
// A nil Sites means nothing is known.
type Sites interface {
	Ftrace(s Span) (hit, known bool)
	ExTable(s Span) (hit, known bool)
	JumpLabel(s Span) (hit, known bool)
	StaticCall(s Span) (hit, known bool)
	Bug(addr uint64) (hit, known bool)
	SMPLock(s Span) (hit, known bool)
	// Blacklisted reports the blacklist range holding addr (after the kernel's
	// suffixed-symbol rule: for "foo.cold" the caller checks foo as well).
	Blacklisted(addr uint64) (kind BlacklistKind, hit, known bool)
	// EntryText reports whether addr is in __entry_text_start..__entry_text_end.
	EntryText(addr uint64) (hit, known bool)
	// InitText reports whether addr is in __init text (freed after boot).
	InitText(addr uint64) (hit, known bool)
	// Text reports whether addr is kernel (or module) text at all.
	Text(addr uint64) (hit, known bool)
}

// SiteTable is a sorted set of spans answering overlap queries in O(log n). The
// zero value is an unknown table; NewSiteTable makes a known one.
type SiteTable struct {
	known  bool
	spans  []Span // sorted by Start; End is the running maximum for overlap search
	maxEnd []uint64
}

// NewSiteTable builds a known table from spans (any order; empty spans are
// treated as one byte long, the kernel's "address" sites).
func NewSiteTable(spans []Span) *SiteTable {
	return newSiteTable(append(make([]Span, 0, len(spans)), spans...))
}

// newSiteTable is NewSiteTable taking ownership of spans.
func newSiteTable(spans []Span) *SiteTable {
	t := &SiteTable{known: true, spans: spans}
	for i := range t.spans {
		if t.spans[i].End <= t.spans[i].Start {
			t.spans[i].End = t.spans[i].Start + 1
		}
	}
	// Kernel tables usually come sorted: check before sorting.
	if !slices.IsSortedFunc(t.spans, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) }) {
		sort.Slice(t.spans, func(i, j int) bool { return t.spans[i].Start < t.spans[j].Start })
	}
	t.maxEnd = make([]uint64, len(t.spans))
	memhint.Prefault(t.maxEnd)
	var m uint64
	for i, s := range t.spans {
		if s.End > m {
			m = s.End
		}
		t.maxEnd[i] = m
	}
	return t
}

// NewAddrTable builds a known table of single addresses.
func NewAddrTable(addrs []uint64) *SiteTable {
	spans := make([]Span, len(addrs))
	memhint.Prefault(spans)
	for i, a := range addrs {
		spans[i] = Span{a, a + 1}
	}
	return newSiteTable(spans)
}

// Known reports whether the table was supplied.
func (t *SiteTable) Known() bool { return t != nil && t.known }

// Len returns the number of spans.
func (t *SiteTable) Len() int {
	if t == nil {
		return 0
	}
	return len(t.spans)
}

// Overlaps reports whether any span overlaps s, and whether the table is known.
func (t *SiteTable) Overlaps(s Span) (hit, known bool) {
	if !t.Known() {
		return false, false
	}
	// Last span starting before s.End.
	i := sort.Search(len(t.spans), func(i int) bool { return t.spans[i].Start >= s.End }) - 1
	if i < 0 {
		return false, true
	}
	// Any span up to i whose End > s.Start? maxEnd is monotone.
	return t.maxEnd[i] > s.Start, true
}

// Contains reports whether addr lies in a span.
func (t *SiteTable) Contains(addr uint64) (hit, known bool) {
	return t.Overlaps(Span{addr, addr + 1})
}

// BlacklistRange is one kprobe blacklist entry.
type BlacklistRange struct {
	Span
	Kind   BlacklistKind
	Symbol string
}

// StaticSites implements Sites from tables; nil fields are unknown tables. The
// kimage package's tables are adapted into this.
type StaticSites struct {
	FtraceLocs, ExTableAddrs, JumpLabels, StaticCalls, Bugs, SMPLocks *SiteTable
	Blacklist                                                         []BlacklistRange // sorted by Start; nil = unknown
	BlacklistKnown                                                    bool
	Entry, Init, TextRanges                                           *SiteTable

	maxEndOnce sync.Once
	maxEnd     []uint64 // prefix maximum of Blacklist[].End
}

func (s *StaticSites) Ftrace(sp Span) (bool, bool)     { return s.FtraceLocs.Overlaps(sp) }
func (s *StaticSites) ExTable(sp Span) (bool, bool)    { return s.ExTableAddrs.Overlaps(sp) }
func (s *StaticSites) JumpLabel(sp Span) (bool, bool)  { return s.JumpLabels.Overlaps(sp) }
func (s *StaticSites) StaticCall(sp Span) (bool, bool) { return s.StaticCalls.Overlaps(sp) }
func (s *StaticSites) Bug(a uint64) (bool, bool)       { return s.Bugs.Contains(a) }
func (s *StaticSites) SMPLock(sp Span) (bool, bool)    { return s.SMPLocks.Overlaps(sp) }
func (s *StaticSites) EntryText(a uint64) (bool, bool) { return s.Entry.Contains(a) }
func (s *StaticSites) InitText(a uint64) (bool, bool)  { return s.Init.Contains(a) }
func (s *StaticSites) Text(a uint64) (bool, bool)      { return s.TextRanges.Contains(a) }

// Blacklisted searches the blacklist (entries may overlap; the first hit wins).
func (s *StaticSites) Blacklisted(a uint64) (BlacklistKind, bool, bool) {
	if !s.BlacklistKnown {
		return BlacklistNone, false, false
	}
	s.maxEndOnce.Do(s.buildMaxEnd)
	i := sort.Search(len(s.Blacklist), func(i int) bool { return s.Blacklist[i].Start > a })
	// Ranges may nest: walk back only while some earlier range still reaches a.
	for j := i - 1; j >= 0 && s.maxEnd[j] > a; j-- {
		if r := s.Blacklist[j]; a >= r.Start && a < r.End {
			return r.Kind, true, true
		}
	}
	return BlacklistNone, false, true
}

// buildMaxEnd records, for each blacklist range (sorted by Start), the largest
// End among it and all earlier ranges.
func (s *StaticSites) buildMaxEnd() {
	s.maxEnd = make([]uint64, len(s.Blacklist))
	var m uint64
	for j, r := range s.Blacklist {
		m = max(m, r.End)
		s.maxEnd[j] = m
	}
}

// Env is everything besides the instruction that a decision depends on.
type Env struct {
	Config Config
	// Sites answers special-address queries; nil means nothing is known.
	Sites Sites
	// SlotAddr is where the kprobe slot would be (module_alloc area); 0 = unknown,
	// in which case the RIP-relative overflow test is assumed to pass and slot
	// images use 0 as the slot address.
	SlotAddr uint64
	// FentryAddr is the address of __fentry__ (to recognize an unpatched
	// `call __fentry__` at function entry); 0 = unknown (only the 5-byte nop is
	// recognized).
	FentryAddr uint64
	// ThunkStart, ThunkEnd are __indirect_thunk_start/__indirect_thunk_end (6.1
	// can_optimize with RETPOLINE); ThunkEnd == 0 means unknown.
	ThunkStart, ThunkEnd uint64
	// Mode is the instruction set of audited functions (0: the policy's first).
	Mode decode.Mode
	// BaseTraced answers, for the base name of a suffixed symbol ("foo" for
	// "foo.cold"), whether that function has an ftrace location (traced) and
	// whether that is known; trace_kprobe judges a suffixed symbol without an
	// ftrace location by its base function. nil: unknown.
	BaseTraced func(base string) (traced, known bool)
	// InferNotrace makes AuditFunc treat a function without an fentry site at its
	// entry as notrace (kprobe_events refuses it) when no ftrace table is known.
	// Off by default: right for a vmlinux, wrong for code built without -mfentry.
	InferNotrace bool
	// BootedEntry says the bytes are the running kernel's, after
	// ftrace_init_nop: on arm64 a function with an ftrace record then starts
	// `mov x9, x30` (after a BTI), so one still starting with two NOPs has no
	// record (an assembly vector padded with NOPs) and InferNotrace makes it
	// notrace.
	BootedEntry bool
}

// Func is one symbol to audit.
type Func struct {
	Name  string
	Addr  uint64
	Size  uint64 // symbol size; 0 means len(Bytes)
	Bytes []byte // the symbol's bytes (at least Size when available)
}

func hasCFIPrefix(name string) bool {
	return strings.HasPrefix(name, "__cfi_") || strings.HasPrefix(name, "__pfx_")
}
