package kernelsim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// Path is how a kprobe hit runs the probed instruction.
type Path uint8

const (
	PathNone       Path = iota // no kprobe runs it: registration refused, or an ftrace-based probe
	PathEmulate                // the int3 handler emulates it (6.1 prepare_emulation)
	PathSingleStep             // slot + int3 (5.13+) or TF single-step (older), then IP fixed back
	PathBoost                  // slot + jmp rel32 back to addr+len: no second trap
)

func (p Path) String() string {
	switch p {
	case PathNone:
		return "none"
	case PathEmulate:
		return "emulate"
	case PathSingleStep:
		return "single-step"
	case PathBoost:
		return "boost"
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// PathOf is the hit path a decision implies.
func PathOf(d *boost.Decision) Path {
	switch d.Verdict {
	case boost.Boost:
		return PathBoost
	case boost.SingleStep:
		return PathSingleStep
	case boost.Emulate:
		return PathEmulate
	}
	return PathNone
}

// Jump and trap encodings written after the copied instruction.
const (
	jmpRel32Len = 5 // E9 rel32
	int3Len     = 1 // CC
)

// SlotRangeError is returned when a RIP-relative displacement no longer fits
// a signed 32-bit value once rebased to the slot (the kernel's
// __copy_instruction then fails and registration returns -EINVAL). Choose a
// slot address within +-2 GiB of the target of the operand.
type SlotRangeError struct {
	Addr, SlotAddr uint64
	NewDisp        int64
}

func (e *SlotRangeError) Error() string {
	return fmt.Sprintf("kernelsim: RIP-relative displacement rebased from %#x to slot %#x is %#x, beyond s32 (the kernel refuses the probe with EINVAL); use a slot within 2 GiB of the operand", e.Addr, e.SlotAddr, e.NewDisp)
}

// ErrNoSlot: the path writes nothing a hit executes (emulated or refused).
var ErrNoSlot = errors.New("kernelsim: no slot for this hit path")

// BuildSlot writes what the kernel writes to a kprobe slot at slot for inst
// (decoded at its probe address inst.Addr) and path: the copied instruction
// with its RIP-relative displacement rebased (new disp = addr + disp - slot),
// then "jmp rel32" back to addr+len (PathBoost) or int3 (PathSingleStep). It
// is an independent model of __copy_instruction + prepare_singlestep, used to
// check boost's Decision.Slot and to build "what if boosted" slots the policy
// would not build.
func BuildSlot(inst *decode.Inst, slot uint64, path Path) ([]byte, error) {
	if path != PathBoost && path != PathSingleStep {
		return nil, ErrNoSlot
	}
	buf := append([]byte(nil), inst.Bytes()...)
	if inst.RIPRel && inst.DispLen == 4 {
		nd := int64(inst.Addr) + inst.Disp - int64(slot)
		if nd != int64(int32(nd)) {
			return nil, &SlotRangeError{Addr: inst.Addr, SlotAddr: slot, NewDisp: nd}
		}
		binary.LittleEndian.PutUint32(buf[inst.DispOff:], uint32(int32(nd)))
	}
	if path == PathSingleStep {
		return append(buf, 0xCC), nil
	}
	// the jump back wraps at the word size: on i386 a rel32 reaches every
	// address, on x86-64 only 2 GiB either way
	from := slot + uint64(inst.Len)
	rel := decode.ArchOf(inst.Mode).SignedWord(inst.End() - (from + jmpRel32Len))
	if rel != int64(int32(rel)) {
		return nil, fmt.Errorf("kernelsim: jmp back from slot %#x to %#x does not fit rel32: %w", slot, inst.End(), ErrBadCase)
	}
	var j [jmpRel32Len]byte
	j[0] = 0xE9
	binary.LittleEndian.PutUint32(j[1:], uint32(rel))
	return append(buf, j[:]...), nil
}

// Site is a probe site to model: the bytes at Addr (the first instruction is
// probed), the policy, and where the kernel put the slot.
type Site struct {
	Code     []byte
	Mode     decode.Mode
	Addr     uint64
	SlotAddr uint64
	Policy   *boost.Policy
	// Env is the policy environment; nil means SimEnv(Policy).
	Env *boost.Env
}

// SimEnv is the environment kernelsim classifies in: the policy's defaults
// with CONFIG_PREEMPTION off and no post_handler — a kernel that boosts
// (Debian's PREEMPT_DYNAMIC kernels never do).
func SimEnv(p *boost.Policy) *boost.Env {
	e := p.DefaultEnv()
	e.Config.Preemption = false
	e.Config.PostHandler = false
	return e
}

// SlotModel is what the kernel builds for one probe site, checked.
type SlotModel struct {
	Site     Site
	Inst     decode.Inst
	Decision boost.Decision
	Path     Path
	// Slot is the slot image the hit executes (nil for PathEmulate and
	// PathNone), built by BuildSlot and compared with Decision.Slot.
	Slot []byte
	// JmpAt is the slot offset of the jmp back (-1 without one); JmpTarget is
	// where it lands.
	JmpAt     int
	JmpTarget uint64
	// Int3At is the slot offset of the int3 (-1 without one).
	Int3At int
	// NewDisp is the rebased RIP-relative displacement (valid when Inst.RIPRel).
	NewDisp int64
	// Problems lists layout violations Verify found (empty when sound).
	Problems []string
}

// NewSlotModel decodes the site, classifies it under the policy, builds the
// slot independently and verifies it (see Verify). A decode failure or a
// refused RIP-relative rebase is an error (the latter a *SlotRangeError); a
// disagreement with boost's slot image is recorded in Problems.
func NewSlotModel(s Site) (*SlotModel, error) {
	if s.Policy == nil {
		return nil, fmt.Errorf("kernelsim: site without a policy")
	}
	if s.Env == nil {
		s.Env = SimEnv(s.Policy)
	}
	env := *s.Env
	env.SlotAddr = s.SlotAddr
	s.Env = &env
	m := &SlotModel{Site: s, JmpAt: -1, Int3At: -1}
	if err := decode.DecodeInto(&m.Inst, s.Code, s.Mode, s.Addr); err != nil {
		return nil, fmt.Errorf("kernelsim: probe site %x: %w", s.Code, err)
	}
	m.Decision = s.Policy.ClassifyBytesEnv(s.Code, s.Mode, s.Addr, &env)
	m.Path = PathOf(&m.Decision)
	if m.Inst.RIPRel {
		m.NewDisp = int64(m.Inst.Addr) + m.Inst.Disp - int64(s.SlotAddr)
	}
	var slotPath Path
	switch m.Path {
	case PathBoost, PathSingleStep:
		slotPath = m.Path
	case PathEmulate:
		// 6.1 still writes insn + int3; the hit never runs it
		slotPath = PathSingleStep
	}
	if slotPath != PathNone {
		slot, err := BuildSlot(&m.Inst, s.SlotAddr, slotPath)
		if err != nil {
			return m, err
		}
		if m.Path != PathEmulate {
			m.Slot = slot
		}
		if want := m.Decision.SlotBytes(); want != nil && s.Policy.Name != "linux-2.6.17-i386" && !bytes.Equal(want, slot) {
			m.Problems = append(m.Problems, fmt.Sprintf("slot model % x differs from boost's slot image % x", slot, want))
		}
	} else if m.Inst.RIPRel && m.NewDisp != int64(int32(m.NewDisp)) {
		return m, &SlotRangeError{Addr: s.Addr, SlotAddr: s.SlotAddr, NewDisp: m.NewDisp}
	}
	m.Problems = append(m.Problems, m.Verify()...)
	return m, nil
}

// Verify checks the slot layout: the copy decodes to the same instruction
// (same length; a RIP-relative operand reaches the same address from the
// slot), the jmp back lands on addr+len, the slot fits the policy's
// MAX_INSN_SIZE, and no relative branch of the copy lands inside the tail
// (the jmp or int3 after the instruction, other than its first byte).
func (m *SlotModel) Verify() []string {
	var p []string
	if m.Slot == nil {
		return nil
	}
	n := m.Inst.Len
	max := m.Site.Policy.MaxInsnSize
	if len(m.Slot) > max {
		p = append(p, fmt.Sprintf("slot is %d bytes, MAX_INSN_SIZE is %d", len(m.Slot), max))
	}
	var c decode.Inst
	if err := decode.DecodeInto(&c, m.Slot, m.Inst.Mode, m.Site.SlotAddr); err != nil || c.Len != n {
		p = append(p, fmt.Sprintf("the slot copy does not decode to a %d-byte instruction (%v)", n, err))
		return p
	}
	if m.Inst.RIPRel {
		if a, b := m.Inst.End()+uint64(m.Inst.Disp), c.End()+uint64(c.Disp); a != b {
			p = append(p, fmt.Sprintf("RIP-relative operand reaches %#x from the slot, %#x in place", b, a))
		}
	}
	switch tail := m.Slot[n:]; {
	case len(tail) == jmpRel32Len && tail[0] == 0xE9:
		m.JmpAt = n
		var j decode.Inst
		if err := decode.DecodeInto(&j, tail, m.Inst.Mode, m.Site.SlotAddr+uint64(n)); err != nil || j.Branch != decode.BranchJmp {
			p = append(p, "the tail is not a jmp")
		} else {
			m.JmpTarget = j.Target
			if j.Target != m.Inst.End() {
				p = append(p, fmt.Sprintf("jmp back lands on %#x, not addr+len %#x", j.Target, m.Inst.End()))
			}
		}
	case len(tail) == int3Len && tail[0] == 0xCC:
		m.Int3At = n
	default:
		p = append(p, fmt.Sprintf("unexpected slot tail % x", tail))
	}
	if c.Branch.Relative() {
		lo, hi := m.Site.SlotAddr+uint64(n)+1, m.Site.SlotAddr+uint64(len(m.Slot))
		if c.Target >= lo && c.Target < hi {
			p = append(p, fmt.Sprintf("the copy's branch target %#x lands inside the slot tail", c.Target))
		}
	}
	return p
}
