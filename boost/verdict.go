package boost

import "fmt"

// Verdict is what a kernel does with a probe at one address.
type Verdict uint8

const (
	// Reject: registration fails; Decision.Errno holds the kernel's errno.
	Reject Verdict = iota
	// Ftrace: the address is an ftrace location; the probe is ftrace-based
	// (listed [FTRACE]), never boosted nor jump-optimized.
	Ftrace
	// Emulate: the kernel emulates the instruction in the int3 handler (arm64:
	// simulates it in the BRK handler, no slot; the simulate_* routine is named
	// by the arm64.simulate.* reason; 32-bit ARM: INSN_GOOD_NO_SLOT, the
	// arm.simulate.* / thumb.simulate.* reason names the action).
	Emulate
	// SingleStep: the instruction runs out of line, followed by a trap (int3 in the
	// slot since 5.13, TF single-step before; uprobes: TF single-step in the XOL slot;
	// arm64: BRK #6 after the copy, uprobes: hardware step; 32-bit ARM:
	// INSN_GOOD, the emulation handler calls the slot as a subroutine).
	SingleStep
	// Boost: the instruction runs out of line followed by a jmp back (arm64 model:
	// B addr+4): no second trap.
	Boost
	numVerdicts
)

var verdictNames = [...]string{"reject", "ftrace", "emulate", "singlestep", "boost"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// ParseVerdict is the inverse of Verdict.String.
func ParseVerdict(s string) (Verdict, error) {
	for i, n := range verdictNames {
		if n == s {
			return Verdict(i), nil
		}
	}
	return 0, fmt.Errorf("unknown verdict %q (want one of reject, ftrace, emulate, singlestep, boost)", s)
}

// MarshalText makes verdicts print as their names in JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Errno is a Linux errno value, as the kernel returns it (positive).
type Errno uint16

// The errnos kprobes and uprobes registration return on x86 (asm-generic numbers,
// plus the kernel-internal ENOTSUPP).
const (
	ENOENT     Errno = 2
	ENOEXEC    Errno = 8
	ENOMEM     Errno = 12
	EBUSY      Errno = 16
	EEXIST     Errno = 17
	EINVAL     Errno = 22
	ENOSPC     Errno = 28
	ERANGE     Errno = 34
	EILSEQ     Errno = 84
	EOPNOTSUPP Errno = 95
	ENOTSUPP   Errno = 524 // kernel-internal "operation not supported" (uprobes)
)

var errnoNames = map[Errno]string{
	ENOENT: "ENOENT", ENOEXEC: "ENOEXEC", ENOMEM: "ENOMEM", EBUSY: "EBUSY", EEXIST: "EEXIST",
	EINVAL: "EINVAL", ENOSPC: "ENOSPC", ERANGE: "ERANGE", EILSEQ: "EILSEQ",
	EOPNOTSUPP: "EOPNOTSUPP", ENOTSUPP: "ENOTSUPP",
}

// String returns the errno's kernel name ("EILSEQ"), "" for 0.
func (e Errno) String() string {
	if e == 0 {
		return ""
	}
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return fmt.Sprintf("errno(%d)", uint16(e))
}

// MarshalText makes errnos print as their names in JSON.
func (e Errno) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// Reason names one kernel rule that shaped a verdict. Rule is a stable dotted id
// listed in Rules(); Text is a human-readable explanation.
type Reason struct {
	Rule string `json:"rule"`
	Text string `json:"text"`
}

func (r Reason) String() string { return r.Rule }

// Outcome is what one rule did when it was tried.
type Outcome uint8

const (
	// Pass: the instruction passed the check; evaluation continues.
	Pass Outcome = iota
	// Fail: the check failed without deciding by itself (e.g. can_boost said no; a
	// later rule picks the verdict).
	Fail
	// Decides: this rule fixed the verdict.
	Decides
	// Unknown: the rule needs a table the caller did not supply; it was assumed
	// not to apply.
	Unknown
	// Note: informational (a kernel quirk that applies here); not a check.
	Note
)

var outcomeNames = [...]string{"pass", "fail", "decides", "unknown", "note"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// MarshalText makes outcomes print as their names in JSON.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// Step is one rule tried while classifying, in kernel order (see Explain).
type Step struct {
	Rule    string  `json:"rule"`
	Outcome Outcome `json:"outcome"`
	Text    string  `json:"text"`
}

func (s Step) String() string { return fmt.Sprintf("%-34s %-7s %s", s.Rule, s.Outcome, s.Text) }

// SlotMax is the largest number of bytes a slot image can hold: a 16-byte copy
// (MAX_INSN_SIZE of 2.6.17 i386) plus a 5-byte jmp.
const SlotMax = 21

// Decision is the verdict for one probe address, with the rules behind it.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	Errno   Errno   `json:"errno,omitempty"` // set when Verdict == Reject
	// Reasons are the rules that decided or constrained the verdict, in the order
	// tried (failed checks and the deciding rule). Explain gives every step.
	Reasons []Reason `json:"reasons"`
	// CanBoost is the kernel's can_boost() result for the instruction, computed
	// even when the kernel's own short-circuit (CONFIG_PREEMPTION) skips it.
	CanBoost bool `json:"can_boost"`
	// Emulated is set when the kernel installs an emulation routine (6.1
	// prepare_emulation, uprobes branch/push/nop). A boosted probe runs its slot
	// instead of the emulation.
	Emulated bool `json:"emulated"`
	// Optimizable reports jump-optimization (optprobe) eligibility; only AuditFunc
	// computes it. OptReasons say why not (or which rule allowed it).
	Optimizable bool     `json:"optimizable"`
	OptReasons  []Reason `json:"opt_reasons,omitempty"`
	// OptLen is the number of original bytes an optprobe would copy (>= 5) when
	// Optimizable.
	OptLen int `json:"opt_len,omitempty"`
	// Len is the instruction length as the kernel decodes it (it includes a
	// Xen/KVM emulate prefix); 0 when not decoded.
	Len int `json:"len"`
	// SlotLen is the number of bytes written to the instruction slot (the kernel's
	// tp_len): the copied instruction plus jmp rel32 (Boost) or int3 (SingleStep
	// or Emulate in 6.1). 0 when rejected or ftrace-based.
	SlotLen int `json:"slot_len"`
	// Slot holds the slot image (first SlotLen bytes): the instruction with any
	// RIP-relative displacement rebased to Env.SlotAddr, then E9 rel32 back to
	// Addr+Len (Boost) or CC. For linux-2.6.17-i386 it is the state after the
	// first single-step (see Booster2006). arm64: the word then BRK #6
	// (d42000c0), or B addr+4 (boost-arm64); uprobes-arm64: the word alone.
	// linux-6.1-arm: the register-renamed word then mov pc, lr (e1a0f00e);
	// linux-6.1-thumb: the instruction's halfwords then bx lr (4770), 6 bytes.
	Slot [SlotMax]byte `json:"-"`
	// Addr is the probed address (after IBT adjustment).
	Addr uint64 `json:"addr"`
	// Scratch is, for a uprobe on a RIP-relative instruction, the register
	// (3 rbx, 6 rsi, 7 rdi) its slot copy addresses through instead of RIP; the
	// kernel loads it with the address after the instruction. 0 otherwise.
	Scratch int8 `json:"scratch,omitempty"`
}

// SlotBytes returns the slot image, or nil when nothing is written to a slot.
func (d *Decision) SlotBytes() []byte {
	if d.SlotLen == 0 {
		return nil
	}
	return d.Slot[:d.SlotLen]
}

// ReasonTexts returns the texts of Reasons, in order (a JSON record's
// details, beside ReasonIDs' reasons).
func (d *Decision) ReasonTexts() []string {
	t := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		t[i] = r.Text
	}
	return t
}

// ReasonIDs returns the rule ids of Reasons.
func (d *Decision) ReasonIDs() []string {
	ids := make([]string, len(d.Reasons))
	for i, r := range d.Reasons {
		ids[i] = r.Rule
	}
	return ids
}

func (d *Decision) String() string {
	s := d.Verdict.String()
	if d.Errno != 0 {
		s += " " + d.Errno.String()
	}
	for i, r := range d.Reasons {
		if i == 0 {
			s += " ("
		} else {
			s += ", "
		}
		s += r.Rule
		if i == len(d.Reasons)-1 {
			s += ")"
		}
	}
	return s
}
