package boost

import (
	"bytes"

	"github.com/kboost/kboost/decode"
)

// x86 uprobes (arch/x86/kernel/uprobes.c): checked when the probe is installed
// into a process (ENOTSUPP = 524 from uprobe_register/enable), no
// instruction-boundary check, emulation of nop/jmp/call/jcc/push, otherwise a TF
// single-step in the XOL slot. uprobes-x86 is 6.1; the other versions are the
// rules that changed (uprobeVersion) and their decoder.

// uprobeVersion holds what differs between the modelled x86 uprobes kernels.
type uprobeVersion struct {
	// nops, when set, is the NOP test branch_setup_xol_ops() makes before its
	// opcode switch (emulated, 66 check skipped); 6.1 and 6.12 only know case
	// 0x90 inside the switch. keep90: that case is still there.
	nops   func(k *kinsn) bool
	nopR   *rule
	keep90 bool
	// opt5: 6.18's optimization of 5-byte NOPs after the acceptance checks;
	// opt10: 7.2's can_optimize() on the 10-byte NOP before them (it skips
	// uprobe_init_insn).
	opt5, opt10 bool
}

// classify is classifyUprobe for version v: a policy's classify function.
func (v uprobeVersion) classify(c *cls) { classifyUprobe(c, v) }

var uprobesX86 = &Policy{
	Name:          "uprobes-x86",
	Title:         "x86 uprobes of Linux 6.1 (user space): good-instruction tables, emulated nop/jmp/call/jcc/push, XOL single-step",
	Source:        "Debian linux-source-6.1 arch/x86/kernel/uprobes.c (uprobe_init_insn, branch_setup_xol_ops, push_setup_xol_ops, arch_uprobe_analyze_insn)",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	Defaults:      Config{},
	MaxInsnSize:   16, // MAX_UINSN_BYTES
	CheckBoundary: false,
	classify:      uprobeVersion{keep90: true}.classify,
	canBoost:      neverBoosts,
}

// uprobes612: the decision code of 6.12.117 is 6.1's line for line (the
// uretprobe syscall trampoline changes the return path only); its decoder is
// 6.12's (REX2, the grown 0F 38 map).
var uprobes612 = &Policy{
	Name:          "uprobes-6.12",
	Title:         "x86 uprobes of Linux 6.12: uprobes-x86 with the 6.12 decoder (REX2/APX, new VEX/EVEX rows)",
	Source:        "Debian linux-source-6.12 (6.12.117): arch/x86/kernel/uprobes.c (unchanged decision code), arch/x86/lib/insn.c and x86-opcode-map.txt",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	MaxInsnSize:   16,
	CheckBoundary: false,
	dec:           kdec612,
	classify:      uprobesX86.classify,
	canBoost:      uprobesX86.canBoost,
}

// uprobes618 has no Debian source package: it is modelled from the upstream
// 6.18 merge (optimized uprobes on 5-byte NOPs, XOP decoding, INAT_INV64 from
// 6.16) and from this project's host kernel 6.18.44, which the uprobe live
// tests and boost/testdata/uprobes-x86-host.golden measure.
var uprobes618 = &Policy{
	Name:  "uprobes-6.18",
	Title: "x86 uprobes of Linux 6.18: x86_nops and 5-byte NOPs emulated, 5-byte NOPs optimized (call into [uprobes-trampoline], red-zone hazard), XOP decoded",
	Source: "no Debian source: upstream 6.18 (kernel-evolution.md 8.2-8.3: optimized uprobes, XOP decoding) and the live kernel 6.18.44 measured by uprobe's live tests " +
		"and uprobes-x86-host.golden; decoder: Debian 7.2.13's (XOP, INAT_INV64; rows added after 6.18 upstream are assumed present)",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	MaxInsnSize:   16,
	CheckBoundary: false,
	dec:           kdec72,
	classify:      uprobeVersion{nops: isX86Nop618, nopR: rUpNopForms, keep90: true, opt5: true}.classify,
	canBoost:      uprobesX86.canBoost,
}

var uprobes72 = &Policy{
	Name:          "uprobes-7.2",
	Title:         "x86 uprobes of Linux 7.2: insn_is_nop() forms emulated, the 10-byte NOP 66 2e 0f 1f 84 optimized (red zone kept), XOP decoded",
	Source:        "Debian linux-source-7.2 (7.2.13, unstable): arch/x86/kernel/uprobes.c (can_optimize, is_optimizable_nop10, branch_setup_xol_ops), arch/x86/lib/insn-eval.c (insn_is_nop), arch/x86/lib/insn.c",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	MaxInsnSize:   16,
	CheckBoundary: false,
	dec:           kdec72,
	classify:      uprobeVersion{nops: (*kinsn).isNop72, nopR: rUpIsNop, opt10: true}.classify,
	canBoost:      uprobesX86.canBoost,
}

// goodInsns64 / goodInsns32 / good2Byte are the 6.1 tables.
var goodInsns64 = rows([16]string{
	/* 00 */ "1111110011111101",
	/* 10 */ "1111110011111100",
	/* 20 */ "1111111011111110",
	/* 30 */ "1111111011111110",
	/* 40 */ "1111111111111111",
	/* 50 */ "1111111111111111",
	/* 60 */ "0001111111110000",
	/* 70 */ "1111111111111111",
	/* 80 */ "1101111111111111",
	/* 90 */ "1111111111011111",
	/* a0 */ "1111111111111111",
	/* b0 */ "1111111111111111",
	/* c0 */ "1111111111110000",
	/* d0 */ "1111000111111111",
	/* e0 */ "1111000011010000",
	/* f0 */ "1011011111001111",
})

var goodInsns32 = rows([16]string{
	/* 00 */ "1111111011111111",
	/* 10 */ "1111111011111110",
	/* 20 */ "1111111111111111",
	/* 30 */ "1111111111111111",
	/* 40 */ "1111111111111111",
	/* 50 */ "1111111111111111",
	/* 60 */ "1111111111110000",
	/* 70 */ "1111111111111111",
	/* 80 */ "1111111111111111",
	/* 90 */ "1111111111111111",
	/* a0 */ "1111111111111111",
	/* b0 */ "1111111111111111",
	/* c0 */ "1111111111110000",
	/* d0 */ "1111111111111111",
	/* e0 */ "1111000011110000",
	/* f0 */ "1011011111001111",
})

var good2Byte = rows([16]string{
	/* 00 */ "0011100000101111",
	/* 10 */ "1111111111111111",
	/* 20 */ "1111111111111111",
	/* 30 */ "0111001011111111",
	/* 40 */ "1111111111111111",
	/* 50 */ "1111111111111111",
	/* 60 */ "1111111111111111",
	/* 70 */ "1111111100111111",
	/* 80 */ "1111111111111111",
	/* 90 */ "1111111111111111",
	/* a0 */ "1111111111111101",
	/* b0 */ "1111111111111111",
	/* c0 */ "1111111111111111",
	/* d0 */ "1111111111111111",
	/* e0 */ "1111111111111111",
	/* f0 */ "1111111111111111",
})

// riprelRewrite is riprel_analyze(): it turns the RIP-relative operand of the
// copied instruction in slot into disp32(scratch) and returns the scratch
// register number (6 si, 7 di or 3 bx: not ModRM.reg, not VEX.vvvv's low bits).
func riprelRewrite(slot []byte, k *kinsn) int {
	in := k.in
	off := k.emu
	if in.Rex != 0 {
		slot[off+in.RexOff] &= 0xfe // clear REX.B
	}
	reg2 := byte(0xff)
	switch in.Enc {
	case decode.EncVEX3, decode.EncEVEX:
		slot[off+in.EncOff+1] |= 0x60 // set VEX3.B (inverted) / EVEX.X
		reg2 = in.EncBytes[2]
	case decode.EncVEX2:
		reg2 = in.EncBytes[1] & 0x7f
	}
	reg := byte(in.Reg())
	r2 := ((reg2 >> 3) & 7) ^ 7
	var scratch byte
	switch {
	case reg != 6 && r2 != 6:
		scratch = 6
	case reg != 7 && r2 != 7:
		scratch = 7
	default:
		scratch = 3
	}
	slot[off+in.ModRMOff] = 0x80 | reg<<3 | scratch
	return int(scratch)
}

func classifyUprobe(c *cls, v uprobeVersion) {
	pr, d := c.pr, c.d
	if pr.boundary == 0 {
		c.step(rUpNoCheck, Note, "")
	}
	k := pr.k
	if k == nil {
		c.reject(rUpDecode, ENOEXEC, c.detailf("decode: %v", pr.decErr))
		return
	}
	if k.emu > 0 {
		// The kernel decoder folds the emulate prefix; no uprobe rule refuses it.
		c.step(rDecodeEmu, Note, "")
	}
	d.Len = k.length
	if k.vex && c.explain {
		c.step(rDecodeVEX, Note, c.detailf("%v instruction: OPCODE1 is 0x%02x", k.in.Enc, k.op[0]))
	}
	// 7.2 can_optimize(): the 10-byte NOP skips uprobe_init_insn.
	canOpt := v.opt10 && k.in.Mode == decode.Mode64 && k.emu == 0 && k.length == 10 &&
		bytes.HasPrefix(k.in.Bytes(), nop10Prefix) && k.isNop72()
	if canOpt && pr.addr&0xfff > 0x1000-10 {
		canOpt = false
		c.step(rUpOptPage, Note, "")
	}
	// 7.2's insn_is_nop() rewrites opcode.value of a REX2 map-1 instruction
	// into 0F xx, and the change stays. can_optimize() calls it on every
	// 10-byte instruction before uprobe_init_insn: that one then reads OPCODE1
	// 0x0F, and branch_setup_xol_ops() too (one opcode byte: -ENOSYS), so the
	// copy is single-stepped. Shorter instructions meet it first in
	// branch_setup_xol_ops(), which has read OPCODE1 before.
	rex2M1 := v.opt10 && k.rex2Map1() && k.in.Mode == decode.Mode64 && k.length == 10
	op0 := k.op[0]
	if rex2M1 {
		op0 = 0x0f
		c.step(rUpRex2Mut, Note, "")
	}
	if canOpt {
		d.Optimizable, d.OptLen = true, k.length
		c.step(rUpOpt10, Pass, "")
	} else if !uprobeInitInsn(c, k, op0) {
		return
	}
	if rex2M1 {
		uprobeXOL(c, k)
		return
	}

	// branch_setup_xol_ops.
	if v.nops != nil && v.nops(k) {
		d.Verdict, d.Emulated = Emulate, true
		c.step(v.nopR, Decides, "")
		if v.opt5 && k.in.Mode == decode.Mode64 && k.length == 5 && k.isNop5() {
			if pr.addr&0xfff > 0x1000-5 {
				c.step(rUpOptPage, Note, "")
			} else {
				d.Optimizable, d.OptLen = true, k.length
				c.step(rUpOpt5, Pass, "")
			}
		}
		return
	}
	o := k.op[0]
	var br *rule
	switch {
	case o == 0xeb || o == 0xe9:
		br = rUpJmp
	case o == 0x90 && v.keep90:
		d.Verdict, d.Emulated = Emulate, true
		c.step(rUpNop, Decides, "")
		return
	case o == 0xe8:
		br = rUpCall
	case o == 0x0f:
		if k.nop == 2 && (k.op[1]-0x10)&0xf0 == 0x70 {
			br = rUpJcc
		}
	case o&0xf0 == 0x70:
		br = rUpJcc
	}
	if br != nil {
		if k.in.Prefixes&decode.PfxOpSize != 0 {
			c.reject(rUpBranch66, ENOTSUPP, "")
			return
		}
		d.Verdict, d.Emulated = Emulate, true
		c.step(br, Decides, "")
		return
	}
	// push_setup_xol_ops.
	if o >= 0x50 && o <= 0x57 && (k.length == 1 || (k.length == 2 && k.in.Mode == decode.Mode64 && k.in.Rex == 0x41 && k.in.RexOff == 0)) {
		d.Verdict, d.Emulated = Emulate, true
		c.step(rUpPush, Decides, "")
		return
	}
	uprobeXOL(c, k)
}

// uprobeXOL is the default_xol_ops path: the copy in the slot (a RIP-relative
// operand rewritten), single-stepped.
func uprobeXOL(c *cls, k *kinsn) {
	d := c.d
	n := k.raw(d.Slot[:])
	d.SlotLen = n
	if k.ripRel() {
		r := riprelRewrite(d.Slot[:n], k)
		d.Scratch = int8(r)
		c.step(rUpRIP, Note, c.detailf("ModRM rewritten to disp32(%%%s); the scratch register holds the address after the instruction", [8]string{3: "rbx", 6: "rsi", 7: "rdi"}[r]))
	}
	d.Verdict = SingleStep
	c.step(rUpXOL, Decides, "")
}

// rex2Map1 is a REX2-prefixed instruction with REX2.M = 1 (the 0F map).
func (k *kinsn) rex2Map1() bool {
	if !k.rex2 {
		return false
	}
	raw := k.in.Bytes()
	j := firstNonLegacyPrefix(raw)
	return j >= 0 && j+1 < len(raw) && raw[j+1]&0x80 != 0
}

// uprobeInitInsn is uprobe_init_insn() after the decode: is_prefix_bad,
// insn_masking_exception and the good-instruction tables. false: refused.
// op0 is OPCODE1 as the kernel reads it then (k.op[0], or 0x0F after 7.2's
// insn_is_nop rewrote a REX2 map-1 opcode).
func uprobeInitInsn(c *cls, k *kinsn, op0 byte) bool {
	if k.in.Prefixes&(decode.PfxES|decode.PfxCS|decode.PfxDS|decode.PfxSS|decode.PfxLock) != 0 {
		c.reject(rUpPrefix, ENOTSUPP, c.detailf("prefixes %v", k.in.Prefixes))
		return false
	}
	if op0 == 0x1f || (op0 == 0x8e && k.reg() == 2) { // insn_masking_exception
		c.reject(rUpMasking, ENOTSUPP, "")
		return false
	}
	good := &goodInsns64
	if k.in.Mode == decode.Mode32 {
		good = &goodInsns32
	}
	if !good.has(op0) && !(k.nop == 2 && good2Byte.has(k.op[1])) {
		c.reject(rUpGood, ENOTSUPP, c.detailf("OPCODE1 0x%02x is not in good_insns_%v", op0, k.in.Mode))
		return false
	}
	c.step(rUpGood, Pass, c.detailf("OPCODE1 0x%02x is good", op0))
	return true
}

// nop10Prefix is is_optimizable_nop10()'s nop10_prefix (7.2).
var nop10Prefix = []byte{0x66, 0x2e, 0x0f, 0x1f, 0x84}

// x86Nops are the kernel's x86_nops (BYTES_NOP1..8, arch/x86/include/asm/nops.h).
var x86Nops = [][]byte{
	{0x90}, {0x66, 0x90}, {0x0f, 0x1f, 0x00}, {0x0f, 0x1f, 0x40, 0x00},
	{0x0f, 0x1f, 0x44, 0x00, 0x00}, {0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x0f, 0x1f, 0x80, 0, 0, 0, 0}, {0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0},
}

// isNop5 is a legacy 0F 1F /0 (the length is the caller's test).
func (k *kinsn) isNop5() bool {
	in := k.in
	return in.Enc == decode.EncLegacy && !k.rex2 && in.Map == decode.Map0F && in.Opcode == 0x1F && in.HasModRM && in.Reg() == 0
}

// isX86Nop618 is what the 6.18 host emulates beyond case 0x90 (measured: the
// live tests): the exact bytes of one of x86_nops, or in a 64-bit task any
// 5-byte 0F 1F /0 (the optimizable form; a 32-bit task single-steps
// 66 0f 1f 40 00). Other NOP forms (66 0f 1f 00, 0f 1f 04 00, a nonzero
// displacement, the register form, more than 8 bytes) are single-stepped.
func isX86Nop618(k *kinsn) bool {
	if k.emu > 0 {
		return false
	}
	if k.in.Mode == decode.Mode64 && k.length == 5 && k.isNop5() {
		return true
	}
	for _, n := range x86Nops {
		if bytes.Equal(k.in.Bytes(), n) {
			return true
		}
	}
	return false
}

// isNop72 is 7.2's insn_is_nop() (arch/x86/lib/insn-eval.c) on the kernel's
// view of the instruction.
func (k *kinsn) isNop72() bool {
	in := k.in
	var r, x, b, m int
	switch {
	case k.rex2:
		raw := in.Bytes()
		j := firstNonLegacyPrefix(raw)
		if j < 0 || j+1 >= len(raw) {
			return false
		}
		pl := int(raw[j+1])
		r, x, b = 8*(pl>>2&1)+16*(pl>>6&1), 8*(pl>>1&1)+16*(pl>>5&1), 8*(pl&1)+16*(pl>>4&1)
		m = pl >> 7
	case in.Rex != 0:
		rex := int(in.Rex)
		r, x, b = 8*(rex>>2&1), 8*(rex>>1&1), 8*(rex&1)
	case k.vex:
		return false // VEX, EVEX and XOP NOPs are ignored
	}
	mod, reg, rm := int(k.modrm>>6), int(k.modrm>>3&7)+r, int(k.modrm&7)+b
	hasSIB := in.HasSIB
	scale, index := int(in.SIB>>6), int(in.SIB>>3&7)+x
	if hasSIB {
		rm = int(in.SIB&7) + b
	}
	op0, op1 := k.op[0], k.op[1]
	if k.rex2 && m == 1 {
		op0, op1 = 0x0f, k.op[0]
	}
	native := 4
	if in.Mode == decode.Mode64 {
		native = 8
	}
	switch op0 {
	case 0x0f:
		return op1 == 0x1f && k.hasMod && reg == 0
	case 0x89:
		return k.hasMod && mod == 3 && in.OpSize/8 == native && reg == rm
	case 0x8d:
		if !k.hasMod || mod == 0 || mod == 3 || in.OpSize/8 != native || in.Disp != 0 {
			return false
		}
		if hasSIB && (scale != 0 || index != 4) {
			return false
		}
		return in.Prefixes&^decode.PfxDS == 0 && reg == rm
	case 0x90:
		return b == 0 && in.Prefixes&decode.PfxRep == 0
	case 0xe9, 0xeb:
		return k.imm == 0
	}
	return false
}
