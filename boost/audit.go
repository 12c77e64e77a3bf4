package boost

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/memhint"
)

// Entry is one instruction boundary of an audited function.
type Entry struct {
	Off  uint64      // offset from the symbol start
	Inst decode.Inst // as decoded (after a Xen/KVM emulate prefix, if any)
	// Len is the kernel's length of the instruction at Off (Inst.Len, plus 5 for an
	// emulate prefix); on a decode failure the bytes skipped to resynchronize.
	Len      int
	DecodeOK bool
	Decision Decision
}

// FuncAudit is the per-boundary audit of one function.
type FuncAudit struct {
	Func    Func
	Policy  *Policy
	Mode    decode.Mode
	Entries []Entry // every instruction boundary, in address order
	// FtraceOff is the offset of the function's ftrace location (-1 if none);
	// FtraceFrom says how it was found: "table", "bytes" or "".
	FtraceOff  int64
	FtraceFrom string
	// Notrace: the function has no ftrace location (kprobe_events refuses it);
	// NotraceKnown says whether that is known (table, or Env.InferNotrace).
	Notrace, NotraceKnown bool
	// Endbr: the function starts with ENDBR64/ENDBR32 (or the IBT poison nop).
	Endbr bool
	// DecodeFailOff is the first offset the linear decode failed at (-1 if none).
	DecodeFailOff int64
	// OptReasons are the function-level reasons no probe in it can be
	// jump-optimized (empty when some can).
	OptReasons []Reason

	env  *Env
	walk []uint64 // boundary offsets, sorted
}

// ErrOffset is returned by At for an offset outside the function.
var ErrOffset = errors.New("offset outside the function")

// AuditFunc decodes fn from its first byte the way can_probe() does (a linear
// sweep) and decides every instruction boundary under the policy, with the
// ftrace site, IBT adjustment, notrace and optprobe eligibility of a kernel
// function. The mode is env.Mode (0: the policy's first mode). For many
// functions, an Auditor reuses memory between them.
func (p *Policy) AuditFunc(fn Func, env *Env) (*FuncAudit, error) {
	return p.NewAuditor(env).Audit(fn)
}

// Auditor audits functions one after another under one policy and Env, reusing
// its memory: the FuncAudit returned by Audit is valid until the next call.
// An Auditor is not safe for concurrent use; use one per goroutine.
type Auditor struct {
	p        *Policy
	env      *Env
	mode     decode.Mode
	fa       FuncAudit
	ks       []kinsn
	arena    []Reason
	optArena []Reason
	fo       funcOptInfo
	s        scratch
	// win narrows env's site tables to the function being audited (see
	// siteWindow); wenv is env with Sites = win. nil unless env.Sites is a
	// *StaticSites.
	win  *siteWindow
	wenv *Env
}

// NewAuditor returns an Auditor for the policy (nil env: the policy's defaults).
func (p *Policy) NewAuditor(env *Env) *Auditor {
	if env == nil {
		env = p.DefaultEnv()
	}
	mode := env.Mode
	if mode == decode.ModeInvalid {
		mode = p.Modes[0]
	}
	au := &Auditor{p: p, env: env, mode: mode}
	if st, ok := env.Sites.(*StaticSites); ok && st != nil {
		au.win = &siteWindow{base: st}
		au.wenv = new(Env)
		*au.wenv = *env
		au.wenv.Sites = au.win
	}
	return au
}

// growCap returns s with room for at least n elements and the same
// contents. It at least doubles the capacity, and pre-faults the new array:
// the buffers of the largest functions of a kernel take megabytes, and
// touching fresh memory page by page is slow on virtual machines (see
// package memhint).
func growCap[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s
	}
	t := make([]T, len(s), max(n, 2*cap(s), 16))
	memhint.Prefault(t)
	copy(t, s)
	return t
}

// reserveReasons makes the reason arenas large enough for n entries: the
// Reasons and OptReasons of entry i are au.arena[reasonsPerEntry*i:] and
// au.optArena[optReasonsPerEntry*i:], each with room for a few (decide
// appends beyond that, into memory of its own).
func (au *Auditor) reserveReasons(n int) {
	au.arena = growCap(au.arena[:0], reasonsPerEntry*n)
	au.arena = au.arena[:cap(au.arena)]
	au.optArena = growCap(au.optArena[:0], optReasonsPerEntry*n)
	au.optArena = au.optArena[:cap(au.optArena)]
}

// siteSlack is how far past a function's end its site window reaches: an
// instruction that starts inside the function ends at most 15 bytes later.
const siteSlack = 16

const (
	reasonsPerEntry    = 4
	optReasonsPerEntry = 2
)

// Audit audits fn; see AuditFunc. The result is valid until the next Audit.
func (au *Auditor) Audit(fn Func) (*FuncAudit, error) {
	p, env, mode := au.p, au.env, au.mode
	if !p.Supports(mode) {
		return nil, fmt.Errorf("policy %s does not model %v code (it models %v): choose a policy for the architecture (kboost policies)", p.Name, mode, p.Modes)
	}
	if p.audit != nil {
		return p.audit(au, fn)
	}
	size := fn.Size
	if size == 0 {
		size = uint64(len(fn.Bytes))
	}
	if uint64(len(fn.Bytes)) < size {
		return nil, fmt.Errorf("function %s: %d bytes given for size %d: pass the symbol's bytes", fn.Name, len(fn.Bytes), size)
	}
	fn.Size = size
	if au.win != nil {
		au.win.reset(fn.Addr, fn.Addr+size+siteSlack)
		env = au.wenv
	}
	a := &au.fa
	*a = FuncAudit{Func: fn, Policy: p, Mode: mode, FtraceOff: -1, DecodeFailOff: -1, env: env,
		Entries: a.Entries[:0], walk: a.walk[:0], OptReasons: a.OptReasons[:0]}

	// Linear sweep.
	ks := au.ks[:0]
	for off := uint64(0); off < size; {
		end := off + 15
		if end > uint64(len(fn.Bytes)) {
			end = uint64(len(fn.Bytes))
		}
		ks = append(growCap(ks, len(ks)+1), kinsn{})
		k := &ks[len(ks)-1]
		// Reuse the previous function's entries without zeroing them: the decoder
		// and decide overwrite Inst and Decision, and the rest is set here.
		n := len(a.Entries)
		a.Entries = growCap(a.Entries, n+1)[:n+1]
		e := &a.Entries[n]
		e.Off = off
		err := kdecode(p.kd(), k, &e.Inst, fn.Bytes[off:end], mode, fn.Addr+off)
		e.Len, e.DecodeOK = k.length, err == nil
		if err != nil {
			if a.DecodeFailOff < 0 {
				a.DecodeFailOff = int64(off)
			}
			var de *decode.DecodeError
			n := 1
			if errors.As(err, &de) && de.Len > 0 {
				n = de.Len
			}
			e.Len = n + k.emu
		}
		a.walk = append(a.walk, off)
		off += uint64(e.Len)
	}
	au.ks = ks
	for i := range ks { // Entries may have moved while growing
		ks[i].in = &a.Entries[i].Inst
	}

	a.findFtrace(env)
	fo := p.funcOpt(a, ks, env, &au.fo)

	au.reserveReasons(len(a.Entries))
	s := &au.s
	// The function-level facts of a probe are the same at every boundary: only
	// the address and whether it is an ftrace location change (probeAt).
	base := a.probeAt(0, env)
	otherFtrace := p.FtraceEntry && a.FtraceFrom == "table"
	for i := range a.Entries {
		e := &a.Entries[i]
		r, o := reasonsPerEntry*i, optReasonsPerEntry*i
		e.Decision.Reasons = au.arena[r : r : r+reasonsPerEntry]
		e.Decision.OptReasons = au.optArena[o : o : o+optReasonsPerEntry]
		s.pr = base
		pr := &s.pr
		pr.addr = fn.Addr + e.Off
		if pr.ftrace >= 0 {
			pr.ftrace = 0
			if a.FtraceOff == int64(e.Off) {
				pr.ftrace = 1
			} else if otherFtrace {
				var hit bool
				if au.win != nil {
					hit, _ = au.win.ftrace.Overlaps(Span{pr.addr, pr.addr + 1})
				} else {
					hit, _ = env.Sites.Ftrace(Span{pr.addr, pr.addr + 1})
				}
				if hit {
					pr.ftrace = 1
				}
			}
		}
		pr.boundary = 1
		if e.DecodeOK {
			pr.k = &ks[i]
		} else {
			pr.decErr = errDecode
		}
		// can_probe() decodes from the symbol start and gives up at the first
		// failure: every later address is refused, decodable or not.
		if a.DecodeFailOff >= 0 && e.Off > uint64(a.DecodeFailOff) {
			pr.walkFail = true
		}
		p.decide(s, &e.Decision, env, false, mode)
		if p.Optprobes {
			p.optAt(a, i, ks, fo, env)
		}
	}
	if p.FtraceEntry && env.Config.IBT && a.Endbr && len(a.Entries) > 1 && a.Entries[1].Off == 4 {
		// sym+0 probes sym+4.
		d := a.Entries[1].Decision
		d.Reasons = append([]Reason{{Rule: rIBT.ID, Text: rIBT.Desc}}, d.Reasons...)
		a.Entries[0].Decision = d
	}
	return a, nil
}

var errDecode = errors.New("does not decode")

// probeAt fills the function-level facts of a probe at off.
func (a *FuncAudit) probeAt(off uint64, env *Env) probe {
	pr := probe{addr: a.Func.Addr + off, boundary: -1, ftrace: -1, notrace: -1, fnName: a.Func.Name, inFunc: true,
		cfi: hasCFIPrefix(a.Func.Name)}
	if a.Policy.FtraceEntry {
		if a.FtraceFrom != "" || env.Sites != nil {
			pr.ftrace = 0
			if a.FtraceOff == int64(off) {
				pr.ftrace = 1
			} else if a.FtraceFrom == "table" {
				// check_ftrace_location(): any address that is an ftrace location
				// becomes an ftrace-based probe, not only the entry site (a
				// kallsyms-sized symbol may cover several functions).
				if hit, _ := env.Sites.Ftrace(Span{pr.addr, pr.addr + 1}); hit {
					pr.ftrace = 1
				}
			}
		} else {
			pr.ftrace = 0 // bytes inspected: no fentry site at the entry
		}
		if a.NotraceKnown {
			pr.notrace = 0
			if a.Notrace {
				pr.notrace = 1
				pr.notraceI = a.FtraceFrom == "" && !a.ftraceTableKnown(env)
			}
		}
	}
	return pr
}

func (a *FuncAudit) ftraceTableKnown(env *Env) bool {
	if env.Sites == nil {
		return false
	}
	_, known := env.Sites.Ftrace(Span{a.Func.Addr, a.Func.Addr + 1})
	return known
}

// endbrPoison61 is the sealed-ENDBR poison of Linux 6.1-6.x (nopw (%rax));
// endbrPoison72 is 7.2's (nopl -42(%rax), carrying UDB 0xd6).
var (
	endbrPoison61 = [4]byte{0x66, 0x0f, 0x1f, 0x00}
	endbrPoison72 = [4]byte{0x0f, 0x1f, 0x40, 0xd6}
)

// isEndbr is the kernel's is_endbr: ENDBR64/ENDBR32, or one of the poisons
// apply_seal_endbr writes (nil: any kboost knows).
func isEndbr(b []byte, poisons ...[4]byte) bool {
	if len(b) < 4 {
		return false
	}
	if b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && (b[3] == 0xfa || b[3] == 0xfb) {
		return true
	}
	if poisons == nil {
		poisons = [][4]byte{endbrPoison61, endbrPoison72}
	}
	for _, p := range poisons {
		if [4]byte(b[:4]) == p {
			return true
		}
	}
	return false
}

// poisons is the policy's ENDBR poison (6.1's unless set).
func (p *Policy) poisons() [][4]byte {
	if p.endbrPoison != ([4]byte{}) {
		return [][4]byte{p.endbrPoison}
	}
	return [][4]byte{endbrPoison61}
}

// findFtrace locates the ftrace location: from the table when known, else the
// 5-byte fentry nop (x86_nops[5]) or `call __fentry__` (needs Env.FentryAddr;
// i386 images keep the call) at the entry, after an ENDBR.
func (a *FuncAudit) findFtrace(env *Env) {
	fn := a.Func
	a.Endbr = isEndbr(fn.Bytes, a.Policy.poisons()...)
	if !a.Policy.FtraceEntry {
		return
	}
	entry := uint64(0)
	if a.Endbr {
		entry = 4
	}
	if a.ftraceTableKnown(env) {
		a.NotraceKnown = true
		if hit, _ := env.Sites.Ftrace(Span{fn.Addr + entry, fn.Addr + entry + 1}); hit {
			a.FtraceOff, a.FtraceFrom = int64(entry), "table"
		} else if hit, _ := env.Sites.Ftrace(Span{fn.Addr, fn.Addr + fn.Size}); hit {
			for _, off := range a.walk {
				if h, _ := env.Sites.Ftrace(Span{fn.Addr + off, fn.Addr + off + 1}); h {
					a.FtraceOff, a.FtraceFrom = int64(off), "table"
					break
				}
			}
		}
		a.Notrace = a.FtraceOff < 0
		a.baseTraced(env)
		return
	}
	if off, ok := FtraceEntrySite(fn.Bytes[:fn.Size], fn.Addr, env.FentryAddr); ok {
		a.FtraceOff, a.FtraceFrom = int64(off), "bytes"
	}
	a.Notrace = a.FtraceOff < 0
	a.NotraceKnown = env.InferNotrace
	a.baseTraced(env)
}

// baseTraced applies within_notrace_func()'s rule for suffixed symbols: a
// foo.cold without an ftrace location is judged by foo.
func (a *FuncAudit) baseTraced(env *Env) {
	if !a.Notrace || env.BaseTraced == nil {
		return
	}
	if i := strings.IndexByte(a.Func.Name, '.'); i > 0 {
		if traced, known := env.BaseTraced(a.Func.Name[:i]); known && traced {
			a.Notrace = false
		}
	}
}

// FtraceEntrySite reports the offset of a function's ftrace site recognised
// from its bytes b (at addr): the 5-byte nop the kernel leaves there
// (x86_nops[5]: 0F 1F 44 00 00, or 3E 8D 74 26 00 on i386) or an unpatched
// `call __fentry__` (fentry != 0), at the entry or after ENDBR.
func FtraceEntrySite(b []byte, addr, fentry uint64) (off int, ok bool) {
	entry := 0
	if isEndbr(b) {
		entry = 4
	}
	if entry+5 > len(b) {
		return 0, false
	}
	s := b[entry : entry+5]
	nop := (s[0] == 0x0f && s[1] == 0x1f && s[2] == 0x44 && s[3] == 0 && s[4] == 0) ||
		(s[0] == 0x3e && s[1] == 0x8d && s[2] == 0x74 && s[3] == 0x26 && s[4] == 0)
	call := false
	if s[0] == 0xe8 && fentry != 0 {
		rel := int32(uint32(s[1]) | uint32(s[2])<<8 | uint32(s[3])<<16 | uint32(s[4])<<24)
		call = addr+uint64(entry)+5+uint64(int64(rel)) == fentry
	}
	return entry, nop || call
}

// At returns the decision for a probe at sym+off, as the kernel resolves it:
// with IBT, off 0 probes the instruction after ENDBR; a non-boundary offset goes
// through the kernel's checks in order (site checks first, then can_probe).
func (a *FuncAudit) At(off uint64) (Decision, error) {
	if off >= a.Func.Size {
		return Decision{}, fmt.Errorf("%s+%#x: %w (size %#x): the kernel would resolve it to another symbol (%s)", a.Func.Name, off, ErrOffset, a.Func.Size, rSymOutside.ID)
	}
	i := sort.Search(len(a.walk), func(i int) bool { return a.walk[i] >= off })
	if i < len(a.walk) && a.walk[i] == off {
		return a.Entries[i].Decision, nil
	}
	s := new(scratch)
	s.pr = a.probeAt(off, a.env)
	pr := &s.pr
	var d Decision
	p := a.Policy
	if p.CheckBoundary {
		pr.boundary = 0
		if a.DecodeFailOff >= 0 && off > uint64(a.DecodeFailOff) {
			pr.walkFail = true
		}
		p.decide(s, &d, a.env, false, a.Mode)
		if p.Optprobes {
			d.OptReasons = append(d.OptReasons, Reason{Rule: rOptRejected.ID, Text: rOptRejected.Desc})
		}
		return d, nil
	}
	if p.explainAt != nil {
		_, d, err := p.explainAt(a, off)
		return d, err
	}
	// No boundary check: the kernel copies whatever starts at off.
	end := off + 15
	if end > uint64(len(a.Func.Bytes)) {
		end = uint64(len(a.Func.Bytes))
	}
	pr.boundary = 0
	if err := kdecode(a.Policy.kd(), &s.k, &s.inst, a.Func.Bytes[off:end], a.Mode, a.Func.Addr+off); err != nil {
		pr.decErr = err
	} else {
		pr.k = &s.k
	}
	p.decide(s, &d, a.env, false, a.Mode)
	return d, nil
}

// ExplainAt is At with every rule tried.
func (a *FuncAudit) ExplainAt(off uint64) ([]Step, Decision, error) {
	if a.Policy.explainAt != nil {
		return a.Policy.explainAt(a, off)
	}
	if off >= a.Func.Size {
		_, err := a.At(off)
		return nil, Decision{}, err
	}
	redirect := false
	if off == 0 && a.Policy.FtraceEntry && a.env.Config.IBT && a.Endbr && len(a.walk) > 1 && a.walk[1] == 4 {
		off, redirect = 4, true // arch_adjust_kprobe_addr: sym+0 probes sym+4
	}
	i := sort.Search(len(a.walk), func(i int) bool { return a.walk[i] >= off })
	s := new(scratch)
	s.pr = a.probeAt(off, a.env)
	pr := &s.pr
	b := a.Func.Bytes[off:min(off+15, uint64(len(a.Func.Bytes)))]
	if i < len(a.walk) && a.walk[i] == off {
		pr.boundary = 1
		if a.Entries[i].DecodeOK && kdecode(a.Policy.kd(), &s.k, &s.inst, b, a.Mode, a.Func.Addr+off) == nil {
			pr.k = &s.k
		} else {
			pr.decErr = errDecode
		}
	} else {
		pr.boundary = 0
		if !a.Policy.CheckBoundary {
			if err := kdecode(a.Policy.kd(), &s.k, &s.inst, b, a.Mode, a.Func.Addr+off); err == nil {
				pr.k = &s.k
			} else {
				pr.decErr = err
			}
		}
	}
	if a.DecodeFailOff >= 0 && off > uint64(a.DecodeFailOff) {
		pr.walkFail = true
	}
	var d Decision
	a.Policy.decide(s, &d, a.env, true, a.Mode)
	c := &s.c
	if redirect {
		c.steps = append([]Step{{Rule: rIBT.ID, Outcome: Note, Text: "sym+0 starts with ENDBR: the probe goes to sym+4"}}, c.steps...)
		d.Reasons = append([]Reason{{Rule: rIBT.ID, Text: rIBT.Desc}}, d.Reasons...)
	}
	if i < len(a.walk) && a.walk[i] == off {
		d.Optimizable, d.OptReasons, d.OptLen = a.Entries[i].Decision.Optimizable, a.Entries[i].Decision.OptReasons, a.Entries[i].Decision.OptLen
	}
	return c.steps, d, nil
}

// funcOptInfo is what can_optimize() learns from the whole function.
type funcOptInfo struct {
	block   []Reason // function-level blocks (extable, decode, indirect jump)
	targets []uint64 // relative-branch targets, sorted
	// canBoost caches can_boost() per entry (0 not yet asked, 1 yes, 2 no): each
	// instruction is covered by the 5-byte region of several optprobe candidates.
	canBoost []uint8
	// texts holds the "... at +off" texts of blocks already made, for all
	// functions: most functions of a kernel have one, and offsets repeat.
	texts map[optText]string
}

type optText struct {
	r   *rule
	off int64
}

// maxOptTexts bounds funcOptInfo.texts.
const maxOptTexts = 1 << 10

// blockText returns r's text for a block at offset off: format with the offset.
func (fo *funcOptInfo) blockText(r *rule, format string, off int64) string {
	k := optText{r, off}
	if t, ok := fo.texts[k]; ok {
		return t
	}
	if fo.texts == nil || len(fo.texts) >= maxOptTexts {
		fo.texts = make(map[optText]string)
	}
	t := fmt.Sprintf(format, off)
	fo.texts[k] = t
	return t
}

func (p *Policy) funcOpt(a *FuncAudit, ks []kinsn, env *Env, fo *funcOptInfo) *funcOptInfo {
	*fo = funcOptInfo{block: fo.block[:0], targets: fo.targets[:0], canBoost: fo.canBoost[:0], texts: fo.texts}
	if !p.Optprobes {
		return fo
	}
	fo.canBoost = slices.Grow(fo.canBoost, len(ks))[:len(ks)]
	clear(fo.canBoost)
	fn := a.Func
	add := func(r *rule, text string) {
		if text == "" {
			text = r.Desc
		}
		fo.block = append(fo.block, Reason{Rule: r.ID, Text: text})
	}
	if env.Sites != nil {
		if hit, _ := env.Sites.ExTable(Span{fn.Addr, fn.Addr + fn.Size}); hit {
			add(rOptExTable, "")
		}
	}
	if a.DecodeFailOff >= 0 {
		add(rOptDecode, fo.blockText(rOptDecode, "no decode at +%#x", a.DecodeFailOff))
	}
	ind, thunk := p.indirectRule(env.Config)
	thunkKnown := env.ThunkEnd != 0
	for i := range ks {
		if !a.Entries[i].DecodeOK {
			continue
		}
		k := &ks[i]
		if ind && k.isIndirectJump() {
			add(rOptIndirect, fo.blockText(rOptIndirect, "indirect jump at +%#x", int64(a.Entries[i].Off)))
			ind = false // report once
		}
		if t, ok := k.relTarget(); ok {
			fo.targets = append(fo.targets, t)
			if thunk && thunkKnown && t >= env.ThunkStart && t <= env.ThunkEnd {
				add(rOptThunk, fo.blockText(rOptThunk, "jump into the retpoline thunks at +%#x", int64(a.Entries[i].Off)))
				thunk = false
			}
		}
	}
	slices.Sort(fo.targets)
	a.OptReasons = append(a.OptReasons, fo.block...)
	return fo
}

// optAt decides jump-optimization for entry i (try_to_optimize_kprobe ->
// arch_prepare_optimized_kprobe -> can_optimize, copy_optimized_instructions).
func (p *Policy) optAt(a *FuncAudit, i int, ks []kinsn, fo *funcOptInfo, env *Env) {
	e := &a.Entries[i]
	d := &e.Decision
	cfg := env.Config
	no := func(r *rule, text string) {
		if text == "" {
			text = r.Desc
		}
		d.OptReasons = append(d.OptReasons, Reason{Rule: r.ID, Text: text})
	}
	addr := a.Func.Addr + e.Off
	switch {
	case !cfg.Optprobes:
		no(rOptConfig, "")
		return
	case d.Verdict == Reject:
		no(rOptRejected, "")
		return
	case d.Verdict == Ftrace:
		no(rOptFtrace, "")
		return
	case cfg.PostHandler:
		no(rOptPostH, "")
		return
	}
	if env.Sites != nil {
		if hit, _ := env.Sites.EntryText(addr); hit {
			no(rOptEntry, "")
			return
		}
	}
	if a.Func.Size-e.Off < 5 {
		no(rOptSize, "")
		return
	}
	if len(fo.block) > 0 {
		d.OptReasons = append(d.OptReasons, fo.block...)
		return
	}
	// A branch target in [addr+1, addr+5] (inclusive).
	j := sort.Search(len(fo.targets), func(j int) bool { return fo.targets[j] >= addr+1 })
	if j < len(fo.targets) && fo.targets[j] <= addr+5 {
		no(rOptJumpInto, "")
		return
	}
	// copy_optimized_instructions: whole instructions covering >= 5 bytes.
	n := 0
	for x := i; n < 5; x++ {
		if x >= len(a.Entries) || !a.Entries[x].DecodeOK {
			no(rOptCopy, "")
			return
		}
		k := &ks[x]
		ax := a.Func.Addr + a.Entries[x].Off
		if k.emu > 0 || k.isInt3() || k.maskingException() {
			no(rOptCopy, "")
			return
		}
		if fo.canBoost[x] == 0 {
			fo.canBoost[x] = 2
			if p.canBoost(nil, k, ax, env) {
				fo.canBoost[x] = 1
			}
		}
		if fo.canBoost[x] != 1 {
			no(rOptCanBoost, "")
			return
		}
		n += k.length
	}
	incl := Span{addr, addr + uint64(n)} // the kernel's [src, src+len-1], inclusive
	ftr, known := false, false
	if env.Sites != nil {
		ftr, known = env.Sites.Ftrace(incl)
	}
	if !known && a.FtraceOff >= 0 {
		ftr = uint64(a.FtraceOff) >= e.Off && uint64(a.FtraceOff) < e.Off+uint64(n)
	}
	if ftr {
		no(rOptResFtr, "")
		return
	}
	if env.Sites != nil {
		s := env.Sites
		if cfg.SMP && cfg.UPLocks && n > 1 {
			if hit, _ := s.SMPLock(Span{addr, addr + uint64(n) - 1}); hit {
				no(rOptResAlt, "")
				return
			}
		}
		if hit, _ := s.JumpLabel(incl); hit {
			no(rOptResJL, "")
			return
		}
		if hit, _ := s.StaticCall(incl); hit {
			no(rOptResSC, "")
			return
		}
	}
	d.Optimizable = true
	d.OptLen = n
	d.OptReasons = append(d.OptReasons, Reason{Rule: rOptOK.ID, Text: rOptOK.Desc})
}
