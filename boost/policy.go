package boost

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kboost/kboost/decode"
)

// Policy is one kernel's probe rules as a value: data plus the functions that
// apply them. Obtain one with Lookup or Policies; do not modify it.
type Policy struct {
	Name   string        // "linux-6.1"
	Title  string        // one line
	Source string        // where the rules were read
	Modes  []decode.Mode // instruction sets it models (the first is the default)
	// Defaults is the configuration assumed when none is given (documented per
	// policy; Debian-like for the 6.x policies).
	Defaults Config
	// MaxInsnSize is the kernel's MAX_INSN_SIZE (slot size).
	MaxInsnSize int
	// CheckBoundary: the kernel refuses addresses that are not instruction
	// boundaries (can_probe). Without it, any offset is decoded as is.
	CheckBoundary bool
	// FtraceEntry: the kernel knows ftrace locations (fentry sites).
	FtraceEntry bool
	// Optprobes: the kernel has jump optimization.
	Optprobes bool

	classify func(c *cls)
	// dec is the kernel version's instruction decoder (nil: 6.1's).
	dec *kdecoder
	// a64 is the kernel version's arm64 probe decoding (nil: 6.1's).
	a64 *a64Kernel
	// user: a uprobes policy (probes in user space).
	user bool
	// canBoost is the policy's can_boost(); when c is nil nothing is recorded.
	canBoost func(c *cls, k *kinsn, addr uint64, env *Env) bool
	// indirectRule says which can_optimize indirect-jump tests apply.
	indirectRule func(cfg Config) (indirect, thunk bool)
	// endbrPoison is what is_endbr takes for a sealed ENDBR besides ENDBR
	// itself (zero: 6.1's, 66 0f 1f 00).
	endbrPoison [4]byte
	// audit, when set, replaces the x86 linear sweep of Auditor.Audit, and
	// explainAt FuncAudit.ExplainAt (ARM policies: fixed-width words).
	audit     func(au *Auditor, fn Func) (*FuncAudit, error)
	explainAt func(a *FuncAudit, off uint64) ([]Step, Decision, error)
}

// policies is every policy, in a stable order (Policies); each is a complete
// value at its declaration, so none depends on init order.
var policies = []*Policy{linux61, linux612, linux72, booster2617, uprobesX86, uprobes612, uprobes618, uprobes72,
	linux61ARM64, linux612ARM64, linux72ARM64, uprobesARM64, uprobes612ARM64, uprobes618ARM64, uprobes72ARM64, boostARM64,
	linux61ARM, linux61Thumb}

// Policies returns every policy, in a stable order.
func Policies() []*Policy { return append([]*Policy(nil), policies...) }

// PolicyNames returns the policy names.
func PolicyNames() []string {
	n := make([]string, len(policies))
	for i, p := range policies {
		n[i] = p.Name
	}
	return n
}

// Lookup finds a policy by name.
func Lookup(name string) (*Policy, error) {
	for _, p := range policies {
		if p.Name == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown policy %q (known policies: %s)", name, strings.Join(PolicyNames(), ", "))
}

// Supports reports whether the policy models mode.
func (p *Policy) Supports(m decode.Mode) bool {
	for _, x := range p.Modes {
		if x == m {
			return true
		}
	}
	return false
}

// DefaultEnv returns an Env with the policy's default configuration and nothing
// else known.
func (p *Policy) DefaultEnv() *Env { return &Env{Config: p.Defaults} }

func (p *Policy) String() string { return p.Name }

// a64k is the policy's arm64 probe decoding.
func (p *Policy) a64k() *a64Kernel {
	if p.a64 == nil {
		return a64K61
	}
	return p.a64
}

// kd is the policy's kernel decoder.
func (p *Policy) kd() *kdecoder {
	if p.dec == nil {
		return kdec61
	}
	return p.dec
}

// probe is what is known about the probed address beyond the instruction.
type probe struct {
	addr     uint64
	k        *kinsn // nil when not decoded
	decErr   error  // decode error at addr (k == nil)
	boundary int8   // 1 boundary, 0 not a boundary, -1 unknown (no function context)
	// walkFail: decoding from the symbol start failed before addr.
	walkFail bool
	ftrace   int8 // 1 the address is an ftrace location, 0 no, -1 unknown
	notrace  int8 // 1 the function is notrace, 0 no, -1 unknown
	notraceI bool // notrace was inferred from bytes
	fnName   string
	inFunc   bool // a Func context exists
	cfi      bool // inFunc and the function is a __cfi_/__pfx_ stub
	// A64 (ARM policies): the instruction word when one was read (a64), and what
	// the atomic-sequence back-scan over the function found: 1 a load-exclusive
	// at atomicOff (bytes from the symbol start), 0 none, -1 unknown.
	a64       bool
	word      uint32
	atomic    int8
	atomicOff uint64
	// Thumb (AuditFunc): 0 unknown, 1 outside an IT block, 2+cond inside one.
	itCond uint8
}

// scratch is the per-classification working memory, reused across calls (the
// policy's rule functions are called indirectly, so it would otherwise escape
// to the heap on every instruction).
type scratch struct {
	c    cls
	pr   probe
	k    kinsn
	inst decode.Inst
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// cls is one classification in progress.
type cls struct {
	p       *Policy
	env     *Env
	pr      *probe
	d       *Decision
	explain bool
	steps   []Step
}

func (c *cls) step(r *rule, o Outcome, detail string) {
	if c == nil {
		return
	}
	if c.explain {
		t := r.Desc
		if detail != "" {
			t = detail
		}
		c.steps = append(c.steps, Step{Rule: r.ID, Outcome: o, Text: t})
	}
	if o == Fail || o == Decides {
		t := r.Desc
		if c.explain && detail != "" {
			t = detail
		}
		c.d.Reasons = append(c.d.Reasons, Reason{Rule: r.ID, Text: t})
	}
}

// detailf formats only when explaining (the fast path does not allocate).
func (c *cls) detailf(format string, args ...any) string {
	if c == nil || !c.explain {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

func (c *cls) reject(r *rule, e Errno, detail string) {
	c.d.Verdict, c.d.Errno = Reject, e
	c.d.SlotLen = 0
	c.step(r, Decides, detail)
}

// Classify decides what the policy's kernel does with a probe on inst (at
// inst.Addr) when nothing but env is known: the address is assumed to be an
// instruction boundary and no function context exists (optprobe eligibility
// needs AuditFunc). inst must come from decode.Decode in a mode the policy
// supports.
func (p *Policy) Classify(inst *decode.Inst, env *Env) Decision {
	var d Decision
	p.ClassifyInto(&d, inst, env)
	return d
}

// ClassifyInto is Classify writing into d, reusing d.Reasons' storage.
func (p *Policy) ClassifyInto(d *Decision, inst *decode.Inst, env *Env) {
	s := scratchPool.Get().(*scratch)
	p.run(s, d, inst, env, false)
	scratchPool.Put(s)
}

// Explain classifies inst like Classify and returns every rule tried, in the
// kernel's order, with its outcome.
func (p *Policy) Explain(inst *decode.Inst, env *Env) ([]Step, Decision) {
	var d Decision
	s := new(scratch)
	p.run(s, &d, inst, env, true)
	return s.c.steps, d
}

// ClassifyBytes decodes b (the bytes at addr, up to 15 are used) the way the
// kernel's decoder does, including a Xen/KVM emulate prefix that package decode
// sees as a separate ud2, and classifies it like Classify.
func (p *Policy) ClassifyBytes(b []byte, mode decode.Mode, addr uint64) Decision {
	var d Decision
	p.runBytes(new(scratch), &d, b, mode, addr, nil, false)
	return d
}

// ExplainBytes is ClassifyBytes with every rule tried.
func (p *Policy) ExplainBytes(b []byte, mode decode.Mode, addr uint64, env *Env) ([]Step, Decision) {
	var d Decision
	s := new(scratch)
	p.runBytes(s, &d, b, mode, addr, env, true)
	return s.c.steps, d
}

// ClassifyBytesEnv is ClassifyBytes with an Env.
func (p *Policy) ClassifyBytesEnv(b []byte, mode decode.Mode, addr uint64, env *Env) Decision {
	var d Decision
	s := scratchPool.Get().(*scratch)
	p.runBytes(s, &d, b, mode, addr, env, false)
	scratchPool.Put(s)
	return d
}

func (p *Policy) runBytes(s *scratch, d *Decision, b []byte, mode decode.Mode, addr uint64, env *Env, explain bool) {
	if env == nil {
		env = p.DefaultEnv()
	}
	s.pr = p.bareProbe(addr, env)
	if read := readerOf(mode); read != nil {
		read(&s.pr, &s.inst, b, addr, mode)
	} else {
		p.readX86(s, b, mode, addr)
	}
	p.decide(s, d, env, explain, mode)
}

// readers read an instruction's bytes into the probe's view, by decoder
// mode; the ARM instruction sets' definitions register theirs (a64_policy.go,
// a32_policy.go). A mode without one is read by the kernel's x86 decoder
// (kdecode), which also reports what it cannot decode.
var readers [decode.ModeT32 + 1]func(pr *probe, dst *decode.Inst, b []byte, addr uint64, mode decode.Mode)

func readerOf(m decode.Mode) func(pr *probe, dst *decode.Inst, b []byte, addr uint64, mode decode.Mode) {
	if int(m) < len(readers) {
		return readers[m]
	}
	return nil
}

// readX86 is the kernel's x86 view of b (kdecode).
func (p *Policy) readX86(s *scratch, b []byte, mode decode.Mode, addr uint64) {
	if err := kdecode(p.kd(), &s.k, &s.inst, b, mode, addr); err != nil {
		s.pr.decErr = err
	} else {
		s.pr.k = &s.k
	}
}

// bareProbe is a probe with no function context; the ftrace location comes from
// the site tables when they know it.
func (p *Policy) bareProbe(addr uint64, env *Env) probe {
	pr := probe{addr: addr, boundary: -1, ftrace: -1, notrace: -1, atomic: -1}
	if env.Sites != nil {
		if hit, known := env.Sites.Ftrace(Span{addr, addr + 1}); known {
			pr.ftrace = 0
			if hit {
				pr.ftrace = 1
			}
		}
	}
	return pr
}

func (p *Policy) run(s *scratch, d *Decision, inst *decode.Inst, env *Env, explain bool) {
	if env == nil {
		env = p.DefaultEnv()
	}
	s.pr = p.bareProbe(inst.Addr, env)
	if read := readerOf(inst.Mode); read != nil {
		read(&s.pr, &s.inst, inst.Bytes(), inst.Addr, inst.Mode)
	} else if inst.Len > 0 {
		// Re-derive the kernel view from the raw bytes (i64 opcodes; an emulate
		// prefix needs the following bytes: use ClassifyBytes).
		p.readX86(s, inst.Bytes(), inst.Mode, inst.Addr)
	} else {
		s.pr.decErr = decode.ErrTruncated
	}
	p.decide(s, d, env, explain, inst.Mode)
}

// decide classifies the probe in s.pr into d. mode is the instruction set of the
// code (ModeInvalid: unknown).
func (p *Policy) decide(s *scratch, d *Decision, env *Env, explain bool, mode decode.Mode) {
	pr := &s.pr
	*d = Decision{Reasons: d.Reasons[:0], OptReasons: d.OptReasons[:0], Addr: pr.addr}
	s.c = cls{p: p, env: env, pr: pr, d: d, explain: explain, steps: s.c.steps[:0]}
	c := &s.c
	if pr.k != nil {
		mode = pr.k.in.Mode
		d.Len = pr.k.length
	}
	if mode != decode.ModeInvalid && !p.Supports(mode) {
		c.reject(rPolicyMode, EINVAL, c.detailf("%s models %v-bit code only", p.Name, p.Modes))
		return
	}
	if !p.Optprobes {
		d.OptReasons = append(d.OptReasons, Reason{Rule: rOptUnsup.ID, Text: rOptUnsup.Desc})
	}
	p.classify(c)
}

// writeRel32 writes E9 rel32 at dst (5 bytes), jumping from address from (the
// E9 byte) to to.
func writeRel32(dst []byte, from, to uint64) {
	rel := uint32(int32(int64(to - (from + 5))))
	dst[0] = 0xe9
	dst[1], dst[2], dst[3], dst[4] = byte(rel), byte(rel>>8), byte(rel>>16), byte(rel>>24)
}

// neverBoosts is canBoost for the policies that never boost.
func neverBoosts(*cls, *kinsn, uint64, *Env) bool { return false }

// noIndirectRule is indirectRule for the policies without x86 optprobes'
// indirect-jump tests.
func noIndirectRule(Config) (indirect, thunk bool) { return false, false }

func rejectSite(c *cls, q func(Span) (bool, bool), s Span, r *rule) bool {
	hit, known := q(s)
	switch {
	case hit:
		c.reject(r, EINVAL, "")
		return true
	case !known:
		c.step(r, Unknown, "no table: assumed absent")
	default:
		c.step(r, Pass, "no site here")
	}
	return false
}

// GridEnv is the Env OpcodeGrid uses: the policy's defaults with preemption off
// and no post_handler, so that boostability shows, at address 0x1000 with the
// slot at 0x2000.
func (p *Policy) GridEnv() *Env {
	cfg := p.Defaults
	cfg.Preemption = false
	cfg.PostHandler = false
	return &Env{Config: cfg, SlotAddr: 0x2000}
}
