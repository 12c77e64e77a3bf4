package boost

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kboost/kboost/decode"
)

// ARM64 policies: linux-6.1-arm64 (kprobes, arch/arm64/kernel/probes/ of Linux
// 6.1), uprobes-arm64 (arch_uprobe_analyze_insn) and boost-arm64 (a model, not a
// kernel: the 6.1 kprobe rules plus a branch back from the slot for PC-free
// instructions, with the kernel's mask gaps closed). Every decision is a
// function of the raw A64 word (decode.Inst.Word), through the kernel's own
// masks in a64_insn.go.

// debianARM64 is Debian bookworm's arm64 6.1 configuration (config-6.1.0-50-arm64
// of linux-image-6.1.0-50-arm64): DYNAMIC_FTRACE_WITH_REGS (the
// -fpatchable-function-entry=2 site), SMP, PREEMPT_VOLUNTARY (no PREEMPTION),
// no ARM64_BTI_KERNEL. arm64 6.1 has no KPROBES_ON_FTRACE and no OPTPROBES.
var debianARM64 = Config{DynamicFtrace: true, SMP: true}

// a64Kprobes is an arm64 kprobe policy: BRK at the address and, for a word the
// kernel steps, a slot of MAX_INSN_SIZE = 2 words; k is the kernel's probe
// decoding (nil: 6.1's); boostModel: the boost-arm64 model after the decode.
func a64Kprobes(name string, defaults Config, k *a64Kernel, boostModel bool, title, source string) *Policy {
	p := a64Policy(name, k, title, source)
	p.Defaults = defaults
	p.MaxInsnSize = 8
	p.FtraceEntry = true
	p.classify = func(c *cls) { classifyA64Kprobe(c, boostModel) }
	return p
}

// a64Uprobes is an arm64 uprobe policy: the word stepped in an XOL slot of
// UPROBE_XOL_SLOT_BYTES (4), with k's probe decoding (nil: 6.1's).
func a64Uprobes(name string, k *a64Kernel, title, source string) *Policy {
	p := a64Policy(name, k, title, source)
	p.MaxInsnSize = 4
	p.user = true
	p.classify = classifyA64Uprobe
	return p
}

// a64Policy is what every arm64 policy shares: A64 words, a boundary check
// (word alignment), no x86 boosting or optprobes, the fixed-width audit.
func a64Policy(name string, k *a64Kernel, title, source string) *Policy {
	return &Policy{Name: name, Title: title, Source: source, Modes: []decode.Mode{decode.ModeA64}, CheckBoundary: true, a64: k,
		canBoost: neverBoosts, indirectRule: noIndirectRule, audit: auditA64, explainAt: explainAtA64}
}

var linux61ARM64 = a64Kprobes("linux-6.1-arm64", debianARM64, nil, false,
	"Linux 6.1 kprobes on arm64 (BRK + single-step slot [insn, BRK #6], simulation, no boosting, no optprobes)",
	"Debian linux-source-6.1: arch/arm64/kernel/probes/{kprobes,decode-insn}.c, arch/arm64/lib/insn.c, arch/arm64/include/asm/insn.h, kernel/kprobes.c, kernel/trace/ftrace.c")

var uprobesARM64 = a64Uprobes("uprobes-arm64", nil,
	"arm64 uprobes (user space): arm_probe_decode_insn, simulation, XOL hardware single-step (AArch32 tasks, not modelled, get EOPNOTSUPP)",
	"Debian linux-source-6.1: arch/arm64/kernel/probes/uprobes.c (arch_uprobe_analyze_insn), decode-insn.c, kernel/events/uprobes.c (prepare_uprobe)")

// debianARM64612 is Debian's arm64 6.12 configuration as far as these rules go
// (kernel-evolution.md did not collect the arm64 configs: assumed as 6.1).
var debianARM64612 = debianARM64

// linux612ARM64 and uprobes612ARM64 are the 6.1 policies with the rules Debian's
// 6.12.117 changed (a64K612): MOPS refused, hinted BC.cond simulated.
var linux612ARM64 = a64Kprobes("linux-6.12-arm64", debianARM64612, a64K612, false,
	"Linux 6.12 kprobes on arm64: 6.1 plus MOPS refused and hinted BC.cond simulated",
	"Debian linux-source-6.12 (6.12.117): arch/arm64/kernel/probes/decode-insn.c, arch/arm64/include/asm/insn.h (mops, bcond 0xFF000000)")

var uprobes612ARM64 = a64Uprobes("uprobes-6.12-arm64", a64K612,
	"arm64 uprobes of Linux 6.12: uprobes-arm64 plus MOPS refused and hinted BC.cond simulated",
	"Debian linux-source-6.12 (6.12.117): arch/arm64/kernel/probes/uprobes.c, decode-insn.c, arch/arm64/include/asm/insn.h")

// uprobes618ARM64 is uprobes-6.12-arm64 with 6.18.0's code (a64K618): NOP
// simulated (6.13), RET with a handler of its own (6.18), and the hinted
// BC.cond stepped again (6.18.0's B.cond mask is 6.1's 0xFF000010; Debian's
// 6.12.117 simulates it). No Debian suite carries linux-source-6.18
// (trixie-backports, forky, sid and experimental have 7.2 and 7.3): it is
// checked against testdata/linux-6.18-arm64.golden, compiled from 6.18.0's
// files fetched by hand.
var uprobes618ARM64 = a64Uprobes("uprobes-6.18-arm64", a64K618,
	"arm64 uprobes of Linux 6.18: uprobes-6.12-arm64 plus NOP simulated and RET split from BR/BLR, hinted BC.cond stepped (B.cond mask 0xFF000010)",
	"Linux 6.18.0 (no Debian source; files fetched by hand, see testdata/linux-6.18-arm64.golden): arch/arm64/kernel/probes/decode-insn.c (simulate_nop; simulate_ret, 47687aa4d9c9), arch/arm64/include/asm/insn.h (bcond 0xFF000010), uprobes.c")

// linux72ARM64 and uprobes72ARM64 add Debian 7.2.13's changes to 6.12 (a64K72):
// NOP simulated, RET and BR/BLR with handlers of their own, and the exclusive
// masks of the atomic back-scan with bit 23 (LDAR/STLR no longer count), as
// 6.18.0 has them; unlike 6.18.0, the hinted BC.cond simulated (B.cond mask
// 0xFF000000, as in 6.12.117).
var linux72ARM64 = a64Kprobes("linux-7.2-arm64", debianARM64612, a64K72, false,
	"Linux 7.2 kprobes on arm64: linux-6.12-arm64 plus NOP simulated, RET split from BR/BLR, exclusive masks fixed",
	"Debian linux-source-7.2 (7.2.13, unstable): arch/arm64/kernel/probes/decode-insn.c, arch/arm64/include/asm/insn.h (load_ex/store_ex 0x3FC00000)")

var uprobes72ARM64 = a64Uprobes("uprobes-7.2-arm64", a64K72,
	"arm64 uprobes of Linux 7.2: uprobes-6.18-arm64 with the hinted BC.cond simulated (B.cond mask 0xFF000000)",
	"Debian linux-source-7.2 (7.2.13, unstable): arch/arm64/kernel/probes/uprobes.c, decode-insn.c")

var boostARM64 = a64Kprobes("boost-arm64", debianARM64, nil, true,
	"model: arm64 kprobes (6.1 rules) with PC-free steppable instructions boosted: slot [insn, B addr+4] (+-128 MiB), kernel mask gaps closed",
	"kboost model on top of linux-6.1-arm64; gaps from comparing aarch64_insn_is_steppable() with the A64 encoding space (Arm ARM), BC.cond as Linux 6.12 simulates it, MOPS as 6.12 refuses it")

func init() {
	readers[decode.ModeA64] = func(pr *probe, dst *decode.Inst, b []byte, addr uint64, _ decode.Mode) { pr.readA64(dst, b, addr) }
}

// readA64 fills the probe's instruction word from the bytes at addr, as the
// kernel reads it (le32_to_cpu(*addr)): any four bytes are a word, allocated or
// not; fewer than four: no word. dst gets package decode's view for display.
func (pr *probe) readA64(dst *decode.Inst, b []byte, addr uint64) {
	err := decode.ARM64.Decode(dst, b, addr)
	pr.decErr = err // with a word: package decode's opinion (boost-arm64 refuses unallocated words)
	if len(b) < 4 {
		return
	}
	pr.a64, pr.word = true, binary.LittleEndian.Uint32(b)
}

// putA64 writes words little-endian into the decision's slot image.
func putA64(d *Decision, words ...uint32) {
	for i, w := range words {
		binary.LittleEndian.PutUint32(d.Slot[4*i:], w)
	}
	d.SlotLen = 4 * len(words)
}

// a64ExceptionStateReg reports whether sysreg (aarch64_insn_extract_system_reg
// form) is written by taking an exception to EL1 or EL2: ELR, SPSR, ESR, FAR
// (with VHE the _EL1 names reach the _EL2 registers).
func a64ExceptionStateReg(sr uint32) bool {
	switch sr {
	case 0xC201, 0xC200, 0xC290, 0xC300, // ELR_EL1, SPSR_EL1, ESR_EL1, FAR_EL1
		0xE201, 0xE200, 0xE290, 0xE300: // ELR_EL2, SPSR_EL2, ESR_EL2, FAR_EL2
		return true
	}
	return false
}

// a64BranchTo encodes B from `from` to `to` (both word-aligned); ok is false
// when the distance does not fit imm26 (+-128 MiB).
func a64BranchTo(from, to uint64) (uint32, bool) {
	delta := int64(to - from)
	ok := delta >= -a64BRange && delta < a64BRange
	return a64BOpcode | uint32(delta>>2)&a64BImmMask, ok
}

var a64SimRules = [numA64Sims]*rule{nil, rA64SimBCond, rA64SimCBZ, rA64SimTBZ, rA64SimADR, rA64SimBBL,
	rA64SimBR, rA64SimLDR, rA64SimLDRSW, rA64SimBRBLR, rA64SimRET, rA64SimNOP}

func a64StepRule(why a64StepWhy) *rule {
	switch why {
	case a64StepBranch:
		return rA64NSBranch
	case a64StepMSRImm:
		return rA64NSMSRImm
	case a64StepMSRReg:
		return rA64NSMSRReg
	case a64StepException:
		return rA64NSException
	case a64StepERET, a64StepERETAuth:
		return rA64NSERET
	case a64StepMRSDAIF:
		return rA64NSMRS
	case a64StepHintBad:
		return rA64NSHint
	case a64StepLiteral:
		return rA64NSLiteral
	case a64StepExclusive:
		return rA64NSExclusive
	case a64StepMOPS:
		return rA64NSMOPS
	}
	return rA64Steppable
}

// a64Address is register_kprobe's generic part on arm64 6.1 (no
// KPROBES_ON_FTRACE; CFI type-hash prefixes are not text).
var a64Address = addressRules{
	notraceUnknown: "no ftrace table (and Env.InferNotrace off or no function context): assumed traceable",
	ftraceReject:   "ftrace location (the patched BL of the -fpatchable-function-entry site): arm64 6.1 has no KPROBES_ON_FTRACE: EINVAL",
	ftracePass:     "not an ftrace location (ftrace_location(addr) != addr)",
	cfiPrefix:      true,
}

// classifyA64Kprobe follows register_kprobe() on arm64 6.1 and, for the boost
// model, decides boosting after the kernel's own decode.
func classifyA64Kprobe(c *cls, boostModel bool) {
	pr, env, d := c.pr, c.env, c.d
	if !addressSafe(c, &a64Address) {
		return
	}
	// arch_prepare_kprobe.
	if pr.addr&3 != 0 {
		c.reject(rA64Align, EINVAL, "")
		return
	}
	c.step(rA64Align, Pass, "4-byte aligned")
	if !pr.a64 {
		c.reject(rA64Read, EINVAL, c.detailf("no instruction word: %v", pr.decErr))
		return
	}
	d.Len = 4
	w := pr.word
	if env.Sites != nil {
		if hit, known := env.Sites.ExTable(Span{pr.addr, pr.addr + 1}); hit {
			c.reject(rA64ExTable, EINVAL, "")
			return
		} else if known {
			c.step(rA64ExTable, Pass, "no exception-table entry")
		} else {
			c.step(rA64ExTable, Unknown, "no exception table: assumed absent")
		}
	} else {
		c.step(rA64ExTable, Unknown, "no exception table: assumed absent")
	}

	// arm_kprobe_decode_insn.
	dec, sim, why := c.p.a64k().a64KprobeDecode(w)
	if c.explain {
		a64ExplainDecode(c, w, dec, sim, why, true)
	}
	if dec == a64Rejected {
		c.reject(a64StepRule(why), EINVAL, c.detailf("%08x: %s, and no simulation handles it: arm_probe_decode_insn() returns INSN_REJECTED: EINVAL", w, a64StepRule(why).Desc))
		return
	}
	switch pr.atomic {
	case 1:
		c.reject(rA64Atomic, EINVAL, c.detailf("a load-exclusive at +%#x precedes the probe with no store-exclusive between: EINVAL", pr.atomicOff))
		return
	case 0:
		c.step(rA64Atomic, Pass, "no load-exclusive before the probe within the scan window")
	default:
		c.step(rA64Atomic, Unknown, "no function context: the back-scan is assumed to find no load-exclusive")
	}
	if dec == a64GoodNoSlt {
		d.Verdict, d.Emulated = Emulate, true
		c.step(a64SimRules[sim], Decides, c.detailf("%08x: simulated by %s (no slot)", w, sim))
		return
	}
	if !boostModel {
		d.Verdict = SingleStep
		putA64(d, w, a64BrkKprobSS)
		c.step(rA64Slot, Decides, "")
		return
	}
	a64Boost(c, w)
}

// a64ExplainDecode records, in explain mode, the kernel's decode steps for w.
func a64ExplainDecode(c *cls, w uint32, dec a64Decode, sim a64Sim, why a64StepWhy, kprobe bool) {
	if kprobe {
		if sim == a64SimLDRLit || sim == a64SimLDRSWLit {
			return // decided by the simulation step
		}
		c.step(rA64SimLDR, Pass, "not LDR/LDRSW (literal)")
	}
	class := a64ClassOf(w)
	switch {
	case dec == a64Good:
		t := fmt.Sprintf("class %s: aarch64_insn_is_steppable() is true", class)
		switch why {
		case a64StepMRS:
			t = "MRS of a register other than DAIF: aarch64_insn_is_steppable() allows it"
		case a64StepHintOK:
			t = fmt.Sprintf("HINT #%d is on aarch64_insn_is_steppable_hint()'s allow-list", (w>>5)&0x7F)
		}
		c.step(rA64Steppable, Pass, t)
	case dec == a64GoodNoSlt:
		r := a64StepRule(why)
		c.step(r, Fail, fmt.Sprintf("class %s: %s", class, r.Desc))
	}
}

// a64Boost is the boost-arm64 model for a word the kernel would step in a slot.
func a64Boost(c *cls, w uint32) {
	pr, env, d := c.pr, c.env, c.d
	cfg := env.Config
	// The gaps: words aarch64_insn_is_steppable() lets through that must not run
	// from the slot without a trap at the original address.
	switch {
	case w&0xFF000010 == 0x54000010:
		d.Verdict, d.Emulated = Emulate, true
		c.step(rBGapBC, Decides, c.detailf("%08x: BC.cond (FEAT_HBC): 6.1's B.cond mask (0xFF000010) misses it and would step it in the slot, branching relative to the slot; simulated as B.cond (as Linux 6.12 does)", w))
		return
	case w&0x3F000000 == 0x1C000000:
		c.reject(rBGapFPLit, EINVAL, "")
		return
	case a64ClassOf(w) == a64ClsUnknown:
		t := ""
		if w>>16 == 0 {
			t = c.detailf("UDF #%#x: steppable for the kernel (class UNKNOWN is never tested); it would trap at the slot address instead of the probed one: refused", w&0xFFFF)
		}
		c.reject(rBGapUnalloc, EINVAL, t)
		return
	case a64ClassOf(w) == a64ClsBrSys && w>>24 != 0xD5:
		c.reject(rBGapBranch, EINVAL, c.detailf("%08x: in the branch/exception class but outside every mask the kernel tests (DRPS, unallocated branch encodings): refused", w))
		return
	case w&0x3B200C00 == 0x19000400:
		c.reject(rBGapMOPS, EINVAL, "")
		return
	case a64MRS.is(w) && a64ExceptionStateReg(a64SysReg(w)):
		c.reject(rBGapExcState, EINVAL, c.detailf("%08x: MRS of sysreg %#x: the BRK exception that enters the slot has overwritten it (ELR holds the slot address): refused", w, a64SysReg(w)))
		return
	case errors.Is(pr.decErr, decode.ErrInvalid):
		c.reject(rBGapUnalloc, EINVAL, c.detailf("%08x: unallocated in the A64 encoding tables (package decode): it would trap at the slot address: refused", w))
		return
	}
	c.step(rBPCFree, Pass, "")
	d.CanBoost = true
	switch {
	case cfg.Preemption:
		c.step(rBPreempt, Fail, "")
	case cfg.PostHandler:
		c.step(rBPostH, Fail, "")
	default:
		b, ok := a64BranchTo(env.SlotAddr+4, pr.addr+4)
		if env.SlotAddr != 0 && !ok {
			c.step(rBRange, Fail, c.detailf("slot %#x is %#x bytes from the probe: beyond B's +-128 MiB", env.SlotAddr, int64(pr.addr-env.SlotAddr)))
			break
		}
		d.Verdict = Boost
		putA64(d, w, b)
		c.step(rBBoost, Decides, "")
		return
	}
	d.Verdict = SingleStep
	putA64(d, w, a64BrkKprobSS)
	c.step(rA64Slot, Decides, "")
}

// classifyA64Uprobe follows prepare_uprobe() -> arch_uprobe_analyze_insn() on
// arm64 6.1.
func classifyA64Uprobe(c *cls) {
	pr, d := c.pr, c.d
	if !pr.a64 {
		c.reject(rUpA64Read, EINVAL, c.detailf("no instruction word: %v", pr.decErr))
		return
	}
	d.Len = 4
	w := pr.word
	if w == a64BrkUprobe {
		c.reject(rUpA64Trap, ENOTSUPP, "")
		return
	}
	c.step(rUpA64Trap, Pass, "not the uprobe breakpoint")
	if pr.addr&3 != 0 {
		c.reject(rUpA64Align, EINVAL, "")
		return
	}
	c.step(rUpA64Align, Pass, "4-byte aligned")
	dec, sim, why := c.p.a64k().a64ProbeDecode(w)
	if c.explain {
		a64ExplainDecode(c, w, dec, sim, why, false)
	}
	switch dec {
	case a64Rejected:
		r := a64StepRule(why)
		c.reject(r, EINVAL, c.detailf("%08x: %s, and arm_probe_decode_insn() simulates no such instruction for uprobes (LDR literal included): EINVAL", w, r.Desc))
	case a64GoodNoSlt:
		d.Verdict, d.Emulated = Emulate, true
		c.step(a64SimRules[sim], Decides, c.detailf("%08x: simulated by %s (arch_uprobe_skip_sstep)", w, sim))
	default:
		d.Verdict = SingleStep
		putA64(d, w)
		c.step(rUpA64XOL, Decides, "")
	}
}
