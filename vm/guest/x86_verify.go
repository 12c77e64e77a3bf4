package guest

import (
	"encoding/hex"
	"fmt"
	"math/rand"
	"path"
	"sort"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
)

// VerifyArgs are the "kboost-verify" step's arguments: which functions to probe
// and where the guest finds the kernel's image and configuration.
type VerifyArgs struct {
	Policy string `json:"policy,omitempty"` // boost policy; "" picks by the booted kernel's version (boost.ForKernel)
	// Vmlinux is the kernel's ELF image in the initramfs (for its section tables:
	// exception table, BUG sites, jump labels...); function bytes come from
	// /proc/kcore.
	Vmlinux string `json:"vmlinux"`
	// Config is the kernel's .config in the initramfs; "" means /proc/config.gz or
	// /boot/config-$(uname -r).
	Config string `json:"config,omitempty"`
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

// Predictor is the loader's predictor (the same code as `kboost probe` and
// `kboost audit`) with the verification's function selection and slot images.
type Predictor struct {
	*loader.Predictor
}

// NewPredictor builds the predictor for f (symbols from the guest's kallsyms
// attached) with cfg; see loader.NewPredictor.
func NewPredictor(f *kimage.File, cfg *kimage.KConfig, policy string) (*Predictor, error) {
	lp, err := loader.NewPredictor(f, cfg, policy)
	if err != nil {
		return nil, err
	}
	return &Predictor{lp}, nil
}

// SelectFuncs chooses the functions to verify: exact names, a glob, a sample.
// Only uniquely named, sized kernel functions in executable sections qualify.
func (p *Predictor) SelectFuncs(a *VerifyArgs) ([]kimage.Symbol, error) {
	maxSize := a.MaxSize
	if maxSize == 0 {
		maxSize = 512
	}
	ok := func(s kimage.Symbol) bool {
		if s.Module != "" || s.Size == 0 || audit.IsMarker(s.Name) || !p.Unique(s.Name) {
			return false
		}
		sec, found := p.File.SectionAt(s.Addr)
		return found && sec.Exec && s.Addr+s.Size <= sec.Addr+sec.Size
	}
	var out []kimage.Symbol
	for _, n := range a.Funcs {
		s, found := p.File.Symbols.ByName(n)
		if !found || !s.Func {
			return nil, fmt.Errorf("function %q: %w", n, kimage.ErrNoSymbol)
		}
		if !ok(s) {
			return nil, fmt.Errorf("function %q: not a uniquely named, sized function in kernel text", n)
		}
		out = append(out, s)
	}
	if a.Pattern != "" || (len(a.Funcs) == 0 && a.Sample > 0) {
		for s := range p.File.Symbols.Funcs() {
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

// Planned is one probe to register, with its prediction.
type Planned struct {
	Rec      VerifyRecord
	Addr     uint64 // requested address: symbol + offset
	Inst     []byte // instruction bytes (boundaries)
	OptBytes []byte // the bytes an optprobe copies (Decision.OptLen), when optimizable
	Decision boost.Decision
}

// PredictFunc audits fn (bytes as the kernel has them) and returns every
// boundary and up to nonBoundary offsets inside instructions, predicted.
func (p *Predictor) PredictFunc(s kimage.Symbol, code []byte, nonBoundary int, optimization bool) ([]Planned, error) {
	fa, err := p.Audit(s, code)
	if err != nil {
		return nil, err
	}
	var out []Planned
	add := func(off uint64, boundary bool, inst []byte, d boost.Decision) {
		d.Reasons = append([]boost.Reason(nil), d.Reasons...)
		d.OptReasons = append([]boost.Reason(nil), d.OptReasons...)
		pl := Planned{Addr: s.Addr + off, Inst: append([]byte(nil), inst...), Decision: d}
		pl.Rec = VerifyRecord{Func: s.Name, Off: off, Boundary: boundary, Verdict: d.Verdict.String(),
			Rules: d.ReasonIDs(), Round: -1, Predicted: predictedOutcome(&d, optimization)}
		if boundary {
			pl.Rec.Bytes = hex.EncodeToString(inst)
			if d.Optimizable && d.OptLen > 0 && d.Addr >= s.Addr && d.Addr-s.Addr+uint64(d.OptLen) <= uint64(len(code)) {
				at := d.Addr - s.Addr
				pl.OptBytes = append([]byte(nil), code[at:at+uint64(d.OptLen)]...)
			}
		}
		out = append(out, pl)
	}
	var multi []int
	for i := range fa.Entries {
		e := &fa.Entries[i]
		end := e.Off + uint64(e.Len)
		if end > uint64(len(code)) {
			end = uint64(len(code))
		}
		add(e.Off, true, code[e.Off:end], e.Decision)
		if e.Len > 1 {
			multi = append(multi, i)
		}
	}
	// Non-boundaries: inside instructions spread over the function, the ftrace
	// site's second byte first.
	if nonBoundary > 0 && len(multi) > 0 {
		step := len(multi) / nonBoundary
		if step == 0 {
			step = 1
		}
		for k, n := 0, 0; k < len(multi) && n < nonBoundary; k, n = k+step, n+1 {
			e := &fa.Entries[multi[k]]
			off := e.Off + 1 + uint64(n)%uint64(e.Len-1)
			d, err := fa.At(off)
			if err != nil {
				continue
			}
			add(off, false, nil, d)
		}
	}
	return out, nil
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

// SlotImage is the predicted slot for a probe whose slot is at slotAddr; see
// loader.Predictor.SlotImage.
func (p *Predictor) SlotImage(pl *Planned, slotAddr uint64) []byte {
	return p.Predictor.SlotImage(&pl.Decision, pl.Inst, slotAddr)
}

// DetourImage is the predicted detour buffer (MaskedHex form) of an optimized
// probe whose buffer is at detour; see loader.Predictor.DetourImage.
func (p *Predictor) DetourImage(t *loader.OptTemplate, pl *Planned, detour uint64) (string, error) {
	img, known, err := p.Predictor.DetourImage(t, pl.Decision.Addr, pl.OptBytes, detour)
	if err != nil {
		return "", err
	}
	return loader.MaskedHex(img, known), nil
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

// MatchSlots finds, for each probe needing a slot, the kernel slot holding it
// (loader.Predictor.MatchSlots) and sets Kernel.Slot, Kernel.SlotAddr and the
// prediction for that address.
func (p *Predictor) MatchSlots(probes []*Planned, before, after SlotPages) {
	ms := make([]*loader.SlotMatch, len(probes))
	for i, pl := range probes {
		ms[i] = &loader.SlotMatch{Decision: &pl.Decision, Inst: pl.Inst}
	}
	p.Predictor.MatchSlots(ms, before, after)
	for i, pl := range probes {
		m := ms[i]
		pl.Rec.Predicted.Slot = hex.EncodeToString(m.Predicted)
		pl.Rec.Predicted.SlotAddr = m.SlotAddr
		pl.Rec.Kernel.Slot = hex.EncodeToString(m.Kernel)
		pl.Rec.Kernel.SlotAddr = m.SlotAddr
		if m.Kernel == nil {
			pl.Rec.Note = m.Note
		}
	}
}
