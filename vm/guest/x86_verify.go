package guest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"path"
	"sort"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
)

// VerifyArgs are the "kboost-verify" step's arguments: which functions to probe
// and where the guest finds the kernel's image.
type VerifyArgs struct {
	// Policy plans the probed offsets (its kernel decoder's instruction
	// boundaries; the host predicts with the same policy); "" picks by the
	// booted kernel's version (boost.ForKernel).
	Policy string `json:"policy,omitempty"`
	// Vmlinux is the kernel's ELF image in the initramfs (its sections choose
	// the functions; __init functions' bytes come from it, the others' from
	// /proc/kcore).
	Vmlinux string `json:"vmlinux"`
	// Funcs names functions exactly; Pattern is a glob over function names;
	// Sample picks that many functions (after Funcs/Pattern, or among all) with a
	// generator seeded by Seed. MaxSize bounds sampled functions' sizes (0: 512).
	Funcs   []string `json:"funcs,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	Sample  int      `json:"sample,omitempty"`
	Seed    int64    `json:"seed,omitempty"`
	MaxSize uint64   `json:"max_size,omitempty"`
	// NonBoundary is how many offsets inside instructions are tried per function
	// (0: 2; negative: none).
	NonBoundary int `json:"non_boundary,omitempty"`
	// Spacing is the least distance between two probes of one function in one
	// round (0: 24 bytes, more than an optprobe's 19-byte reach, so probes do not
	// block each other's optimization).
	Spacing int `json:"spacing,omitempty"`
	// OptimizeWaitMS is how long the guest waits after enabling a round before it
	// reads kprobes/list: it polls until every probe listed
	// [OPTIMIZED] has its jmp written, at most this long (0: 3000).
	OptimizeWaitMS int `json:"optimize_wait_ms,omitempty"`
	// MaxRounds bounds the registration rounds (0: no bound); probes left over are
	// reported as not run.
	MaxRounds int `json:"max_rounds,omitempty"`
	// Boundaries, when positive, probes at most that many instruction
	// boundaries per function, spread evenly over its instructions from the
	// first (ThinBoundaries); 0 probes them all.
	Boundaries int `json:"boundaries,omitempty"`
}

// VerifyFields are the compared fields, in table order.
var VerifyFields = []string{"errno", "addr", "ftrace", "optimized", "slot", "jmpback", "optslot"}

// Compare says, per field, whether the record agrees (true), disagrees (false),
// or the field does not apply (absent): addr needs both sides to accept, slot
// needs a slot on either side, optslot an optimization on either side (then
// both detour buffers must be there and equal, loader.MaskedEqual).
func (r *VerifyRecord) Compare() map[string]bool {
	p, k := &r.Predicted, &r.Kernel
	m := map[string]bool{
		"errno":     sameErrno(p.Errno, k.Errno),
		"ftrace":    p.Ftrace == k.Ftrace,
		"optimized": p.Optimized == k.Optimized,
	}
	if p.Errno == "" && k.Errno == "" {
		m["addr"] = p.Addr == k.Addr
	}
	if p.Slot != "" || k.Slot != "" {
		m["slot"] = p.Slot == k.Slot
	}
	if p.Optimized || k.Optimized {
		m["optslot"] = loader.MaskedEqual(p.OptSlot, k.OptSlot)
	}
	// jmpback: kboost predicts Boost exactly where the kernel's slot continues
	// with a jmp rel32 back to the next instruction (instead of int3), read from
	// the kernel's slot bytes alone.
	if n := len(r.Bytes) / 2; r.Boundary && n > 0 && k.Slot != "" && k.Errno == "" {
		m["jmpback"] = (r.Verdict == "boost") == SlotJumpsBack(k.Slot, k.SlotAddr, k.Addr, n)
	}
	return m
}

// SlotJumpsBack says whether the slot at slotAddr (hex bytes, the copied
// instruction of n bytes first) continues with E9 rel32 whose target is addr+n,
// the instruction after the probed one. A slot cut short after the E9 byte
// counts as jumping back: its tail is not int3 either way.
func SlotJumpsBack(slotHex string, slotAddr, addr uint64, n int) bool {
	b, err := hex.DecodeString(slotHex)
	if err != nil || len(b) <= n || b[n] != 0xE9 {
		return false
	}
	if len(b) < n+5 {
		return true
	}
	rel := int32(uint32(b[n+1]) | uint32(b[n+2])<<8 | uint32(b[n+3])<<16 | uint32(b[n+4])<<24)
	return slotAddr+uint64(n)+5+uint64(int64(rel)) == addr+uint64(n)
}

// The x86-64 recorder ("kboost-verify", x86_verify_linux.go) records, as
// the fixed-width one does, only what the kernel did: the functions' bytes
// (kcore), and per probe the errno, the kprobes/list address and flags, the
// kernel's instruction slot (whole, SlotSize bytes) and detour buffer (a
// whole detour slot), and the optprobe template. The host predicts every
// probe from those bytes (PredictX86) and trims the kernel's slot and
// detour bytes to the predicted lengths before comparing.
//
// The probed offsets are planned in the guest, because they depend on the
// bytes the running kernel has (alternatives, ftrace and jump labels are
// patched at boot): the instruction boundaries of the linear sweep of the
// planning policy's kernel decoder (VerifyArgs.Policy, chosen by the host
// from the booted release; boost.Auditor's entries, their offsets and
// lengths only) and, inside multi-byte instructions, NonBoundary offsets.

// X86KallsymsFile is the recorder's copy of /proc/kallsyms, for the host's
// predictor.
const X86KallsymsFile = "kallsyms.txt"

// X86RecordVersion changes whenever what the x86-64 recorder records
// changes, so that cached records of an older recorder are not used.
const X86RecordVersion = 2

// X86Record is the x86-64 recorder's kboost-verify.json: the records (the
// kernel's outcomes only; VerifyReport.Policy is the policy the offsets were
// planned with) and the kernel facts the host predicts from.
type X86Record struct {
	VerifyReport
	// Funcs are the verified functions with their bytes as the kernel has
	// them (kcore; __init functions from the vmlinux).
	Funcs []KernelFunc `json:"funcs"`
	// Template is the kernel's optprobe template (nil when it could not be
	// read: TemplateErr says why).
	Template    *loader.OptTemplate `json:"opt_template,omitempty"`
	TemplateErr string              `json:"opt_template_error,omitempty"`
}

// SelectX86Funcs chooses the functions to verify in f (the guest's kallsyms
// attached): exact names, a glob, a sample. Only uniquely named, sized kernel
// functions inside an executable section qualify (kprobe_events refuses
// "sym+off" on an ambiguous name).
func SelectX86Funcs(f *kimage.File, a *VerifyArgs) ([]kimage.Symbol, error) {
	maxSize := a.MaxSize
	if maxSize == 0 {
		maxSize = 512
	}
	names := map[string]int{}
	for s := range f.Symbols.All() {
		names[s.Name]++
	}
	ok := func(s kimage.Symbol) bool {
		if s.Module != "" || s.Size == 0 || audit.IsMarker(s.Name) || names[s.Name] != 1 {
			return false
		}
		sec, found := f.SectionAt(s.Addr)
		return found && sec.Exec && s.Addr+s.Size <= sec.Addr+sec.Size
	}
	var out []kimage.Symbol
	for _, n := range a.Funcs {
		s, found := f.Symbols.ByName(n)
		if !found || !s.Func {
			return nil, fmt.Errorf("function %q: %w", n, kimage.ErrNoSymbol)
		}
		if !ok(s) {
			return nil, fmt.Errorf("function %q: not a uniquely named, sized function in kernel text", n)
		}
		out = append(out, s)
	}
	if a.Pattern != "" || (len(a.Funcs) == 0 && a.Sample > 0) {
		for s := range f.Symbols.Funcs() {
			if a.Pattern != "" {
				if m, _ := path.Match(a.Pattern, s.Name); !m {
					continue
				}
			}
			if ok(s) && (a.Pattern != "" || s.Size <= maxSize) {
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

// Planned is one probe to register: its record and the address asked for
// (symbol + offset).
type Planned struct {
	Rec  VerifyRecord
	Addr uint64
}

// X86Planner plans the probed offsets of functions by the linear sweep of a
// policy's kernel decoder.
type X86Planner struct {
	Policy *boost.Policy
	au     *boost.Auditor
}

// NewX86Planner looks the policy up (it must model x86-64 code).
func NewX86Planner(policy string) (*X86Planner, error) {
	p, err := boost.Lookup(policy)
	if err != nil {
		return nil, err
	}
	if !p.Supports(decode.Mode64) {
		return nil, fmt.Errorf("policy %s does not model x86-64 code", p.Name)
	}
	env := p.DefaultEnv()
	env.Mode = decode.Mode64
	return &X86Planner{Policy: p, au: p.NewAuditor(env)}, nil
}

// Plan returns the probes of one function (bytes as the kernel has them):
// every instruction boundary (Bytes the instruction) and up to nonBoundary
// offsets inside multi-byte instructions, spread over the function; lens
// maps each boundary's offset to its instruction's length.
func (pl *X86Planner) Plan(s kimage.Symbol, code []byte, nonBoundary int) (out []Planned, lens map[uint64]int, err error) {
	fa, err := pl.au.Audit(boost.Func{Name: s.Name, Addr: s.Addr, Size: s.Size, Bytes: code})
	if err != nil {
		return nil, nil, err
	}
	lens = map[uint64]int{}
	add := func(off uint64, boundary bool, inst []byte) {
		r := VerifyRecord{Func: s.Name, Off: off, Boundary: boundary, Round: -1}
		if boundary {
			r.Bytes = hex.EncodeToString(inst)
		}
		out = append(out, Planned{Rec: r, Addr: s.Addr + off})
	}
	var multi []int
	for i := range fa.Entries {
		e := &fa.Entries[i]
		end := min(e.Off+uint64(e.Len), uint64(len(code)))
		add(e.Off, true, code[e.Off:end])
		lens[e.Off] = int(end - e.Off)
		if e.Len > 1 {
			multi = append(multi, i)
		}
	}
	// Non-boundaries: inside instructions spread over the function, the
	// ftrace site's second byte first.
	if nonBoundary > 0 && len(multi) > 0 {
		step := max(len(multi)/nonBoundary, 1)
		for k, n := 0, 0; k < len(multi) && n < nonBoundary; k, n = k+step, n+1 {
			e := &fa.Entries[multi[k]]
			add(e.Off+1+uint64(n)%uint64(e.Len-1), false, nil)
		}
	}
	return out, lens, nil
}

// ThinBoundaries keeps at most max of the boundary probes of one function's
// planned probes (all of them when max <= 0 or there are no more): the k-th
// kept is the boundary at index k*n/max of the n in order, so the first
// instruction is always probed and the rest are spread over the function.
// Probes inside instructions are all kept.
func ThinBoundaries(planned []Planned, max int) []Planned {
	var idx []int
	for i := range planned {
		if planned[i].Rec.Boundary {
			idx = append(idx, i)
		}
	}
	n := len(idx)
	if max <= 0 || n <= max {
		return planned
	}
	keep := make(map[int]bool, max)
	for k := 0; k < max; k++ {
		keep[idx[k*n/max]] = true
	}
	out := planned[:0:0]
	for i := range planned {
		if !planned[i].Rec.Boundary || keep[i] {
			out = append(out, planned[i])
		}
	}
	return out
}

// PlanRounds assigns boundary probes to rounds: within a round, probes of one
// function are at least spacing bytes apart (probes of different functions do
// not interact). It returns the rounds as indexes into planned.
func PlanRounds(planned []Planned, spacing int) [][]int {
	if spacing <= 0 {
		spacing = 24
	}
	byFunc := map[string][]int{}
	var order []string
	for i := range planned {
		if !planned[i].Rec.Boundary {
			continue
		}
		f := planned[i].Rec.Func
		if _, ok := byFunc[f]; !ok {
			order = append(order, f)
		}
		byFunc[f] = append(byFunc[f], i)
	}
	var rounds [][]int
	for _, f := range order {
		left := byFunc[f]
		for r := 0; len(left) > 0; r++ {
			if r == len(rounds) {
				rounds = append(rounds, nil)
			}
			var rest []int
			last := int64(-1 << 40)
			for _, i := range left {
				off := int64(planned[i].Rec.Off)
				if off-last >= int64(spacing) {
					rounds[r] = append(rounds[r], i)
					last = off
				} else {
					rest = append(rest, i)
				}
			}
			left = rest
		}
	}
	return rounds
}

// SlotSize is the size of one kprobe instruction slot on x86 (MAX_INSN_SIZE).
const SlotSize = loader.SlotSize

// SlotPages are snapshots of the kprobe_insn_page pages, by page address.
type SlotPages = loader.SlotPages

// X86Slots finds the kernel's instruction slot of accepted x86 kprobes in
// snapshots of the slot pages, from the kernel's bytes alone: a slot holds
// the probed instruction as copied (a RIP-relative displacement rebased by
// the distance from the probed address to the slot) followed by int3, or by
// a jmp rel32 back to the next instruction. Slots that changed in the round
// are taken first, each once; an unchanged slot holding the copy (a slot
// reused with the same bytes) is taken without claiming it.
type X86Slots struct {
	slot []matchSlot
}

// Reset loads the pages after a round and what they held before it.
func (m *X86Slots) Reset(before, after SlotPages) {
	m.slot = m.slot[:0]
	pages := make([]uint64, 0, len(after))
	for a := range after {
		pages = append(pages, a)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	for _, pa := range pages {
		b, old := after[pa], before[pa]
		for i := 0; i+SlotSize <= len(b); i += SlotSize {
			s := matchSlot{addr: pa + uint64(i), b: b[i : i+SlotSize]}
			s.changed = len(old) < i+SlotSize || !bytes.Equal(old[i:i+SlotSize], s.b)
			m.slot = append(m.slot, s)
		}
	}
}

// Claim returns the slot holding the copy of inst, probed at addr. Without
// one, found is false and, as the evidence of a disagreement, the first
// unclaimed changed slot starting with inst's first byte is returned (ok
// says whether there was one).
func (m *X86Slots) Claim(inst []byte, addr uint64) (slotAddr uint64, b []byte, found, ok bool) {
	for pass := 0; pass < 2; pass++ {
		for i := range m.slot {
			s := &m.slot[i]
			if s.claimed || (pass == 0 && !s.changed) || !X86SlotHolds(s.b, s.addr, inst, addr) {
				continue
			}
			if pass == 0 {
				s.claimed = true
			}
			return s.addr, s.b, true, true
		}
	}
	for i := range m.slot {
		s := &m.slot[i]
		if !s.claimed && s.changed && len(inst) > 0 && s.b[0] == inst[0] {
			s.claimed = true
			return s.addr, s.b, false, true
		}
	}
	return 0, nil, false, false
}

// X86SlotHolds says whether slot (at slotAddr) holds the kernel's copy of
// inst probed at addr: the same bytes but for at most one little-endian
// 32-bit field that grew by addr - slotAddr (a rebased displacement), then
// int3 or a jmp rel32 to addr + len(inst).
func X86SlotHolds(slot []byte, slotAddr uint64, inst []byte, addr uint64) bool {
	n := len(inst)
	if n == 0 || len(slot) <= n {
		return false
	}
	first, last := -1, -1
	for i := 0; i < n; i++ {
		if slot[i] != inst[i] {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first >= 0 {
		if last-first >= 4 {
			return false
		}
		delta := uint32(addr - slotAddr)
		rebased := false
		for j := max(0, last-3); j <= first && j+4 <= n; j++ {
			if binary.LittleEndian.Uint32(slot[j:]) == binary.LittleEndian.Uint32(inst[j:])+delta {
				rebased = true
				break
			}
		}
		if !rebased {
			return false
		}
	}
	switch slot[n] {
	case 0xCC:
		return true
	case 0xE9:
		return SlotJumpsBack(hex.EncodeToString(slot), slotAddr, addr, n)
	}
	return false
}

// PredictX86 predicts every record of rec with the policy (its name as the
// CLI spells it) from the recorded bytes: f is the kernel's vmlinux with the
// booted kernel's kallsyms attached, cfg its configuration. The returned
// report is rec's with the predictions filled in and the kernel's slot and
// detour bytes trimmed to the predicted lengths (all of them when nothing is
// predicted there). A function the policy cannot audit is left out, with a
// note.
func PredictX86(rec *X86Record, f *kimage.File, cfg *kimage.KConfig, policy string) (VerifyReport, error) {
	rep := rec.VerifyReport
	rep.Records, rep.Functions = nil, nil
	rep.Notes = append([]string(nil), rec.Notes...)
	pred, err := loader.NewPredictor(f, cfg, policy)
	if err != nil {
		return rep, err
	}
	rep.Policy = pred.Policy.Name
	rep.Notes = append(rep.Notes, pred.Notes...)
	if rec.VerifyReport.Policy != "" && rec.VerifyReport.Policy != rep.Policy {
		rep.Notes = append(rep.Notes, fmt.Sprintf("offsets planned with %s's decoder, predicted with %s", rec.VerifyReport.Policy, rep.Policy))
	}
	byFunc := map[string][]int{}
	for i := range rec.Records {
		byFunc[rec.Records[i].Func] = append(byFunc[rec.Records[i].Func], i)
	}
	tmpl := rec.Template
	for _, kf := range rec.Funcs {
		code, err := hex.DecodeString(kf.Bytes)
		if err == nil && uint64(len(code)) < kf.Size {
			err = fmt.Errorf("%d bytes recorded for size %d", len(code), kf.Size)
		}
		s := kimage.Symbol{Name: kf.Name, Addr: kf.Addr, Size: kf.Size, Func: true}
		var fa *boost.FuncAudit
		if err == nil {
			fa, err = pred.Audit(s, code)
		}
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v (skipped)", kf.Name, err))
			continue
		}
		rep.Functions = append(rep.Functions, kf.Name)
		for _, i := range byFunc[kf.Name] {
			r := rec.Records[i]
			d, err := fa.At(r.Off)
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s+%#x: %v (skipped)", r.Func, r.Off, err))
				continue
			}
			r.Verdict, r.Rules, r.Predicted = d.Verdict.String(), d.ReasonIDs(), predictedOutcome(&d, rep.Optimization)
			var optBytes []byte
			if r.Boundary && d.Optimizable && d.OptLen > 0 && d.Addr >= s.Addr && d.Addr-s.Addr+uint64(d.OptLen) <= uint64(len(code)) {
				at := d.Addr - s.Addr
				optBytes = code[at : at+uint64(d.OptLen)]
			}
			if r.Boundary && r.Round > 0 && r.Kernel.Errno == "" && r.Kernel.Addr != 0 && !r.Kernel.Ftrace {
				predictSlot(pred, &r, &d)
			}
			if r.Kernel.Optimized || r.Predicted.Optimized {
				predictDetour(pred, &r, &d, tmpl, rec.TemplateErr, optBytes)
			}
			rep.Records = append(rep.Records, r)
		}
	}
	return rep, nil
}

// predictSlot predicts the slot of r (accepted, not [FTRACE]) at the
// kernel's slot address and trims the kernel's slot to the predicted length.
func predictSlot(pred *loader.Predictor, r *VerifyRecord, d *boost.Decision) {
	inst, _ := hex.DecodeString(r.Bytes)
	ks, _ := hex.DecodeString(r.Kernel.Slot)
	img := pred.SlotImage(d, inst, r.Kernel.SlotAddr)
	switch {
	case len(img) == 0:
		r.Kernel.Slot, r.Kernel.SlotAddr = "", 0
		if len(ks) > 0 {
			r.Note = "no slot predicted"
		}
	case len(ks) == 0:
		r.Predicted.Slot = hex.EncodeToString(pred.SlotImage(d, inst, 0))
		if r.Note == "" {
			r.Note = "no kernel slot found"
		}
	default:
		r.Kernel.Slot = hex.EncodeToString(ks[:min(len(img), len(ks))])
		r.Predicted.Slot, r.Predicted.SlotAddr = hex.EncodeToString(img), r.Kernel.SlotAddr
	}
}

// predictDetour predicts the detour buffer of r at the kernel's and trims
// the kernel's (a whole detour slot) to the template, the copied bytes and
// the jmp back.
func predictDetour(pred *loader.Predictor, r *VerifyRecord, d *boost.Decision, tmpl *loader.OptTemplate, tmplErr string, optBytes []byte) {
	if tmpl == nil {
		r.Note = "optslot: " + tmplErr
		return
	}
	if !r.Kernel.Optimized || r.Kernel.OptSlot == "" {
		return
	}
	if len(optBytes) > 0 {
		if n := 2 * (len(tmpl.Bytes) + len(optBytes) + 5); n < len(r.Kernel.OptSlot) {
			r.Kernel.OptSlot = r.Kernel.OptSlot[:n]
		}
	}
	if !r.Predicted.Optimized {
		return
	}
	img, known, err := pred.DetourImage(tmpl, d.Addr, optBytes, r.Kernel.OptAddr)
	if err != nil {
		r.Note = "optslot: " + err.Error()
	} else {
		r.Predicted.OptSlot = loader.MaskedHex(img, known)
	}
	r.Predicted.OptAddr = r.Kernel.OptAddr
}

// X86Policy is the policy that plans and predicts an x86-64 kernel of
// release when none is asked for: the one boost.ForKernel picks (note says
// how), else fallback.
func X86Policy(release, fallback string) (policy, note string) {
	if p, note := boost.ForKernel(release, decode.Mode64); p != nil && release != "" {
		return p.Name, note
	}
	return fallback, ""
}

// x86Func is a planned function: its bytes and instruction lengths.
type x86Func struct {
	sym  kimage.Symbol
	code []byte
	lens map[uint64]int
}

// matchListed sets the kernel's address and [FTRACE] of the accepted probes
// of a round from kprobes/list, and returns those that need a slot (not
// [FTRACE]). A probe is listed at the address asked for or, when the kernel
// moved it (past an endbr64 at the function's entry), at the nearest listed
// address after it inside the function that no other probe asked for: the
// probes of one function in a round are farther apart than an instruction.
func matchListed(ok []*Planned, list []ListEntry, fns map[string]*x86Func) []*Planned {
	taken := map[uint64]bool{}
	listed := map[uint64]*ListEntry{}
	addrs := make([]uint64, 0, len(list))
	for i := range list {
		listed[list[i].Addr] = &list[i]
		addrs = append(addrs, list[i].Addr)
	}
	sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
	for _, pl := range ok {
		if listed[pl.Addr] != nil {
			taken[pl.Addr] = true
		}
	}
	var need []*Planned
	for _, pl := range ok {
		le := listed[pl.Addr]
		if le == nil {
			end := pl.Addr + SlotSize
			if fn := fns[pl.Rec.Func]; fn != nil {
				end = min(end, fn.sym.Addr+fn.sym.Size)
			}
			i := sort.Search(len(addrs), func(i int) bool { return addrs[i] > pl.Addr })
			if i < len(addrs) && addrs[i] < end && !taken[addrs[i]] {
				le = listed[addrs[i]]
				taken[addrs[i]] = true
			}
		}
		if le == nil {
			pl.Rec.Note = "accepted but not in kprobes/list"
			continue
		}
		pl.Rec.Kernel.Addr = le.Addr
		pl.Rec.Kernel.Ftrace = le.Has("FTRACE")
		if !pl.Rec.Kernel.Ftrace {
			need = append(need, pl)
		}
	}
	return need
}

// claimSlots records the kernel slot of each probe (X86Slots: the copy of
// the instruction at the kernel's address).
func claimSlots(m *X86Slots, probes []*Planned, fns map[string]*x86Func, before, after SlotPages) {
	m.Reset(before, after)
	for _, pl := range probes {
		pl.Rec.Kernel.Slot, pl.Rec.Kernel.SlotAddr, pl.Rec.Note = "", 0, ""
		var inst []byte
		if fn := fns[pl.Rec.Func]; fn != nil {
			off := pl.Rec.Kernel.Addr - fn.sym.Addr
			if n, ok := fn.lens[off]; ok {
				inst = fn.code[off : off+uint64(n)]
			}
		}
		a, b, found, ok := m.Claim(inst, pl.Rec.Kernel.Addr)
		if ok {
			pl.Rec.Kernel.Slot, pl.Rec.Kernel.SlotAddr = hex.EncodeToString(b), a
		}
		if !found {
			pl.Rec.Note = "no slot on the pages holds the instruction's copy"
			if ok {
				pl.Rec.Note = "the kernel's slot is not a copy of the instruction"
			}
		}
	}
}
