package boost

import "github.com/kboost/kboost/decode"

// x86 uprobes (arch/x86/kernel/uprobes.c, 6.1): checked when the probe is
// installed into a process (ENOTSUPP = 524 from uprobe_register/enable), no
// instruction-boundary check, emulation of nop/jmp/call/jcc/push, otherwise a TF
// single-step in the XOL slot.

var uprobesX86 = &Policy{
	Name:          "uprobes-x86",
	Title:         "x86 uprobes (user space): good-instruction tables, emulated nop/jmp/call/jcc/push, XOL single-step",
	Source:        "Debian linux-source-6.1 arch/x86/kernel/uprobes.c (uprobe_init_insn, branch_setup_xol_ops, push_setup_xol_ops, arch_uprobe_analyze_insn)",
	Modes:         []decode.Mode{decode.Mode64, decode.Mode32},
	Defaults:      Config{},
	MaxInsnSize:   16, // MAX_UINSN_BYTES
	CheckBoundary: false,
	classify:      classifyUprobe,
	canBoost:      func(*cls, *kinsn, uint64, *Env) bool { return false },
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

func classifyUprobe(c *cls) {
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
	// is_prefix_bad: ES CS DS SS LOCK.
	if k.in.Prefixes&(decode.PfxES|decode.PfxCS|decode.PfxDS|decode.PfxSS|decode.PfxLock) != 0 {
		c.reject(rUpPrefix, ENOTSUPP, c.detailf("prefixes %v", k.in.Prefixes))
		return
	}
	if k.maskingException() {
		c.reject(rUpMasking, ENOTSUPP, "")
		return
	}
	good := &goodInsns64
	if k.in.Mode == decode.Mode32 {
		good = &goodInsns32
	}
	if !good.has(k.op[0]) && !(k.nop == 2 && good2Byte.has(k.op[1])) {
		c.reject(rUpGood, ENOTSUPP, c.detailf("OPCODE1 0x%02x is not in good_insns_%v", k.op[0], k.in.Mode))
		return
	}
	c.step(rUpGood, Pass, c.detailf("OPCODE1 0x%02x is good", k.op[0]))

	// branch_setup_xol_ops.
	o := k.op[0]
	var br *rule
	switch {
	case o == 0xeb || o == 0xe9:
		br = rUpJmp
	case o == 0x90:
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
