package ptprobe

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// Errors.
var (
	// ErrPoint marks a probe point kboost refuses (bad syntax, no such
	// function, mid-instruction, an instruction no mechanism can run).
	ErrPoint = errors.New("probe point")
	// ErrEngine marks a failure of the live engine (injection, patching).
	ErrEngine = errors.New("probe engine")
)

// Mode is a probe mechanism.
type Mode uint8

const (
	// SingleStep: int3 at the point; the copy runs out of line followed by
	// int3 in the slot; two stops per hit.
	SingleStep Mode = iota
	// Boost: int3 at the point; the copy runs out of line followed by a jmp
	// back; one stop per hit.
	Boost
	// Jump: a jmp rel32 to a trampoline that counts the hit and runs the
	// displaced instructions; no stop.
	Jump
	// Emulate: int3 at the point; kboost emulates the instruction as the
	// kernel's kprobes do (relative branches, ret, push/pop of flags); one
	// stop per hit. Never asked for: the fallback of instructions that
	// cannot run out of line.
	Emulate
)

var modeNames = [...]string{"singlestep", "boost", "jump", "emulate"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// MarshalText prints a mode as its name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseMode accepts singlestep, boost and jump.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames[:Emulate] {
		if n == s {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown mode %q (want singlestep, boost or jump)", ErrPoint, s)
}

// PolicyName is the boost policy that decides which instructions may be
// displaced: the x86 kprobe booster's rules (can_boost, prepare_emulation,
// the RIP-relative rebase) and optprobes' can_optimize for jumps.
const PolicyName = "linux-6.1"

// Env is the policy environment for user-space code: a kernel that boosts
// and optimizes (no preemption, optprobes on), no IBT redirection, no
// ftrace locations, no notrace check (none of these exists in user space).
func Env(p *boost.Policy, slot uint64) *boost.Env {
	e := p.DefaultEnv()
	e.Config.Preemption = false
	e.Config.PostHandler = false
	e.Config.Optprobes = true
	e.Config.IBT = false
	e.Config.KprobesOnFtrace = false
	e.Config.DirectRegister = true
	e.Config.Retpoline = false
	e.SlotAddr = slot
	e.Mode = decode.Mode64
	return e
}

// Area sizes: each probe owns AreaSize bytes of the code page and one
// counter word of the data page that follows it.
// The code page ends with the record routine and two per-process words
// (RecordAt, ring.go).
const (
	PageSize  = 4096
	AreaSize  = 64
	MaxProbes = RecordAt / AreaSize
	SlotPages = 2
)

// Site is one planned probe: the mechanism chosen at a runtime address and
// what kboost writes for it.
type Site struct {
	Func string `json:"func"`
	Off  uint64 `json:"off"`
	Addr uint64 `json:"-"`
	Want Mode   `json:"want"`
	Mode Mode   `json:"mode"`
	// Len is the number of bytes of the instruction at Addr; Patch the bytes
	// written at Addr (int3, or jmp rel32 over Displaced bytes) and Orig what
	// they replace.
	Len       int    `json:"len"`
	Displaced int    `json:"displaced"`
	Patch     []byte `json:"-"`
	Orig      []byte `json:"-"`
	// Code is written at CodeAddr (the probe's area of the slot page); for
	// Jump, Counter is the address of its hit counter.
	Code     []byte `json:"-"`
	CodeAddr uint64 `json:"-"`
	Counter  uint64 `json:"-"`
	// Recorded: the trampoline writes a record per hit into the ring.
	Recorded bool `json:"-"`
	// Reasons are the rule ids behind the mode (the policy's, and ptprobe.*
	// for a fallback); Details say the same in words.
	Reasons []string `json:"reasons"`
	Details []string `json:"details"`

	inst decode.Inst
}

// Inst is the decoded instruction at the point.
func (s *Site) Inst() *decode.Inst { return &s.inst }

// Int3At is the address of the int3 a SingleStep slot ends with (0 otherwise).
func (s *Site) Int3At() uint64 {
	if s.Mode != SingleStep {
		return 0
	}
	return s.CodeAddr + uint64(s.Len)
}

func (s *Site) note(rule, detail string) {
	s.Reasons = append(s.Reasons, rule)
	s.Details = append(s.Details, detail)
}

func (s *Site) notes(rs []boost.Reason) {
	for _, r := range rs {
		s.note(r.Rule, r.Text)
	}
}

// The trampoline's prologue and epilogue count a hit without touching the
// red zone (the stack pointer moves past it first; a call would write its
// return address there, the bug of the kernel's optimized uprobes) or any
// register or flag. The locked increment changes OF SF ZF AF PF: SZAPC go
// to AH (lahf) and OF to AL (seto), and come back with add $0x7f,%al (OF
// set exactly when AL was 1) then sahf — cheaper than pushfq/popfq, whose
// popf is microcoded.
var (
	tramPre = []byte{0x48, 0x8d, 0x64, 0x24, 0x80, // lea -0x80(%rsp),%rsp
		0x50,             // push %rax
		0x0f, 0x90, 0xc0, // seto %al
		0x9f,                               // lahf
		0xf0, 0x48, 0xff, 0x05, 0, 0, 0, 0} // lock incq rel32(%rip)
	tramPost = []byte{0x04, 0x7f, // add $0x7f,%al
		0x9e,                                           // sahf
		0x58,                                           // pop %rax
		0x48, 0x8d, 0xa4, 0x24, 0x80, 0x00, 0x00, 0x00} // lea 0x80(%rsp),%rsp
)

// counterDispOff is where tramPre's rel32 sits (it ends the prologue).
const counterDispOff = 14

// tramRecord, between tramPre and tramPost when hits are recorded, calls
// the page's record routine with the probe's index (the stack pointer is
// past the red zone, so the call's push is safe; the saved flags in rax
// are pushed around it).
var tramRecord = []byte{0x50, // push %rax
	0xb8, 0, 0, 0, 0, // mov $probe,%eax
	0xe8, 0, 0, 0, 0, // call record
	0x58} // pop %rax

// Slots say where a probe's code and data live in the tracee: its area of
// the code page, its counter word, and (Record != 0: jump hits are
// recorded) the record routine and the probe's index.
type Slots struct {
	Code, Counter uint64
	Record        uint64
	Probe         int
}

// Plan decides the probe at fn.Addr+off under the policy, for a slot area at
// code (counter word at counter), wanting mode want. fn holds the function's
// runtime address and bytes. A point no mechanism can take is an error
// wrapping ErrPoint; otherwise the site says the mode it falls back to and
// why.
func Plan(p *boost.Policy, fn boost.Func, off uint64, want Mode, code, counter uint64) (Site, error) {
	return PlanAt(p, fn, off, want, Slots{Code: code, Counter: counter})
}

// PlanAt is Plan with the probe's slots (a jump that records its hits).
func PlanAt(p *boost.Policy, fn boost.Func, off uint64, want Mode, sl Slots) (Site, error) {
	s := Site{Func: fn.Name, Off: off, Addr: fn.Addr + off, Want: want, CodeAddr: sl.Code, Counter: sl.Counter}
	a, err := p.AuditFunc(fn, Env(p, sl.Code))
	if err != nil {
		return s, fmt.Errorf("%w: %s: %w", ErrPoint, fn.Name, err)
	}
	d, err := a.At(off)
	if err != nil {
		return s, fmt.Errorf("%w: %s+%#x: %w", ErrPoint, fn.Name, off, err)
	}
	if d.Verdict == boost.Reject || d.Verdict == boost.Ftrace {
		return s, fmt.Errorf("%w: %s+%#x: %s under %s: no mechanism can run it", ErrPoint, fn.Name, off, d.String(), p.Name)
	}
	if err := decode.DecodeInto(&s.inst, fn.Bytes[off:], decode.Mode64, s.Addr); err != nil {
		return s, fmt.Errorf("%w: %s+%#x: %w", ErrPoint, fn.Name, off, err)
	}
	if s.inst.Len != d.Len {
		// The kernel's decoder (the policy's view) and the CPU's length
		// (kboost's decoder) disagree: a copy of d.Len bytes would run
		// another instruction.
		return s, fmt.Errorf("%w: %s+%#x: the policy copies %d bytes, the instruction is %d (ptprobe.length_mismatch)", ErrPoint, fn.Name, off, d.Len, s.inst.Len)
	}
	s.Len = d.Len
	if want == Jump {
		if ok := s.planJump(p, fn, off, &d, sl); ok {
			return s, nil
		}
	}
	s.Patch = []byte{0xcc}
	s.Orig = append([]byte(nil), fn.Bytes[off:off+1]...)
	s.Displaced = 1
	switch d.Verdict {
	case boost.Emulate:
		s.Mode = Emulate
		s.notes(d.Reasons)
		s.note("ptprobe.emulate", "the instruction depends on its address: kboost emulates it at the int3 stop, as kprobes do")
		return s, nil
	case boost.SingleStep:
		s.notes(d.Reasons)
		if want != SingleStep {
			s.note("ptprobe.singlestep_fallback", "not boostable: the copy is followed by int3 (two stops per hit)")
		}
		s.Mode = SingleStep
	case boost.Boost:
		if want == SingleStep {
			s.Mode = SingleStep
			s.note("ptprobe.singlestep", "asked for: the copy is followed by int3")
		} else {
			s.notes(d.Reasons)
			s.Mode = Boost
		}
	}
	copyLen := d.Len
	if s.Mode == Boost {
		s.Code = append([]byte(nil), d.SlotBytes()...)
	} else {
		s.Code = append(append([]byte(nil), d.Slot[:copyLen]...), 0xcc)
	}
	return s, nil
}

// planJump builds the jump and its trampoline when optprobes' rules allow
// it and every displaced instruction's relocated copy is boostable at its
// place in the trampoline; otherwise it records why not.
func (s *Site) planJump(p *boost.Policy, fn boost.Func, off uint64, d *boost.Decision, sl Slots) bool {
	if !d.Optimizable {
		s.notes(d.OptReasons)
		s.note("ptprobe.jump_fallback", "optprobes' rules refuse a jump here: falling back to boost")
		return false
	}
	n := d.OptLen
	code := append([]byte(nil), tramPre...)
	rel := int64(s.Counter) - int64(s.CodeAddr+uint64(len(tramPre)))
	if rel != int64(int32(rel)) {
		s.note("ptprobe.counter_range", "the counter page is beyond rel32 of the trampoline")
		return false
	}
	binary.LittleEndian.PutUint32(code[counterDispOff:], uint32(int32(rel)))
	if sl.Record != 0 {
		at := len(code)
		code = append(code, tramRecord...)
		binary.LittleEndian.PutUint32(code[at+2:], uint32(sl.Probe))
		cr := int64(sl.Record) - int64(s.CodeAddr+uint64(at+11))
		if cr != int64(int32(cr)) {
			s.note("ptprobe.record_range", "the record routine is beyond rel32 of the trampoline")
			return false
		}
		binary.LittleEndian.PutUint32(code[at+7:], uint32(int32(cr)))
		s.Recorded = true
	}
	code = append(code, tramPost...)
	env := Env(p, 0)
	for x := 0; x < n; {
		at := s.Addr + uint64(x)
		env.SlotAddr = s.CodeAddr + uint64(len(code))
		di := p.ClassifyBytesEnv(fn.Bytes[off+uint64(x):], decode.Mode64, at, env)
		var in decode.Inst
		if decode.DecodeInto(&in, fn.Bytes[off+uint64(x):], decode.Mode64, at) != nil || in.Len != di.Len {
			s.note("ptprobe.length_mismatch", fmt.Sprintf("displaced instruction at +%#x: the policy's length is not the CPU's", off+uint64(x)))
			return false
		}
		if di.Verdict != boost.Boost {
			s.notes(di.Reasons)
			s.note("ptprobe.jump_copy", fmt.Sprintf("displaced instruction at +%#x is %s at its trampoline place: falling back to boost", off+uint64(x), di.Verdict))
			return false
		}
		if x+di.Len < n {
			code = append(code, di.Slot[:di.Len]...)
		} else {
			code = append(code, di.SlotBytes()...) // the last one keeps its jmp back to addr+n
		}
		x += di.Len
	}
	if len(code) > AreaSize {
		s.note("ptprobe.jump_size", "the trampoline does not fit its area")
		return false
	}
	jmp := make([]byte, 5)
	jmp[0] = 0xe9
	jr := int64(s.CodeAddr) - int64(s.Addr+5)
	if jr != int64(int32(jr)) {
		s.note("ptprobe.jump_range", "the slot page is beyond rel32 of the point")
		return false
	}
	binary.LittleEndian.PutUint32(jmp[1:], uint32(int32(jr)))
	s.Mode, s.Displaced, s.Code, s.Patch = Jump, n, code, jmp
	s.Orig = append([]byte(nil), fn.Bytes[off:off+uint64(n)]...)
	s.notes(d.OptReasons)
	return true
}

// Demote turns a planned Jump into Boost (a thread inside the displaced
// bytes, another probe among them), with the reason.
func Demote(p *boost.Policy, fn boost.Func, s *Site, rule, why string) (Site, error) {
	t, err := Plan(p, fn, s.Off, Boost, s.CodeAddr, s.Counter)
	if err != nil {
		return t, err
	}
	t.Want = s.Want
	t.note(rule, why)
	return t, nil
}
