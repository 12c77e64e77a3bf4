package guest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"path"
	"sort"
	"strings"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
)

// The "kboost-verify-arm64" step records, for every instruction boundary of the
// chosen functions of a running kernel with fixed-width instructions (and a few
// misaligned offsets), what the kernel's kprobes do: accepted or errno, the
// kprobes/list flags, and the instruction slot from /proc/kcore. Where a boost
// policy for the architecture exists, each probe is predicted too. The
// architecture is a ProbeArch value; ARM64Probes is the one wired.

// ARM64VerifyStep is the step's name.
const ARM64VerifyStep = "kboost-verify-arm64"

// ARM64RecordVersion changes whenever what the step records changes, so that
// cached records of an older recorder are not used.
const ARM64RecordVersion = 1

// ARM64VerifyFile is the step's result entry (an ARM64Report).
const ARM64VerifyFile = "kboost-verify-arm64.json"

// ProbeArch is what the kernel-outcome recorder needs to know about an
// instruction set whose instructions all have one width.
type ProbeArch struct {
	Name string      // "arm64"
	Mode decode.Mode // the instruction set, for policies
	// Width is the instruction width: every multiple of it inside a function is
	// an instruction boundary.
	Width uint64
	// SlotSize is the size of one kernel instruction slot (MAX_INSN_SIZE words).
	SlotSize int
	// DefaultPolicy is the boost policy that predicts a kernel whose release
	// is unknown ("" none); a known release picks by boost.ForKernel.
	DefaultPolicy string
	// Step and File are the guest step recording this architecture and its
	// result entry.
	Step, File string
	// SlotMatch, when set, scores how well a slot (SlotSize bytes) can hold
	// the kernel's copy of the probed instruction inst (negative: it cannot),
	// for kernels that change what they copy (32-bit ARM: condition made AL,
	// registers renamed); nil: the slot must start with inst itself.
	SlotMatch func(slot, inst []byte) int
	// NoKcore: the kernel has no /proc/kcore (CONFIG_PROC_KCORE off); function
	// bytes come from the host (the kernel image), and slots are read only
	// when the host reads guest memory (Env.HostMemory).
	NoKcore bool
	// KernelTTB, when set, returns the physical address of the kernel's own
	// first-level translation table, for host reads (Env.HostMemory).
	KernelTTB func() (uint64, error)
	// Symbols are core symbols whose addresses the recorder keeps in
	// ARM64Report.Symbols (the host maps the kernel image with them).
	Symbols []string
	// Optimizer, when set: the kernel may jump-optimize probes; the recorder
	// enables each round and waits for the delayed optimizer (OptimizerWait) before
	// reading [OPTIMIZED].
	Optimizer *OptimizerWait
}

// ARM64Probes is AArch64: 4-byte instructions; a slot is two words, the copied
// instruction and BRK #6 (MAX_INSN_SIZE 2 since v5.10).
var ARM64Probes = &ProbeArch{Name: "arm64", Mode: decode.ModeA64, Width: 4, SlotSize: 8, DefaultPolicy: "linux-6.1-arm64",
	Step: ARM64VerifyStep, File: ARM64VerifyFile}

// ARM64VerifyArgs are the step's arguments.
type ARM64VerifyArgs struct {
	// Policy predicts each probe; "" means ARM64Probes.DefaultPolicy, "none"
	// records the kernel's outcomes only. A policy that does not exist in the
	// guest binary is reported in the notes and nothing is predicted.
	Policy string `json:"policy,omitempty"`
	// Funcs names functions exactly; Pattern is a glob over function names;
	// Sample picks that many (after Funcs/Pattern, or among all functions up to
	// MaxSize bytes; 0: 512) with a generator seeded by Seed.
	Funcs   []string `json:"funcs,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	Sample  int      `json:"sample,omitempty"`
	Seed    int64    `json:"seed,omitempty"`
	MaxSize uint64   `json:"max_size,omitempty"`
	// Misaligned is how many offsets that are not a multiple of the instruction
	// width are tried per function (0: 2; negative: none).
	Misaligned int `json:"misaligned,omitempty"`
	// IncludeInit keeps __init functions (freed after boot) in a sample.
	IncludeInit bool `json:"include_init,omitempty"`
	// RoundSize bounds the probes registered at once (0: 384). A round's
	// probes are removed together; fewer than a slot page's worth (512 on
	// arm64) keeps the kernel at one slot page.
	RoundSize int `json:"round_size,omitempty"`
}

// KernelFunc is what the running kernel says about one verified function.
type KernelFunc struct {
	Name string `json:"name"`
	Addr uint64 `json:"addr"`
	Size uint64 `json:"size"` // to the next kallsyms symbol, as the kernel computes it
	// Traced: listed in available_filter_functions (it has an ftrace location).
	Traced bool `json:"traced"`
	// Blacklist names the kprobes/blacklist entries overlapping the function.
	Blacklist []string `json:"blacklist,omitempty"`
	Init      bool     `json:"init,omitempty"` // inside _sinittext.._einittext
	Bytes     string   `json:"bytes"`          // hex, from /proc/kcore
}

// ARM64Report is kboost-verify-arm64.json: the records (VerifyReport's fields,
// one VerifyRecord per probe; Boundary false for misaligned offsets) and the
// kernel facts the guest read.
type ARM64Report struct {
	VerifyReport
	Arch string `json:"arch"`
	// Predicted is true when a policy predicted every record.
	Predicted bool         `json:"predicted"`
	Funcs     []KernelFunc `json:"funcs"`
	// SlotPages are the kprobe_insn_page addresses seen.
	SlotPages []uint64 `json:"slot_pages,omitempty"`
	// SlotsRead: the slot pages were read after every round (from
	// /proc/kcore, or by the host), so an accepted probe without a slot had
	// none. SlotsBy says how ("kcore", "host").
	SlotsRead bool   `json:"slots_read,omitempty"`
	SlotsBy   string `json:"slots_by,omitempty"`
	// RoundSlots are the slot pages after each round, kept when the guest
	// has no instruction bytes to match them with (NoKcore): the host matches
	// them (MatchRecordedSlots).
	RoundSlots []RoundSlots `json:"round_slots,omitempty"`
	// Blacklist is /sys/kernel/debug/kprobes/blacklist as read.
	Blacklist string `json:"blacklist,omitempty"`
	// ErrorLogs holds one tracefs error_log message per refusing errno.
	ErrorLogs map[string]string `json:"error_logs,omitempty"`
	// The core text (_stext.._etext) and init text (_sinittext.._einittext).
	TextStart uint64 `json:"text_start"`
	TextEnd   uint64 `json:"text_end"`
	InitStart uint64 `json:"init_start,omitempty"`
	InitEnd   uint64 `json:"init_end,omitempty"`
	// Symbols are the addresses of ProbeArch.Symbols found in kallsyms.
	Symbols map[string]uint64 `json:"symbols,omitempty"`
}

// predictionNote starts the notes PredictARM64Report writes.
const predictionNote = "prediction:"

// PredictARM64Report (re)computes every record's prediction from the recorded
// function bytes and kernel facts with the policy ("" ARM64Probes'
// DefaultPolicy, "none" clears the predictions) and the kernel's config (nil:
// the policy's defaults); tables, when not nil, add the jump-label and
// exception tables. A policy the binary does not have is reported in the
// notes, and the records stay unpredicted.
func PredictARM64Report(rep *ARM64Report, policy string, cfg *kimage.KConfig, tables *ARM64Tables) {
	PredictFixedReport(rep, ARM64Probes, policy, cfg, tables)
}

// PredictFixedReport is PredictARM64Report for any fixed-width ProbeArch
// (policy "": the one boost.ForKernel picks for the recorded kernel release,
// else arch's DefaultPolicy).
func PredictFixedReport(rep *ARM64Report, arch *ProbeArch, policy string, cfg *kimage.KConfig, tables *ARM64Tables) {
	rep.Predicted, rep.Policy = false, ""
	notes := rep.Notes[:0]
	for _, n := range rep.Notes {
		if !strings.HasPrefix(n, predictionNote) {
			notes = append(notes, n)
		}
	}
	rep.Notes = notes
	if policy == "" {
		policy = arch.DefaultPolicy
		if p, note := boost.ForKernel(rep.Release, arch.Mode); p != nil && rep.Release != "" {
			policy = p.Name
			rep.Notes = append(rep.Notes, predictionNote+" "+note)
		}
	}
	for i := range rep.Records {
		r := &rep.Records[i]
		r.Verdict, r.Rules, r.Predicted = "", nil, Outcome{}
	}
	if policy == "none" {
		return
	}
	sites := LiveSites(loader.ParseBlacklist([]byte(rep.Blacklist)), rep.TextStart, rep.TextEnd, rep.InitStart, rep.InitEnd, tables)
	pred, err := NewArchPredictor(arch, policy, cfg, sites)
	if err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s none: %v", predictionNote, err))
		return
	}
	byFunc := map[string][]*VerifyRecord{}
	for i := range rep.Records {
		r := &rep.Records[i]
		byFunc[r.Func] = append(byFunc[r.Func], r)
	}
	for _, f := range rep.Funcs {
		code, err := hex.DecodeString(f.Bytes)
		if err == nil && uint64(len(code)) < f.Size {
			err = fmt.Errorf("%d bytes recorded for size %d", len(code), f.Size)
		}
		if err == nil {
			err = pred.PredictFunc(kimage.Symbol{Name: f.Name, Addr: f.Addr, Size: f.Size, Func: true}, code, byFunc[f.Name])
		}
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s %s: %v", predictionNote, f.Name, err))
		}
	}
	rep.Policy, rep.Predicted = pred.Policy.Name, true
	known, unknown := "kprobes/blacklist, core and init text", "jump-label sites, exception table, BUG sites"
	if tables != nil {
		known += fmt.Sprintf(", %d jump-label sites and %d exception-table entries from the Image", len(tables.JumpLabels), len(tables.ExTable))
		unknown = "BUG sites"
		if tables.ExTable == nil {
			known = strings.Replace(known, " and 0 exception-table entries", "", 1)
			unknown = "exception table (not checked by arm kprobes), BUG sites"
			if tables.ExTableUnknown {
				unknown = "exception table (not located in the Image), BUG sites"
			}
		}
		if tables.Ftrace != nil {
			known += fmt.Sprintf(", %d ftrace locations from the Image", len(tables.Ftrace))
		}
	}
	ftrace := "ftrace sites inferred from the function bytes"
	if tables != nil && tables.Ftrace != nil {
		ftrace = "ftrace sites from the Image"
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("%s known to the policy: %s; not known (no %s vmlinux): %s; %s",
		predictionNote, known, arch.Name, unknown, ftrace))
}

// ARM64Fields are the fields CompareARM64 compares, in table order.
var ARM64Fields = []string{"errno", "addr", "ftrace", "slot"}

// CompareARM64 says, per field, whether a predicted record agrees with the
// kernel (absent: the field does not apply): errno always, addr when both
// accept, slot when either side has one.
func CompareARM64(r *VerifyRecord) map[string]bool {
	p, k := &r.Predicted, &r.Kernel
	m := map[string]bool{"errno": sameErrno(p.Errno, k.Errno), "ftrace": p.Ftrace == k.Ftrace}
	if p.Errno == "" && k.Errno == "" {
		m["addr"] = p.Addr == k.Addr
	}
	if p.Slot != "" || k.Slot != "" {
		m["slot"] = p.Slot == k.Slot
	}
	return m
}

// CoreFuncs returns the core kernel's text symbols with their sizes as the
// kernel computes them (kallsyms_lookup_size_offset: up to the next higher
// symbol address) and how many core symbols share each name.
func CoreFuncs(entries []kimage.Symbol) (funcs []kimage.Symbol, count map[string]int) {
	var addrs []uint64
	count = map[string]int{}
	for _, e := range entries {
		if e.Module != "" || e.Addr == 0 {
			continue
		}
		addrs = append(addrs, e.Addr)
		count[e.Name]++
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	for _, e := range entries {
		if e.Module != "" || e.Addr == 0 || !strings.ContainsRune("tTwW", rune(e.Type)) {
			continue
		}
		i := sort.Search(len(addrs), func(i int) bool { return addrs[i] > e.Addr })
		if i == len(addrs) {
			continue // the last symbol has no known end
		}
		funcs = append(funcs, kimage.Symbol{Name: e.Name, Addr: e.Addr, Size: addrs[i] - e.Addr, Func: true})
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Addr < funcs[j].Addr })
	return funcs, count
}

// SymbolAddr returns the address of the first core symbol named name.
func SymbolAddr(entries []kimage.Symbol, name string) (uint64, bool) {
	for _, e := range entries {
		if e.Module == "" && e.Name == name {
			return e.Addr, true
		}
	}
	return 0, false
}

// SelectCoreFuncs chooses functions as VerifyArgs does: exact names, a glob, a
// sample. Only uniquely named functions inside [textStart, textEnd) qualify;
// __init functions (inside [initStart, initEnd)) only when asked for by name
// or with a.IncludeInit.
func SelectCoreFuncs(funcs []kimage.Symbol, count map[string]int, a *ARM64VerifyArgs, textStart, textEnd, initStart, initEnd uint64) ([]kimage.Symbol, error) {
	maxSize := a.MaxSize
	if maxSize == 0 {
		maxSize = 512
	}
	isInit := func(s kimage.Symbol) bool { return s.Addr >= initStart && s.Addr < initEnd }
	ok := func(s kimage.Symbol) bool {
		inText := s.Addr >= textStart && s.Addr+s.Size <= textEnd || isInit(s)
		return s.Size > 0 && count[s.Name] == 1 && !audit.IsMarker(s.Name) && inText
	}
	byName := map[string]kimage.Symbol{}
	for _, s := range funcs {
		byName[s.Name] = s
	}
	var out []kimage.Symbol
	for _, n := range a.Funcs {
		s, found := byName[n]
		if !found {
			return nil, fmt.Errorf("function %q: %w", n, kimage.ErrNoSymbol)
		}
		if !ok(s) {
			return nil, fmt.Errorf("function %q: not a uniquely named, sized function in kernel text", n)
		}
		out = append(out, s)
	}
	if a.Pattern != "" || (len(a.Funcs) == 0 && a.Sample > 0) {
		for _, s := range funcs {
			if a.Pattern != "" {
				if m, _ := path.Match(a.Pattern, s.Name); !m {
					continue
				}
			}
			if ok(s) && (a.Pattern != "" || s.Size <= maxSize) && (a.IncludeInit || !isInit(s)) {
				out = append(out, s)
			}
		}
	}
	if a.Sample > 0 && len(out) > a.Sample {
		r := rand.New(rand.NewSource(a.Seed))
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:a.Sample]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	if len(out) == 0 {
		return nil, fmt.Errorf("no function selected (funcs %v, pattern %q, sample %d)", a.Funcs, a.Pattern, a.Sample)
	}
	return out, nil
}

// ProbeOffsets lists the offsets probed in a function of size bytes: every
// multiple of arch.Width, then up to misaligned offsets that are not, spread
// over the function (1, then width-offsets 2, 3, 1... at later instructions).
func (a *ProbeArch) ProbeOffsets(size uint64, misaligned int) (boundaries, others []uint64) {
	w := a.Width
	n := size / w
	for off := uint64(0); off < n*w; off += w {
		boundaries = append(boundaries, off)
	}
	if misaligned <= 0 || n == 0 || w < 2 {
		return boundaries, nil
	}
	step := n / uint64(misaligned)
	if step == 0 {
		step = 1
	}
	for k, i := uint64(0), 0; k < n && i < misaligned; k, i = k+step, i+1 {
		others = append(others, k*w+1+uint64(i)%(w-1))
	}
	return boundaries, others
}

// SlotMatcher finds the kernel slot of each stepped probe in snapshots of the
// slot pages: the slot whose first instruction word is the probed one (the
// best by ProbeArch.SlotMatch's score), preferring slots that changed since
// the previous snapshot, each slot claimed once. On arm64 the kernel decides from the instruction word alone (the
// exclusive back-scan only refuses), so an instruction that is simulated never
// has a copy in any slot: a probe without a matching slot has none.
type SlotMatcher struct {
	Arch *ProbeArch
	slot []matchSlot
}

type matchSlot struct {
	addr    uint64
	b       []byte
	changed bool
	claimed bool
}

// Reset loads the pages (by address) after a round and what they held before it.
func (m *SlotMatcher) Reset(before, after map[uint64][]byte) {
	m.slot = m.slot[:0]
	pages := make([]uint64, 0, len(after))
	for a := range after {
		pages = append(pages, a)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	n := m.Arch.SlotSize
	for _, pa := range pages {
		b, old := after[pa], before[pa]
		for i := 0; i+n <= len(b); i += n {
			s := matchSlot{addr: pa + uint64(i), b: b[i : i+n]}
			s.changed = len(old) < i+n || !bytes.Equal(old[i:i+n], s.b)
			m.slot = append(m.slot, s)
		}
	}
}

// Claim returns the slot holding inst first, changed slots first, and claims it.
func (m *SlotMatcher) Claim(inst []byte) (addr uint64, b []byte, ok bool) {
	if len(inst) == 0 {
		return 0, nil, false
	}
	// The best match (ProbeArch.SlotMatch's score), then a changed slot,
	// then the lowest address.
	best, bestScore := -1, -1
	for i := range m.slot {
		s := &m.slot[i]
		if s.claimed {
			continue
		}
		sc := m.score(s.b, inst)
		if sc < 0 {
			continue
		}
		if best < 0 || sc > bestScore || sc == bestScore && s.changed && !m.slot[best].changed {
			best, bestScore = i, sc
		}
	}
	if best < 0 {
		return 0, nil, false
	}
	s := &m.slot[best]
	s.claimed = true
	return s.addr, s.b, true
}

func (m *SlotMatcher) score(slot, inst []byte) int {
	if m.Arch.SlotMatch != nil {
		return m.Arch.SlotMatch(slot, inst)
	}
	if bytes.HasPrefix(slot, inst) {
		return 0
	}
	return -1
}

// RoundSlots are the slot pages (hex, by page address) after one round.
type RoundSlots struct {
	Round int               `json:"round"`
	Pages map[uint64]string `json:"pages"`
}

// MatchRecordedSlots fills the kernel slot of every accepted, non-[FTRACE]
// probe of rep from rep.RoundSlots, as the recorder does with pages it reads
// itself (SlotMatcher: the slot holding the probed instruction, changed in
// the probe's round first, in registration order); the records' Bytes must
// be filled in. Each round's pages are compared with the previous round's
// (the recorder reads them once per round, and removing probes only marks
// their slots free).
func MatchRecordedSlots(rep *ARM64Report, arch *ProbeArch) error {
	if len(rep.RoundSlots) == 0 {
		return nil
	}
	byRound := map[int][]*VerifyRecord{}
	for i := range rep.Records {
		r := &rep.Records[i]
		if r.Round > 0 && r.Kernel.Errno == "" && !r.Kernel.Ftrace && r.Kernel.Addr != 0 {
			byRound[r.Round] = append(byRound[r.Round], r)
		}
	}
	m := SlotMatcher{Arch: arch}
	before := map[uint64][]byte{}
	for _, rs := range rep.RoundSlots {
		after := map[uint64][]byte{}
		for a, h := range rs.Pages {
			b, err := hex.DecodeString(h)
			if err != nil {
				return fmt.Errorf("round %d: slot page %#x: %w", rs.Round, a, err)
			}
			after[a] = b
		}
		m.Reset(before, after)
		for _, r := range byRound[rs.Round] {
			inst, _ := hex.DecodeString(r.Bytes)
			if a, b, found := m.Claim(inst); found {
				r.Kernel.Slot, r.Kernel.SlotAddr = hex.EncodeToString(b), a
			} else {
				r.Kernel.Slot, r.Kernel.SlotAddr = "", 0
			}
		}
		before = after
	}
	return nil
}

// A64Word returns the little-endian instruction word of hex bytes ("" -> 0, false).
func A64Word(hexBytes string) (uint32, bool) {
	b, err := hex.DecodeString(hexBytes)
	if err != nil || len(b) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// ArchPredictor predicts probes for a ProbeArch with a boost policy.
type ArchPredictor struct {
	// Optimization predicts [OPTIMIZED] (the arch has optprobes).
	Optimization bool
	Policy       *boost.Policy
	Env          *boost.Env
	au           *boost.Auditor
}

// LiveSites is what a running kernel tells without its vmlinux: the kprobes
// blacklist (debugfs kprobes/blacklist), the core and init text ranges
// (kallsyms). The other tables (ftrace locations, exception table, jump
// labels, BUG sites) stay unknown.
func LiveSites(bl []loader.BlacklistRange, textStart, textEnd, initStart, initEnd uint64, tables *ARM64Tables) *boost.StaticSites {
	s := &boost.StaticSites{BlacklistKnown: true, TextRanges: boost.NewSiteTable([]boost.Span{{Start: textStart, End: textEnd}})}
	for _, b := range bl {
		s.Blacklist = append(s.Blacklist, boost.BlacklistRange{Span: boost.Span{Start: b.Start, End: b.End}, Kind: boost.BlacklistOther, Symbol: b.Symbol})
	}
	sort.Slice(s.Blacklist, func(i, j int) bool { return s.Blacklist[i].Start < s.Blacklist[j].Start })
	if initEnd > initStart {
		s.Init = boost.NewSiteTable([]boost.Span{{Start: initStart, End: initEnd}})
	}
	if tables != nil {
		word := func(addrs []uint64) *boost.SiteTable {
			if addrs == nil {
				return nil // not known
			}
			spans := make([]boost.Span, len(addrs))
			for i, a := range addrs {
				spans[i] = boost.Span{Start: a, End: a + 4}
			}
			return boost.NewSiteTable(spans)
		}
		s.JumpLabels, s.ExTableAddrs = word(tables.JumpLabels), word(tables.ExTable)
		if tables.Ftrace != nil {
			s.FtraceLocs = boost.NewAddrTable(tables.Ftrace)
		}
	}
	return s
}

// ARM64Tables are kernel tables found outside the running kernel (in its
// Image, see vm.ARM64ImageTables): the code addresses of the jump-label sites
// and of the exception-table entries.
type ARM64Tables struct {
	JumpLabels []uint64
	ExTable    []uint64
	// ExTableUnknown: the exception table exists but was not located
	// (ExTable is nil).
	ExTableUnknown bool
	// Ftrace, when not nil, are the ftrace locations (32-bit ARM: the
	// bl __gnu_mcount_nc calls found in the Image).
	Ftrace []uint64
}

// NewArchPredictor looks the policy up and checks that it models arch's
// instruction set. cfg may be nil (the policy's defaults); sites may be nil
// (nothing known).
func NewArchPredictor(arch *ProbeArch, policy string, cfg *kimage.KConfig, sites boost.Sites) (*ArchPredictor, error) {
	p, err := boost.Lookup(policy)
	if err != nil {
		return nil, err
	}
	if !p.Supports(arch.Mode) {
		return nil, fmt.Errorf("policy %s does not model %s code", p.Name, arch.Name)
	}
	env := p.DefaultEnv()
	if cfg != nil {
		env.Config = boost.ConfigFromFunc(cfg.Value)
	}
	env.Mode = arch.Mode
	// The bytes are the running kernel's own (kcore): a function without an
	// ftrace entry site there has no ftrace location, so kprobe_events
	// refuses it (notrace).
	env.InferNotrace = true
	env.BootedEntry = true
	if sites != nil {
		env.Sites = sites
	}
	return &ArchPredictor{Optimization: arch.Optimizer != nil, Policy: p, Env: env, au: p.NewAuditor(env)}, nil
}

// PredictFunc fills the Predicted outcome, verdict and rules of the records of
// one function (bytes as the kernel has them).
func (ap *ArchPredictor) PredictFunc(fn kimage.Symbol, code []byte, recs []*VerifyRecord) error {
	fa, err := ap.au.Audit(boost.Func{Name: fn.Name, Addr: fn.Addr, Size: fn.Size, Bytes: code})
	if err != nil {
		return err
	}
	for _, r := range recs {
		d, err := fa.At(r.Off)
		if err != nil {
			return err
		}
		r.Verdict = d.Verdict.String()
		r.Rules = d.ReasonIDs()
		r.Predicted = predictedOutcome(&d, ap.Optimization)
		if sb := d.SlotBytes(); len(sb) > 0 && r.Predicted.Errno == "" {
			r.Predicted.Slot = hex.EncodeToString(sb)
			r.Predicted.SlotAddr = r.Kernel.SlotAddr
		}
	}
	return nil
}
