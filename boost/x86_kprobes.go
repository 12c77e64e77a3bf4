package boost

import (
	"github.com/kboost/kboost/decode"
)

// linuxVersion holds what differs between the modelled 6.x kernels.
type linuxVersion struct {
	// canProbeInsn: can_probe also decodes the probed instruction and refuses
	// INT/UD (6.9, in 6.12); a decode failure there is EILSEQ.
	canProbeInsn bool
}

// classify is classifyLinux for version v: a policy's classify function.
func (v linuxVersion) classify(c *cls) { classifyLinux(c, v) }

var linux61 = &Policy{
	Name:   "linux-6.1",
	Title:  "Linux 6.1 kprobes on x86-64 and i386 (int3 + emulation + boost, optprobes)",
	Source: "Debian linux-source-6.1 (6.1.x): arch/x86/kernel/kprobes/{core,opt,ftrace}.c, kernel/kprobes.c, kernel/trace/trace_kprobe.c, arch/x86/lib/insn.c",
	Modes:  []decode.Mode{decode.Mode64, decode.Mode32},
	// Debian bookworm amd64: PREEMPT_DYNAMIC, RETPOLINE, no IBT.
	Defaults:      debian61,
	MaxInsnSize:   15,
	CheckBoundary: true,
	FtraceEntry:   true,
	Optprobes:     true,
	classify:      linuxVersion{}.classify,
	canBoost:      canBoost61,
	indirectRule: func(cfg Config) (bool, bool) {
		return true, cfg.Retpoline
	},
}

// linux612 is linux-6.1 plus the rules that changed by Debian's 6.12.117
// (upstream 6.6-6.10; kernel-evolution.md): can_boost judges Grp2/3/4/5 by
// ModRM.reg, can_probe refuses INT/UD (is_exception_insn), can_optimize skips
// the indirect-jump test with MITIGATION_RETPOLINE or IBT, and the decoder knows
// REX2, EVEX map 4 (APX) and VEX map 7 and a grown opcode map (kdec612).
var linux612 = &Policy{
	Name:          "linux-6.12",
	Title:         "Linux 6.12 kprobes on x86-64 and i386: 6.1 plus can_boost group refinements, INT/UD refusal, REX2/APX decoding",
	Source:        "Debian linux-source-6.12 (6.12.117): arch/x86/kernel/kprobes/{core,opt}.c (can_boost Grp2/3/4/5 by ModRM.reg, can_probe is_exception_insn, can_optimize without the indirect-jump test under MITIGATION_RETPOLINE/IBT), arch/x86/lib/insn.c (REX2, EVEX map 4)",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	Defaults:      debian612,
	MaxInsnSize:   15,
	CheckBoundary: true,
	FtraceEntry:   true,
	Optprobes:     true,
	classify:      linuxVersion{canProbeInsn: true}.classify,
	canBoost:      canBoost612,
	dec:           kdec612,
	indirectRule: func(cfg Config) (bool, bool) {
		return !cfg.Retpoline && !cfg.IBT, false
	},
}

// linux72 is linux-6.12 with Debian 7.2.13's decoder (kdec72): AMD XOP
// decoded (upstream 6.18) and the INAT_INV64 opcodes 82, 9A, D4, EA one byte
// long in 64-bit mode (upstream 6.16). The decision code in core.c and opt.c
// is 6.12's (kernel-evolution.md 2.1-2.4: renames, the CS call fix in the hit
// path only); boosting cannot be configured on any x86 7.x kernel (PREEMPTION).
// Its sealed-ENDBR poison is 0f 1f 40 d6 (is_endbr takes that one, not 6.x's).
var linux72 = &Policy{
	Name:          "linux-7.2",
	Title:         "Linux 7.2 kprobes on x86-64 and i386: linux-6.12 plus XOP decoding and i64 opcodes stopping at the opcode",
	Source:        "Debian linux-source-7.2 (7.2.13, unstable): arch/x86/kernel/kprobes/{core,opt}.c, arch/x86/lib/insn.c (XOP, INAT_INV64)",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	Defaults:      debian612,
	MaxInsnSize:   15,
	CheckBoundary: true,
	FtraceEntry:   true,
	Optprobes:     true,
	classify:      linux612.classify,
	canBoost:      canBoost612,
	dec:           kdec72,
	indirectRule:  linux612.indirectRule,
	endbrPoison:   endbrPoison72,
}

// classifyLinux follows register_kprobe() (reached through kprobe_events or perf):
// trace_kprobe notrace check, check_kprobe_address_safe(), prepare_kprobe() ->
// arch_prepare_kprobe(): can_probe, __copy_instruction, prepare_emulation,
// prepare_singlestep.
func classifyLinux(c *cls, v linuxVersion) {
	pr, env, d := c.pr, c.env, c.d
	cfg := env.Config
	sites := env.Sites
	a := pr.addr

	// __register_trace_kprobe: within_notrace_func.
	if cfg.DynamicFtrace && !cfg.KprobeEventsOnNotrace && !cfg.DirectRegister {
		switch pr.notrace {
		case 1:
			if pr.notraceI {
				c.reject(rNotrace, EINVAL, "the function has no fentry site at its entry (notrace; inferred from its bytes): EINVAL")
			} else {
				c.reject(rNotrace, EINVAL, "")
			}
			return
		case -1:
			c.step(rNotrace, Unknown, "no ftrace table (and Env.InferNotrace off or no function context): assumed traceable")
		default:
			c.step(rNotrace, Pass, "the function has an ftrace location")
		}
	}

	// check_ftrace_location.
	isFtrace := false
	switch pr.ftrace {
	case 1:
		if !cfg.KprobesOnFtrace {
			c.reject(rFtraceNoKOF, EINVAL, "")
			return
		}
		isFtrace = true
		c.step(rFtraceLoc, Pass, "ftrace location: the probe will be ftrace-based")
	case 0:
		c.step(rFtraceLoc, Pass, "not an ftrace location")
	default:
		c.step(rFtraceLoc, Unknown, "no ftrace table: assumed not an ftrace location")
	}

	// check_kprobe_address_safe.
	if sites != nil {
		if hit, known := sites.Text(a); known && !hit {
			if ih, ik := sites.InitText(a); ik && ih {
				c.reject(rInitText, EINVAL, "")
			} else {
				c.reject(rNotText, EINVAL, "")
			}
			return
		}
		if hit, known := sites.InitText(a); known && hit {
			c.reject(rInitText, EINVAL, "")
			return
		}
		kind, hit, known := sites.Blacklisted(a)
		switch {
		case hit:
			c.reject(blacklistRule(kind), EINVAL, "")
			return
		case known:
			c.step(rBlAny, Pass, "not blacklisted")
		default:
			c.step(rBlAny, Unknown, "no blacklist table: assumed not blacklisted")
		}
		if rejectSite(c, sites.JumpLabel, Span{a, a + 1}, rJumpLbl) ||
			rejectSite(c, sites.StaticCall, Span{a, a + 1}, rStatCall) ||
			rejectSite(c, func(s Span) (bool, bool) { return sites.Bug(s.Start) }, Span{a, a + 1}, rBug) {
			return
		}
	} else {
		c.step(rBlAny, Unknown, "no site tables: blacklist, jump-label, static-call and BUG sites assumed absent")
	}
	if pr.cfi {
		c.reject(rCFI, EINVAL, "")
		return
	}

	// prepare_kprobe: ftrace-based probes stop here.
	if isFtrace {
		d.Verdict = Ftrace
		c.step(rFtracePrep, Decides, "")
		if pr.k != nil {
			d.CanBoost = false
		}
		return
	}

	// arch_prepare_kprobe: alternatives_text_reserved(addr, addr) can never match
	// (exclusive end), whatever the tables say.
	if cfg.SMP && cfg.UPLocks && c.explain {
		c.step(rSMPLock, Pass, "alternatives_text_reserved(addr, addr): the range [addr, addr) is empty, so no lock site matches")
	}

	// can_probe.
	switch {
	case pr.walkFail:
		c.reject(rProbeDecode, EILSEQ, "")
		return
	case pr.boundary == 0:
		c.reject(rBoundary, EILSEQ, "")
		return
	case pr.boundary < 0:
		c.step(rBoundary, Unknown, "no function context: assumed an instruction boundary")
	default:
		c.step(rBoundary, Pass, "an instruction boundary")
	}
	k := pr.k
	if v.canProbeInsn {
		if k == nil {
			c.reject(rProbeDecodeAt, EILSEQ, c.detailf("decode: %v", pr.decErr))
			return
		}
		if k.isException() {
			c.reject(rIntUD, EILSEQ, "")
			return
		}
		c.step(rIntUD, Pass, "not INT/UD")
	}

	// __copy_instruction.
	if k == nil {
		c.reject(rCopyDecode, EINVAL, c.detailf("decode: %v", pr.decErr))
		return
	}
	d.Len = k.length
	if k.vex && c.explain {
		c.step(rDecodeVEX, Note, c.detailf("%v instruction judged by opcode byte 0x%02x", k.in.Enc, k.op[0]))
	}
	if k.rex2 && c.explain {
		c.step(rDecodeREX2, Note, c.detailf("REX2 instruction judged by opcode byte 0x%02x", k.op[0]))
	}
	if k.emu > 0 {
		c.reject(rEmuPrefix, EINVAL, "")
		return
	}
	if k.isInt3() {
		c.reject(rCopyInt3, EINVAL, "")
		return
	}
	if k.maskingException() {
		c.reject(rMasking, EINVAL, c.detailf("opcode 0x%02x%s: insn_masking_exception() is true", k.op[0], map[bool]string{true: " /2 (mov to SS)", false: ""}[k.op[0] == 0x8e]))
		return
	}
	var slotDisp int64
	rip := k.ripRel()
	if rip {
		if env.SlotAddr != 0 {
			nd := int64(a + uint64(k.in.Disp) - env.SlotAddr)
			if int64(int32(nd)) != nd {
				c.reject(rRIPOverflow, EINVAL, c.detailf("new displacement %#x does not fit s32 (slot %#x)", nd, env.SlotAddr))
				return
			}
			slotDisp = nd
			c.step(rRIPRebase, Pass, c.detailf("displacement %#x rebased to %#x for slot %#x", k.in.Disp, nd, env.SlotAddr))
		} else {
			slotDisp = k.in.Disp
			c.step(rRIPOverflow, Unknown, "slot address unknown: assumed within +-2 GiB (module area)")
		}
	}

	// prepare_emulation.
	if !prepareEmulation(c, k) {
		return
	}

	// prepare_singlestep: !PREEMPTION && !post_handler && can_boost && len <= 10.
	d.CanBoost = c.p.canBoost(nil, k, a, env)
	boost := false
	switch {
	case cfg.Preemption:
		c.step(rPreempt, Fail, "")
		if c.explain {
			c.canBoostNote(k, a)
		}
	case cfg.PostHandler:
		c.step(rPostH, Fail, "")
		if c.explain {
			c.canBoostNote(k, a)
		}
	case !c.p.canBoost(c, k, a, env):
	case c.p.MaxInsnSize-k.length < 5:
		c.step(rLength, Fail, c.detailf("length %d > 10", k.length))
	default:
		boost = true
	}
	n := k.raw(d.Slot[:])
	if rip {
		off := k.emu + k.in.DispOff
		u := uint32(int32(slotDisp))
		d.Slot[off], d.Slot[off+1], d.Slot[off+2], d.Slot[off+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
	}
	if boost {
		writeRel32(d.Slot[n:], env.SlotAddr+uint64(n), a+uint64(k.length))
		d.SlotLen = n + 5
		d.Verdict = Boost
		c.step(rBoost, Decides, "")
		return
	}
	if c.p.MaxInsnSize-k.length < 1 {
		c.reject(rENOSPC, ENOSPC, "")
		return
	}
	d.Slot[n] = 0xcc
	d.SlotLen = n + 1
	if d.Emulated {
		d.Verdict = Emulate
		c.step(rEmulated, Decides, "")
		return
	}
	d.Verdict = SingleStep
	c.step(rInt3Slot, Decides, "")
}

// canBoostNote records, as a note, what can_boost would have said.
func (c *cls) canBoostNote(k *kinsn, a uint64) {
	sub := &cls{p: c.p, env: c.env, pr: c.pr, d: &Decision{}, explain: true}
	ok := c.p.canBoost(sub, k, a, c.env)
	for _, s := range sub.steps {
		if s.Outcome == Fail || (ok && s.Rule == rCBOK.ID) {
			c.steps = append(c.steps, Step{Rule: s.Rule, Outcome: Note, Text: "not evaluated by the kernel here; would say: " + s.Text})
		}
	}
}

// prepareEmulation is prepare_emulation(); false when it rejects.
func prepareEmulation(c *cls, k *kinsn) bool {
	d := c.d
	emu := func(r *rule) bool {
		d.Emulated = true
		c.step(r, Pass, "")
		return true
	}
	switch o := k.op[0]; {
	case o == 0xfa || o == 0xfb || o == 0x9c || o == 0x9d:
		return emu(rEmIF)
	case o == 0xc2 || o == 0xc3 || o == 0xca || o == 0xcb:
		return emu(rEmRet)
	case o == 0x9a || o == 0xea:
		c.reject(rEmFar, EOPNOTSUPP, "")
		return false
	case o == 0xcc:
		c.reject(rEmInt3, EOPNOTSUPP, "")
		return false
	case o == 0xcf:
		c.reject(rEmIret, EOPNOTSUPP, "")
		return false
	case o == 0xe8:
		return emu(rEmCall)
	case o == 0xe9 || o == 0xeb:
		return emu(rEmJmp)
	case o >= 0x70 && o <= 0x7f:
		return emu(rEmJcc)
	case o == 0x0f:
		o2 := k.op[1]
		if o2&0xf0 == 0x80 {
			return emu(rEmJcc)
		}
		if o2 == 0x01 && k.reg() == 0 && k.mod() == 3 {
			c.reject(rEmVMX, EOPNOTSUPP, "")
			return false
		}
	case o >= 0xe0 && o <= 0xe3:
		return emu(rEmLoop)
	case o == 0xff:
		m := k.modrm
		var r *rule
		switch {
		case m&0x30 == 0x10:
			if m&0x08 != 0 {
				c.reject(rEmFarInd, EOPNOTSUPP, "FF /3 (far call indirect): EOPNOTSUPP")
				return false
			}
			r = rEmCallInd
		case m&0x30 == 0x20:
			if m&0x08 != 0 {
				c.reject(rEmFarInd, EOPNOTSUPP, "FF /5 (far jmp indirect): EOPNOTSUPP")
				return false
			}
			r = rEmJmpInd
		default:
			return true
		}
		long := 8
		if k.in.Mode == decode.Mode32 {
			long = 4
		}
		if k.abytes != long {
			c.reject(rEmIndSize, EOPNOTSUPP, "")
			return false
		}
		if k.mod() != 3 {
			c.reject(rEmIndMem, EOPNOTSUPP, "")
			return false
		}
		return emu(r)
	}
	return true
}

// canBoost61 is 6.1's can_boost(insn, addr).
func canBoost61(c *cls, k *kinsn, a uint64, env *Env) bool {
	if !cbCommon(c, k, a, env) {
		return false
	}
	if k.nop == 2 || k.nop != 1 {
		return cbBitmapOr3(c, k)
	}
	o := k.op[0]
	if notBoostable61[o] {
		c.step(rCB1Byte, Fail, c.detailf("one-byte opcode 0x%02x is on can_boost's not-boostable list", o))
		return false
	}
	if o == 0xff {
		if k.reg() != 4 {
			c.step(rCBGrp5, Fail, c.detailf("FF /%d: only FF /4 is boostable", k.reg()))
			return false
		}
		c.step(rCBGrp5, Pass, "FF /4 (jmp indirect) is boostable")
	}
	c.step(rCBOK, Pass, "")
	return true
}

// canBoost612 is 6.12's can_boost() (upstream 6.9): groups judged by ModRM.reg.
func canBoost612(c *cls, k *kinsn, a uint64, env *Env) bool {
	if !cbCommon(c, k, a, env) {
		return false
	}
	if k.nop == 2 || k.nop != 1 {
		return cbBitmapOr3(c, k)
	}
	o, reg := k.op[0], k.reg()
	switch {
	case o == 0xc0 || o == 0xc1 || (o >= 0xd0 && o <= 0xd3):
		if reg == 6 {
			c.step(rCBGrp2, Fail, c.detailf("Grp2 %02x /6 (reserved on Intel, SAL on AMD)", o))
			return false
		}
		c.step(rCBGrp2, Pass, "")
	case o == 0xf6 || o == 0xf7:
		if reg == 1 {
			c.step(rCBGrp3, Fail, c.detailf("Grp3 %02x /1 (reserved on Intel, TEST on AMD)", o))
			return false
		}
		c.step(rCBGrp3, Pass, "")
	case o == 0xfe:
		if reg > 1 {
			c.step(rCBGrp4, Fail, c.detailf("FE /%d: only inc/dec are boostable", reg))
			return false
		}
		c.step(rCBGrp4, Pass, "")
	case o == 0xff:
		if reg != 0 && reg != 1 && reg != 4 {
			c.step(rCBGrp5, Fail, c.detailf("FF /%d: only /0 /1 /4 are boostable", reg))
			return false
		}
		c.step(rCBGrp5, Pass, "")
	case notBoostable612[o]:
		c.step(rCB1Byte, Fail, c.detailf("one-byte opcode 0x%02x is on can_boost's not-boostable list", o))
		return false
	}
	c.step(rCBOK, Pass, "")
	return true
}

// cbCommon: the exception-table test, then (for one-byte opcodes) the prefix test.
func cbCommon(c *cls, k *kinsn, a uint64, env *Env) bool {
	if env != nil && env.Sites != nil {
		hit, known := env.Sites.ExTable(Span{a, a + 1})
		switch {
		case hit:
			c.step(rCBExTable, Fail, "")
			return false
		case !known:
			c.step(rCBExTable, Unknown, "no exception table: assumed absent")
		}
	} else {
		c.step(rCBExTable, Unknown, "no exception table: assumed absent")
	}
	if k.nop == 1 && k.in.Prefixes&(decode.PfxCS|decode.PfxAddr) != 0 {
		c.step(rCBPrefix, Fail, c.detailf("prefixes %v include 2E or 67", k.in.Prefixes))
		return false
	}
	return true
}

func cbBitmapOr3(c *cls, k *kinsn) bool {
	if k.nop == 2 {
		ok := twobyteBoostable61.has(k.op[1])
		if ok {
			c.step(rCB2Byte, Pass, c.detailf("0F %02x is set in twobyte_is_boostable", k.op[1]))
		} else {
			c.step(rCB2Byte, Fail, c.detailf("0F %02x is clear in twobyte_is_boostable", k.op[1]))
		}
		return ok
	}
	c.step(rCB3Byte, Fail, c.detailf("opcode %02x %02x %02x has %d bytes", k.op[0], k.op[1], k.op[2], k.nop))
	return false
}

// bitmap256 is a 256-bit opcode set, written as 16 rows of 16 bits like the
// kernel's W() tables: row r, bit b is opcode r*16+b.
type bitmap256 [16]uint16

func (m *bitmap256) has(o byte) bool { return m[o>>4]&(1<<(o&15)) != 0 }

// rows builds a bitmap from 16 strings of 16 '0'/'1' characters (column 0 first),
// the layout of the kernel's tables.
func rows(r [16]string) (m bitmap256) {
	for i, s := range r {
		if len(s) != 16 {
			panic("boost: bad bitmap row " + s)
		}
		for j := 0; j < 16; j++ {
			if s[j] == '1' {
				m[i] |= 1 << j
			}
		}
	}
	return m
}

// twobyteBoostable61 is twobyte_is_boostable[] of 6.1 core.c.
var twobyteBoostable61 = rows([16]string{
	/* 00 */ "0011001011000000",
	/* 10 */ "0000000000000001",
	/* 20 */ "1111000000000000",
	/* 30 */ "0100000000000000",
	/* 40 */ "1111111111111111",
	/* 50 */ "0000000000000000",
	/* 60 */ "1111111111110011",
	/* 70 */ "0000111100000011",
	/* 80 */ "0000000000000000",
	/* 90 */ "1111111111111111",
	/* a0 */ "1101110011011101",
	/* b0 */ "1111111100011111",
	/* c0 */ "1100000011111111",
	/* d0 */ "0111010011011101",
	/* e0 */ "0110010011011101",
	/* f0 */ "0111010011101110",
})

func opSet(ranges ...[2]byte) (s [256]bool) {
	for _, r := range ranges {
		for o := int(r[0]); o <= int(r[1]); o++ {
			s[o] = true
		}
	}
	return s
}

// notBoostable61 is 6.1 can_boost()'s switch list of one-byte opcodes.
var notBoostable61 = opSet([2]byte{0x62, 0x62}, [2]byte{0x70, 0x7f}, [2]byte{0x9a, 0x9a},
	[2]byte{0xc0, 0xc1}, [2]byte{0xcc, 0xce}, [2]byte{0xd0, 0xd3}, [2]byte{0xd6, 0xd6},
	[2]byte{0xd8, 0xdf}, [2]byte{0xe0, 0xe3}, [2]byte{0xe8, 0xe9}, [2]byte{0xeb, 0xeb},
	[2]byte{0xf0, 0xf4}, [2]byte{0xf6, 0xf7}, [2]byte{0xfe, 0xfe})

// notBoostable612 is 6.12's list without the groups (handled by ModRM.reg).
var notBoostable612 = opSet([2]byte{0x62, 0x62}, [2]byte{0x70, 0x7f}, [2]byte{0x9a, 0x9a},
	[2]byte{0xcc, 0xce}, [2]byte{0xd6, 0xd6}, [2]byte{0xd8, 0xdf}, [2]byte{0xe0, 0xe3},
	[2]byte{0xe8, 0xe9}, [2]byte{0xeb, 0xeb}, [2]byte{0xf0, 0xf4})
