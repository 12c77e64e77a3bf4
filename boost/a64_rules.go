package boost

const (
	a64Kpol = "linux-6.1-arm64,linux-6.12-arm64,linux-7.2-arm64,boost-arm64"
	a64All  = "linux-6.1-arm64,linux-6.12-arm64,linux-7.2-arm64,uprobes-arm64,uprobes-6.12-arm64,uprobes-6.18-arm64,uprobes-7.2-arm64,boost-arm64"
	a64Boo  = "boost-arm64"
	a64Up   = "uprobes-arm64,uprobes-6.12-arm64,uprobes-6.18-arm64,uprobes-7.2-arm64"
	a64V612 = "linux-6.12-arm64,uprobes-6.12-arm64,uprobes-6.18-arm64,linux-7.2-arm64,uprobes-7.2-arm64"
	a64V618 = "uprobes-6.18-arm64,linux-7.2-arm64,uprobes-7.2-arm64"

	a64KprobesC = "arch/arm64/kernel/probes/kprobes.c"
	a64DecodeC  = "arch/arm64/kernel/probes/decode-insn.c"
	a64SimC     = "arch/arm64/kernel/probes/simulate-insn.c"
	a64InsnH    = "arch/arm64/include/asm/insn.h"
	a64UprobesC = "arch/arm64/kernel/probes/uprobes.c"
	a64LibInsnC = "arch/arm64/lib/insn.c"
	a64AltC     = "arch/arm64/kernel/alternative.c"
)

// The arm64 rules, in the order the kernel tries them.
var (
	// arch_prepare_kprobe
	rA64Align   = newRule("arm64.align", a64Kpol, a64KprobesC+" arch_prepare_kprobe()", "the address is not 4-byte aligned: EINVAL")
	rA64Read    = newRule("arm64.read", a64Kpol, a64KprobesC+" arch_prepare_kprobe()", "no whole instruction word at the address (fewer than 4 bytes given)")
	rA64ExTable = newRule("arm64.extable", a64Kpol, a64KprobesC+" arch_prepare_kprobe() search_exception_tables()", "the address has an exception-table entry: EINVAL")

	// Boot-time code patching (the offline audit's note on the bytes).
	_ = newRule("arm64.alternative", a64All, a64AltC+" __apply_alternatives()", "the instruction is inside a CPU alternative site: the kernel rewrites it at boot when the CPU has the site's capability (kboost audit --cpu-caps chooses the CPU)")

	// arm_kprobe_decode_insn / arm_probe_decode_insn / aarch64_insn_is_steppable
	rA64SimLDR      = newRule("arm64.simulate.ldr_literal", a64Kpol, a64DecodeC+" arm_kprobe_decode_insn(); "+a64SimC+" simulate_ldr_literal()", "LDR (literal) to a general register (0xBF000000/0x18000000): simulated, no slot (kprobes only)")
	rA64SimLDRSW    = newRule("arm64.simulate.ldrsw_literal", a64Kpol, a64DecodeC+" arm_kprobe_decode_insn(); "+a64SimC+" simulate_ldrsw_literal()", "LDRSW (literal) (0xFF000000/0x98000000): simulated, no slot (kprobes only)")
	rA64Steppable   = newRule("arm64.steppable", a64All, a64DecodeC+" aarch64_insn_is_steppable()", "aarch64_insn_is_steppable(): the instruction can run out of line")
	rA64NSBranch    = newRule("arm64.not_steppable.branch", a64All, a64DecodeC+" aarch64_insn_is_steppable(); "+a64LibInsnC+" aarch64_insn_is_branch()", "branch (B, BL, CBZ/CBNZ, TBZ/TBNZ, B.cond, BR, BLR, RET and their PAC forms): not steppable")
	rA64NSMSRImm    = newRule("arm64.not_steppable.msr_imm", a64All, a64DecodeC+" aarch64_insn_is_steppable(); "+a64InsnH+" msr_imm", "MSR (immediate) / PSTATE write (0xFFF8F01F/0xD500401F; also CFINV, XAFLAG, AXFLAG, SMSTART): not steppable")
	rA64NSMSRReg    = newRule("arm64.not_steppable.msr_reg", a64All, a64DecodeC+" aarch64_insn_is_steppable(); "+a64InsnH+" msr_reg", "MSR (register) (0xFFF00000/0xD5100000): not steppable")
	rA64NSException = newRule("arm64.not_steppable.exception", a64All, a64DecodeC+" aarch64_insn_is_steppable(); "+a64InsnH+" exception", "exception generation (0xFF000000/0xD4000000: SVC, HVC, SMC, BRK, HLT, DCPS): not steppable")
	rA64NSERET      = newRule("arm64.not_steppable.eret", a64All, a64DecodeC+" aarch64_insn_is_steppable(); "+a64InsnH+" eret, eret_auth", "ERET / ERETAA / ERETAB: not steppable")
	rA64NSMRS       = newRule("arm64.not_steppable.mrs_daif", a64All, a64DecodeC+" aarch64_insn_is_steppable(); "+a64LibInsnC+" aarch64_insn_extract_system_reg()", "MRS Xt, DAIF (sysreg 0xDA11): not steppable, the slot runs with DAIF masked (every other MRS is steppable)")
	rA64NSHint      = newRule("arm64.not_steppable.hint", a64All, a64LibInsnC+" aarch64_insn_is_steppable_hint()", "HINT not on the allow-list (NOP, XPACLRI, PACIA1716, PACIB1716, PACIAZ, PACIASP, PACIBZ, PACIBSP, BTI, BTI c/j/jc): not steppable (YIELD, WFE, WFI, SEV, AUTI*, ESB, CSDB... are refused)")
	rA64NSLiteral   = newRule("arm64.not_steppable.literal", a64All, a64LibInsnC+" aarch64_insn_uses_literal()", "PC-relative literal use (LDR/LDRSW/PRFM literal, ADR, ADRP): not steppable")
	rA64NSExclusive = newRule("arm64.not_steppable.exclusive", a64All, a64InsnH+" exclusive (0x3F800000/0x08000000)", "load/store exclusive (LDXR, STXR, LDAXR, STLXR, LDXP, STXP; the mask also covers CASP): not steppable")
	rA64NSMOPS      = newRule("arm64.not_steppable.mops", a64V612, a64DecodeC+" aarch64_insn_is_steppable(); "+a64InsnH+" mops (0x3B200C00/0x19000400)", "FEAT_MOPS CPY*/SET* (prologue, main and epilogue must run consecutively): not steppable, refused (6.12)")
	rA64SimBCond    = newRule("arm64.simulate.b_cond", a64All, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_b_cond()", "B.cond (6.1 and 6.18.0 mask 0xFF000010/0x54000000; Debian's 6.12.117 and 7.2.13 0xFF000000, so the hinted BC.cond too): simulated, no slot")
	rA64SimCBZ      = newRule("arm64.simulate.cbz_cbnz", a64All, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_cbz_cbnz()", "CBZ/CBNZ: simulated, no slot")
	rA64SimTBZ      = newRule("arm64.simulate.tbz_tbnz", a64All, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_tbz_tbnz()", "TBZ/TBNZ: simulated, no slot")
	rA64SimADR      = newRule("arm64.simulate.adr_adrp", a64All, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_adr_adrp()", "ADR/ADRP: simulated, no slot")
	rA64SimBBL      = newRule("arm64.simulate.b_bl", a64All, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_b_bl()", "B/BL: simulated, no slot")
	rA64SimBR       = newRule("arm64.simulate.br_blr_ret", a64All, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_br_blr_ret()", "BR/BLR/RET (not the PAC forms): simulated, no slot")
	rA64SimBRBLR    = newRule("arm64.simulate.br_blr", a64V618, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_br_blr()", "BR/BLR (not the PAC forms): simulated, no slot (6.18 and 7.2, where RET has its own handler)")
	rA64SimRET      = newRule("arm64.simulate.ret", a64V618, a64DecodeC+" arm_probe_decode_insn(); "+a64SimC+" simulate_ret()", "RET (not RETAA/RETAB): simulated, no slot (6.18 and 7.2; for a user task with GCS it also pops the GCS)")
	rA64SimNOP      = newRule("arm64.simulate.nop", a64V618, a64DecodeC+" arm_probe_decode_insn() aarch64_insn_is_nop(); "+a64SimC+" simulate_nop()", "NOP (0xD503201F): simulated, no slot (upstream 6.13: 6.18 and 7.2; other steppable hints still run in the slot)")
	rA64Atomic      = newRule("arm64.atomic_sequence", a64Kpol, a64DecodeC+" arm_kprobe_decode_insn() is_probed_address_atomic()", "walking back from the previous instruction to the symbol start or 32 instructions, a load-exclusive mask match (0x3F400000/0x08400000, which also matches LDAR and CASA/CASAL) comes before any store-exclusive match (0x3F400000/0x08000000): EINVAL")
	rA64Slot        = newRule("arm64.slot", a64Kpol, a64KprobesC+" arch_prepare_ss_slot()", "stepped out of line: slot = [insn, BRK #6 (0xD42000C0)], run with DAIF masked; the BRK #6 handler resumes at addr + 4")

	// uprobes
	rUpA64Read  = newRule("uprobe_arm64.read", a64Up, eventsC+" copy_insn()", "no whole instruction word at the address")
	rUpA64Trap  = newRule("uprobe_arm64.trap", a64Up, eventsC+" prepare_uprobe() is_trap_insn()", "the word is already the uprobe breakpoint BRK #5 (0xD42000A0): ENOTSUPP")
	rUpA64Align = newRule("uprobe_arm64.align", a64Up, a64UprobesC+" arch_uprobe_analyze_insn()", "the address is not 4-byte aligned: EINVAL")
	rUpA64XOL   = newRule("uprobe_arm64.xol", a64Up, a64UprobesC+" arch_uprobe_pre_xol()", "stepped out of line: XOL slot = [insn] (4 bytes), hardware single-step, then PC = addr + 4")

	// boost-arm64 model
	rBGapBC       = newRule("boost_arm64.gap.bc_cond", a64Boo, a64InsnH+" bcond (6.1 mask 0xFF000010; 6.12: 0xFF000000)", "BC.cond (FEAT_HBC, 0xFF000010/0x54000010) passes 6.1's steppable test and would branch relative to the slot: simulated as B.cond instead")
	rBGapFPLit    = newRule("boost_arm64.gap.fp_ldr_literal", a64Boo, a64LibInsnC+" aarch64_insn_uses_literal() (6.1 and 6.12)", "SIMD/FP LDR (literal) (0x3F000000/0x1C000000: LDR St/Dt/Qt, label) reads PC but is not in aarch64_insn_uses_literal(): the kernel steps it and loads from slot-relative memory; refused")
	rBGapUnalloc  = newRule("boost_arm64.gap.unallocated", a64Boo, a64LibInsnC+" aarch64_insn_encoding_class[] (CLS_UNKNOWN is never tested)", "UDF or an unallocated/reserved top-level encoding (class UNKNOWN): the kernel steps it, so it traps at the slot address instead of the probed one; refused")
	rBGapBranch   = newRule("boost_arm64.gap.branch_space", a64Boo, a64DecodeC+" aarch64_insn_is_steppable()", "a word of the branch/exception/system class outside the system group (0xD5) that no kernel mask matches (DRPS, unallocated branch encodings): refused")
	rBGapMOPS     = newRule("boost_arm64.gap.mops", a64Boo, a64InsnH+" mops (6.12: 0x3B200C00/0x19000400)", "FEAT_MOPS CPY*/SET* (prologue/main/epilogue must be consecutive in memory; 6.12 refuses them, 6.1 steps them): refused")
	rBGapExcState = newRule("boost_arm64.gap.exception_state", a64Boo, a64DecodeC+" aarch64_insn_is_steppable() (every MRS but DAIF is steppable)", "MRS of ELR, SPSR, ESR or FAR (EL1/EL2): the BRK exception that leads into the slot has overwritten them (ELR_EL1 = the slot address), so the copy reads the probe's own exception state; refused")
	rBPCFree      = newRule("boost_arm64.pc_free", a64Boo, "-", "steppable and neither reads nor writes the PC: boostable")
	rBPreempt     = newRule("boost_arm64.preemption", a64Boo, "-", "CONFIG_PREEMPTION: a task preempted inside a boosted slot could outlive the slot, so boosting is off (as on x86)")
	rBPostH       = newRule("boost_arm64.post_handler", a64Boo, "-", "the probe has a post_handler: it needs the second trap")
	rBRange       = newRule("boost_arm64.range", a64Boo, "-", "the slot is more than 128 MiB from the probe: B addr+4 cannot reach, single-stepped instead")
	rBBoost       = newRule("boost_arm64.boost", a64Boo, "-", "boosted: slot = [insn, B addr+4], no second trap")
)
