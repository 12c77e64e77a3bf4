package boost

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

// The original kprobe-booster (i386, merged for 2.6.17 with the April 2006
// "boost 2byte-opcodes" follow-up). No boundary check, no emulation: every probe
// single-steps its copy with TF; the booster state decides later hits.

// max2006 is MAX_INSN_SIZE on i386 then.
const max2006 = 16

var booster2617 = &Policy{
	Name:   "linux-2.6.17-i386",
	Title:  "Linux 2.6.17 i386 kprobe-booster: lazy jmp after the first single-step, state -1/0/1",
	Source: "kprobe-booster patches (Hiramatsu, Feb/Apr 2006) to arch/i386/kernel/kprobes.c: can_boost(), resume_execution(), kprobe_handler()",
	Modes:  []decode.Mode{decode.Mode32},
	// A 2.6.17 distribution kernel: CONFIG_PREEMPT off (voluntary preemption).
	Defaults:      Config{SMP: true},
	MaxInsnSize:   max2006,
	CheckBoundary: false,
	classify:      classify2006,
	canBoost: func(c *cls, k *kinsn, a uint64, env *Env) bool {
		ok, _ := canBoost2006(k.in.Bytes())
		return ok
	},
}

// BoostState is the 2006 booster's p->ainsn.boostable.
type BoostState int8

const (
	BoostNever     BoostState = -1 // never boosted
	BoostCandidate BoostState = 0  // boostable; decided after the first single-step
	BoostOn        BoostState = 1  // later hits run the slot directly
)

func (s BoostState) String() string {
	switch s {
	case BoostNever:
		return "-1 (never)"
	case BoostCandidate:
		return "0 (candidate)"
	case BoostOn:
		return "1 (boosted)"
	}
	return fmt.Sprintf("BoostState(%d)", int8(s))
}

// HitPath is what kprobe_handler() does on a hit.
type HitPath uint8

const (
	HitSingleStep HitPath = iota // TF single-step of the slot, then resume_execution
	HitBoosted                   // jump to the slot; no further trap
)

func (h HitPath) String() string {
	if h == HitBoosted {
		return "boosted"
	}
	return "singlestep"
}

// Booster2006 replays one 2006 i386 kprobe: its slot and its boostable state.
// Create with NewBooster2006; call Hit at each hit and, when it returns
// HitSingleStep, AfterStep with where the single-step left IP.
type Booster2006 struct {
	Addr, SlotAddr uint64
	State          BoostState
	// Slot is the 16 bytes memcpy'd from Addr, with the jmp written by the first
	// AfterStep when it boosts.
	Slot [max2006]byte
	// JmpAt is the slot offset of the jmp back (-1 when none was written).
	JmpAt int
	// Rule is the can_boost rule that set the initial state.
	Rule string
}

// NewBooster2006 prepares a probe on code (the 16 bytes at addr; fewer are padded
// with zeros) as arch_prepare_kprobe() did: copy, then state 0 if can_boost()
// else -1.
func NewBooster2006(code []byte, addr, slot uint64) *Booster2006 {
	b := &Booster2006{Addr: addr, SlotAddr: slot, JmpAt: -1}
	copy(b.Slot[:], code)
	ok, why := canBoost2006(b.Slot[:])
	b.Rule = why
	if ok {
		b.State = BoostCandidate
	} else {
		b.State = BoostNever
	}
	return b
}

// Hit is kprobe_handler()'s choice (pre_handler returning 0): the slot runs
// directly when state is 1, no post_handler is set and CONFIG_PREEMPT is off.
func (b *Booster2006) Hit(cfg Config) HitPath {
	if b.State == BoostOn && !cfg.PostHandler && !cfg.Preemption {
		return HitBoosted
	}
	return HitSingleStep
}

// AfterStep is resume_execution() after the TF single-step of the slot: ipOff is
// regs->eip - slot when the step trapped (for a straight-line instruction its
// length; for a taken branch wherever it went, possibly "negative" as a wrapped
// uint64). It updates the state and, on the first step of a candidate, writes
// the jmp back at IP when (ip - slot) + 5 < 16. It returns the resumed IP in the
// original code (or 0 when IP was already correct: ret/iret/far jmp/indirect).
func (b *Booster2006) AfterStep(ipOff uint64) uint64 {
	switch op := b.Slot[0]; op {
	case 0xc2, 0xc3, 0xca, 0xcb, 0xcf, 0xea:
		b.State = BoostOn
		return 0
	case 0x9a:
		return 0
	case 0xff:
		m := b.Slot[1]
		if m&0x30 == 0x10 {
			return 0
		}
		if m&0x31 == 0x20 || m&0x31 == 0x21 {
			b.State = BoostOn
			return 0
		}
	}
	if b.State == BoostCandidate {
		if ipOff > 0 && ipOff+5 < max2006 {
			writeRel32(b.Slot[ipOff:], b.SlotAddr+ipOff, b.Addr+ipOff)
			b.JmpAt = int(ipOff)
			b.State = BoostOn
		} else {
			b.State = BoostNever
		}
	}
	return b.Addr + ipOff
}

// canBoost2006 is the April 2006 can_boost(opcodes): prefixes are skipped by
// retrying on the next byte (at most MAX_INSN_SIZE-1 of them).
func canBoost2006(b []byte) (bool, string) {
	at := func(i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	for i := 0; ; i++ {
		if i > max2006-1 {
			return false, "prefixes fill the buffer"
		}
		o := at(i)
		if o == 0x0f {
			if i+1 > max2006-1 {
				return false, "0F at the end of the buffer"
			}
			n := at(i + 1)
			if twobyteBoostable2006.has(n) {
				return true, fmt.Sprintf("0F %02x is set in twobyte_is_boostable", n)
			}
			return false, fmt.Sprintf("0F %02x is clear in twobyte_is_boostable", n)
		}
		switch o & 0xf0 {
		case 0x60:
			if o > 0x63 && o < 0x67 {
				continue
			}
			if o == 0x62 || o == 0x67 {
				return false, fmt.Sprintf("%02x: bound or address-size prefix", o)
			}
			return true, fmt.Sprintf("%02x: row 6x", o)
		case 0x70:
			return false, fmt.Sprintf("%02x: conditional jump", o)
		case 0xc0:
			if (o > 0xc1 && o < 0xcc) || o == 0xcf {
				return true, fmt.Sprintf("%02x: row Cx (C2-CB, CF)", o)
			}
			return false, fmt.Sprintf("%02x: Grp2 or software interrupt", o)
		case 0xd0:
			if o == 0xd4 || o == 0xd5 || o == 0xd7 {
				return true, fmt.Sprintf("%02x: AAM/AAD/XLAT", o)
			}
			return false, fmt.Sprintf("%02x: Grp2, reserved or x87", o)
		case 0xe0:
			if o&0x04 != 0 || o == 0xea {
				return true, fmt.Sprintf("%02x: in/out or far jmp", o)
			}
			return false, fmt.Sprintf("%02x: loop/jcxz, call or relative jmp", o)
		case 0xf0:
			if o&0x0c == 0 && o != 0xf1 {
				continue
			}
			if o == 0xf5 || (o > 0xf7 && o < 0xfe) {
				return true, fmt.Sprintf("%02x: cmc/clc/stc/cli/sti/cld/std", o)
			}
			return false, fmt.Sprintf("%02x: hlt, int1, Grp3, Grp4 or Grp5", o)
		default:
			if o == 0x26 || o == 0x36 || o == 0x3e {
				continue
			}
			if o == 0x2e || o == 0x9a {
				return false, fmt.Sprintf("%02x: CS override or far call", o)
			}
			return true, fmt.Sprintf("%02x: other one-byte opcode", o)
		}
	}
}

// twobyteBoostable2006 is the April 2006 table: 6.1's without 0F 1F.
var twobyteBoostable2006 = func() bitmap256 {
	m := twobyteBoostable61
	m[1] &^= 1 << 15
	return m
}()

// classify2006 predicts the steady state: what later hits do.
func classify2006(c *cls) {
	pr, env, d := c.pr, c.env, c.d
	cfg := env.Config
	if env.Sites != nil {
		if hit, known := env.Sites.Text(pr.addr); known && !hit {
			c.reject(rB6Text, EINVAL, "")
			return
		}
		if kind, hit, _ := env.Sites.Blacklisted(pr.addr); hit && kind == BlacklistKprobes {
			c.reject(rBlKprobes, EINVAL, "")
			return
		}
	}
	if pr.boundary == 0 {
		c.step(rB6NoCheck, Note, "")
	}
	k := pr.k
	if k == nil {
		// 2.6.17 copies 16 bytes without decoding: the probe is accepted and the
		// bytes single-stepped; the outcome is whatever the CPU does with them.
		d.Verdict = SingleStep
		c.step(rB6Step, Decides, c.detailf("bytes do not decode (%v): single-stepped as is", pr.decErr))
		return
	}
	raw := k.in.Bytes()
	d.Len = k.in.Len
	b := NewBooster2006(raw, pr.addr, env.SlotAddr)
	d.CanBoost = b.State == BoostCandidate
	if b.State == BoostCandidate {
		c.step(rB6CanBoost, Pass, c.detailf("can_boost: %s", b.Rule))
	} else {
		c.step(rB6CanBoost, Fail, c.detailf("can_boost: %s", b.Rule))
	}
	// First hit: single-step; straight-line code leaves IP at slot+len.
	b.AfterStep(uint64(k.in.Len))
	n := copy(d.Slot[:], raw)
	d.SlotLen = n
	switch {
	case b.State != BoostOn:
		if b.State == BoostNever && d.CanBoost {
			c.step(rB6Length, Fail, c.detailf("(len %d) + 5 >= 16", k.in.Len))
		} else if op := raw[0]; op == 0x9a || (op == 0xff && raw[1]&0x30 == 0x10) {
			c.step(rB6NoChange, Fail, "")
		}
		d.Verdict = SingleStep
		c.step(rB6Step, Decides, "")
		return
	case cfg.Preemption:
		c.step(rB6Preempt, Fail, "")
		d.Verdict = SingleStep
		c.step(rB6Step, Decides, "")
		return
	case cfg.PostHandler:
		c.step(rB6PostH, Fail, "")
		d.Verdict = SingleStep
		c.step(rB6Step, Decides, "")
		return
	}
	d.Verdict = Boost
	if b.JmpAt < 0 {
		// ret/iret/far jmp/jmp indirect: boosted with no jmp back.
		c.step(rB6Resume, Decides, "")
		return
	}
	writeRel32(d.Slot[b.JmpAt:], env.SlotAddr+uint64(b.JmpAt), pr.addr+uint64(b.JmpAt))
	d.SlotLen = b.JmpAt + 5
	c.step(rB6Lazy, Decides, "")
}
