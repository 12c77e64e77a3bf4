package loader

import (
	"fmt"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// Predictor predicts probes with a boost policy for a kernel image whose
// symbols came from the kernel itself; the environment is built by the same
// code as `kboost audit` (audit.Env).
type Predictor struct {
	File   *kimage.File
	Policy *boost.Policy
	Env    *boost.Env
	Notes  []string // what the environment does not know
	au     *boost.Auditor
	names  map[string]int
}

// NewPredictor builds the policy environment for f (symbols attached); cfg
// replaces the file's own configuration when not nil. policy "" is linux-6.1.
func NewPredictor(f *kimage.File, cfg *kimage.KConfig, policy string) (*Predictor, error) {
	if policy == "" {
		policy = "linux-6.1"
	}
	pol, err := boost.Lookup(policy)
	if err != nil {
		return nil, err
	}
	if cfg != nil {
		f.Config = cfg
	}
	env, notes := audit.Env(f, pol, cfg)
	return NewPredictorEnv(f, pol, env, notes), nil
}

// NewPredictorEnv is NewPredictor with a ready environment.
func NewPredictorEnv(f *kimage.File, pol *boost.Policy, env *boost.Env, notes []string) *Predictor {
	p := &Predictor{File: f, Policy: pol, Env: env, Notes: notes, au: pol.NewAuditor(env), names: map[string]int{}}
	if f != nil {
		for s := range f.Symbols.All() {
			p.names[s.Name]++
		}
	}
	return p
}

// Unique reports whether exactly one symbol has this name: kprobe_events
// refuses "sym+off" on an ambiguous name with EADDRNOTAVAIL.
func (p *Predictor) Unique(name string) bool { return p.names[name] == 1 }

// Audit audits one function with the given bytes (as the kernel has them).
// The result is valid until the next call.
func (p *Predictor) Audit(s kimage.Symbol, code []byte) (*boost.FuncAudit, error) {
	return p.au.Audit(boost.Func{Name: s.Name, Addr: s.Addr, Size: s.Size, Bytes: code})
}

// Expectation is what the kernel should do with one probe.
type Expectation struct {
	Point     string         `json:"point"`
	Addr      uint64         `json:"addr,omitempty"` // after IBT adjustment
	Decision  boost.Decision `json:"-"`
	Verdict   string         `json:"verdict"`         // Decision.Verdict
	Rules     []string       `json:"rules"`           // Decision's reason ids
	Errno     string         `json:"errno,omitempty"` // "" when the kernel should accept
	Ftrace    bool           `json:"ftrace"`
	Optimized bool           `json:"optimized"` // [OPTIMIZED] once enabled (no post handler)
	Bytes     []byte         `json:"bytes,omitempty"`
	// Resolved is a raw address as symbol+offset (kallsyms), as the kernel
	// resolves it.
	Resolved string `json:"resolved,omitempty"`
	// OptBytes are the original bytes an optprobe copies into its detour
	// buffer (Decision.OptLen of them), when the point is optimizable.
	OptBytes []byte `json:"opt_bytes,omitempty"`
	// TracefsInert: through kprobe_events the kernel does not return Errno
	// but accepts the event with no kprobe behind it. register_trace_kprobe
	// takes ENOENT from register_kprobe for "a module not loaded yet" unless
	// the probe names a module that is loaded; a raw address in no symbol
	// names none. The perf PMU returns Errno.
	TracefsInert bool `json:"tracefs_inert,omitempty"`
	// Warnings say why the prediction may be wrong (e.g. other kprobes in the
	// function: the bytes read show their int3 or jmp).
	Warnings []string `json:"warnings,omitempty"`
}

// Resolve finds the function a spec names and the offset in it. A raw
// address is looked up the way the kernel does (the kallsyms symbol at or
// below it); ok is false when no symbol holds it.
func (p *Predictor) Resolve(spec Spec) (s kimage.Symbol, off uint64, ok bool) {
	if spec.Addr != 0 {
		return p.File.Symbols.Lookup(spec.Addr)
	}
	s, ok = p.File.Symbols.ByName(spec.Symbol)
	return s, spec.Offset, ok
}

// Expect predicts spec, reading the function's bytes with read (e.g. from
// /proc/kcore). Unknown or ambiguous symbols get the kernel's errno. A raw
// address is resolved to symbol+offset (Expectation.Resolved) and predicted as
// that point; it is not subject to the ambiguous-name rule.
func (p *Predictor) Expect(spec Spec, read func(addr uint64, n int) ([]byte, error), optimization bool) (Expectation, error) {
	x := Expectation{Point: spec.Point()}
	s, off, ok := p.Resolve(spec)
	if ok && spec.Addr != 0 {
		x.Resolved = fmt.Sprintf("%s+%#x", s.Name, off)
	}
	switch {
	case !ok && spec.Addr != 0:
		x.Errno, x.Verdict, x.Rules = "ENOENT", "reject", []string{"loader.no_symbol_at_address"}
		x.Decision.Verdict, x.Decision.Errno = boost.Reject, boost.ENOENT
		x.TracefsInert = true
		return x, nil
	case !ok:
		x.Errno, x.Verdict, x.Rules = "ENOENT", "reject", []string{"loader.unknown_symbol"}
		x.Decision.Verdict, x.Decision.Errno = boost.Reject, boost.ENOENT
		return x, nil
	case spec.Addr == 0 && p.names[spec.Symbol] > 1:
		x.Errno, x.Verdict, x.Rules = "EADDRNOTAVAIL", "reject", []string{"loader.ambiguous_symbol"}
		x.Decision.Verdict = boost.Reject
		return x, nil
	case spec.Addr != 0 && !s.Func:
		// check_kprobe_address_safe: not kernel text.
		x.Errno, x.Verdict, x.Rules = "EINVAL", "reject", []string{"loader.not_text"}
		x.Decision.Verdict, x.Decision.Errno = boost.Reject, boost.EINVAL
		return x, nil
	case s.Size == 0:
		return x, fmt.Errorf("loader: %s has no known size", s.Name)
	case off >= s.Size:
		return x, &SpecError{"offset", fmt.Sprint(off), fmt.Sprintf("beyond the end of %s (%d bytes)", s.Name, s.Size)}
	}
	code, err := read(s.Addr, int(s.Size))
	if err != nil {
		return x, err
	}
	fa, err := p.Audit(s, code)
	if err != nil {
		return x, err
	}
	d, err := fa.At(off)
	if err != nil {
		return x, err
	}
	d.Reasons = append([]boost.Reason(nil), d.Reasons...)
	d.OptReasons = append([]boost.Reason(nil), d.OptReasons...)
	x.Decision = d
	x.Verdict, x.Rules = d.Verdict.String(), d.ReasonIDs()
	if d.Verdict == boost.Reject {
		x.Errno = d.Errno.String()
		return x, nil
	}
	x.Addr = d.Addr
	x.Ftrace = d.Verdict == boost.Ftrace
	x.Optimized = optimization && !x.Ftrace && !spec.Return && d.Optimizable
	at := d.Addr - s.Addr // after the IBT adjustment
	if d.Len > 0 && at+uint64(d.Len) <= uint64(len(code)) {
		x.Bytes = append([]byte(nil), code[at:at+uint64(d.Len)]...)
	}
	if d.Optimizable && d.OptLen > 0 && at+uint64(d.OptLen) <= uint64(len(code)) {
		x.OptBytes = append([]byte(nil), code[at:at+uint64(d.OptLen)]...)
	}
	return x, nil
}

// AuditSymbol audits the named function with bytes from read. The result is
// valid until the next Audit.
func (p *Predictor) AuditSymbol(name string, read func(addr uint64, n int) ([]byte, error)) (*boost.FuncAudit, error) {
	s, ok := p.File.Symbols.ByName(name)
	if !ok {
		return nil, fmt.Errorf("loader: %q: %w", name, kimage.ErrNoSymbol)
	}
	return p.auditAt(s, read)
}

func (p *Predictor) auditAt(s kimage.Symbol, read func(addr uint64, n int) ([]byte, error)) (*boost.FuncAudit, error) {
	if s.Size == 0 {
		return nil, fmt.Errorf("loader: %s has no known size", s.Name)
	}
	code, err := read(s.Addr, int(s.Size))
	if err != nil {
		return nil, err
	}
	return p.Audit(s, code)
}
