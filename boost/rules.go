package boost

import "sort"

// RuleInfo documents one rule id: what it tests and where the kernel does it.
type RuleInfo struct {
	ID       string `json:"id"`
	Desc     string `json:"desc"`
	Where    string `json:"where"`    // kernel file and function
	Policies string `json:"policies"` // policies that use it
}

// rule is a registered rule; pipeline code refers to these values, never to
// strings, so every id a Decision can carry is in the table.
type rule struct{ RuleInfo }

var ruleList []*rule

func newRule(id, policies, where, desc string) *rule {
	r := &rule{RuleInfo{ID: id, Desc: desc, Where: where, Policies: policies}}
	ruleList = append(ruleList, r)
	return r
}

// Rules returns the table of every rule id, sorted by id.
func Rules() []RuleInfo {
	out := make([]RuleInfo, len(ruleList))
	for i, r := range ruleList {
		out[i] = r.RuleInfo
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RuleByID looks a rule up.
func RuleByID(id string) (RuleInfo, bool) {
	for _, r := range ruleList {
		if r.ID == id {
			return r.RuleInfo, true
		}
	}
	return RuleInfo{}, false
}

const (
	l6x   = "linux-6.1,linux-6.12,linux-7.2"
	l61   = "linux-6.1"
	l612  = "linux-6.12,linux-7.2"
	l2617 = "linux-2.6.17-i386"
	lup   = "uprobes-x86,uprobes-6.12,uprobes-6.18,uprobes-7.2"
	lup18 = "uprobes-6.18"
	lup72 = "uprobes-7.2"
	lall  = "all"
	// The generic kernel/kprobes.c and trace_kprobe rules apply to the ARM
	// kprobe policies as they are (the CFI preamble test to arm64 only).
	lgen  = l6x + "," + a32Both + "," + a64Kpol
	lgenA = lall + "," + a32Both + "," + a64Kpol
	lcfi  = l6x + "," + a64Kpol

	coreC   = "arch/x86/kernel/kprobes/core.c"
	optC    = "arch/x86/kernel/kprobes/opt.c"
	kprobeC = "kernel/kprobes.c"
	upC     = "arch/x86/kernel/uprobes.c"
	i386F   = "arch/i386/kernel/kprobes.c"
	i386C   = i386F + " (2.6.17 + Apr 2006 patch)"
	insnC   = "arch/x86/lib/insn.c"
	insnH   = "arch/x86/include/asm/insn.h"
	evalC   = "arch/x86/lib/insn-eval.c"
	altC    = "arch/x86/kernel/alternative.c"
	ftraceC = "arch/x86/kernel/kprobes/ftrace.c"
	traceC  = "kernel/trace/trace_kprobe.c"
	jumpC   = "kernel/jump_label.c"
	scallC  = "kernel/static_call_inline.c"
	bugC    = "lib/bug.c"
	eventsC = "kernel/events/uprobes.c"
)

// The rules, grouped by kernel stage, in the order the kernel tries them.
var (
	rPolicyMode = newRule("policy.mode", lall, "-", "the policy does not model this instruction set")
	rDecodeVEX  = newRule("decode.vex_as_onebyte", l6x+","+lup, insnC+" insn_get_opcode()", "VEX/EVEX instruction: the kernel decoder keeps only its opcode byte (opcode.nbytes = 1), so rules keyed on opcode.bytes[0] read it as a one-byte opcode")
	rDecodeREX2 = newRule("decode.rex2_as_onebyte", l612, insnC+" insn_get_prefixes() / insn_get_opcode()", "REX2 (D5, 64-bit, 6.10+) instruction: the kernel decoder keeps only the opcode byte after it (opcode.nbytes = 1, even for map 1, the 0F map), so rules keyed on opcode.bytes[0] read a 0F-map opcode as a one-byte opcode")
	rDecodeEmu  = newRule("decode.emulate_prefix_len", l6x, insnC+" insn_get_emulate_prefix()", "the kernel decoder folds a Xen/KVM emulate prefix (ud2 + \"xen\"/\"kvm\") into the next instruction's length")

	// trace_kprobe (kprobe_events / perf)
	rNotrace = newRule("trace_kprobe.notrace", lgen, traceC+" within_notrace_func()", "kprobe_events and perf refuse functions without an ftrace location (notrace) unless CONFIG_KPROBE_EVENTS_ON_NOTRACE: EINVAL")

	// _kprobe_addr / arch_adjust_kprobe_addr
	rIBT        = newRule("ibt.skip_endbr", l6x, coreC+" arch_adjust_kprobe_addr()", "with IBT, sym+0 and sym+4 both probe the instruction after ENDBR (sym+4)")
	rSymOutside = newRule("kallsyms.outside", lall, kprobeC+" _kprobe_addr()", "the offset is beyond the symbol: the kernel resolves the address to another symbol")

	// check_kprobe_address_safe
	rFtraceLoc   = newRule("ftrace.entry", lgen, kprobeC+" check_ftrace_location()", "the address is an ftrace location (the 5-byte fentry call/nop): with CONFIG_KPROBES_ON_FTRACE the probe is ftrace-based [FTRACE]")
	rFtraceNoKOF = newRule("ftrace.no_kprobes_on_ftrace", lgen, kprobeC+" check_ftrace_location()", "ftrace location without CONFIG_KPROBES_ON_FTRACE: EINVAL")
	rNotText     = newRule("address_safe.not_text", lgenA, kprobeC+" check_kprobe_address_safe()", "not kernel or module text: EINVAL")
	rInitText    = newRule("address_safe.init_text", lgen, kprobeC+" check_kprobe_address_safe() / core_kernel_text()", "__init text is no longer text after boot (freed): EINVAL")
	rBlNokprobe  = newRule("blacklist.nokprobe", lgen, kprobeC+" within_kprobe_blacklist()", "NOKPROBE_SYMBOL() function: EINVAL")
	rBlKprobes   = newRule("blacklist.kprobes_text", lgenA, kprobeC+" within_kprobe_blacklist() (2.6.17: in_kprobes_functions())", ".kprobes.text (__kprobes): EINVAL")
	rBlNoinstr   = newRule("blacklist.noinstr", lgen, kprobeC+" populate_kprobe_blacklist()", ".noinstr.text: EINVAL")
	rBlEntry     = newRule("blacklist.entry_text", lgen, coreC+" arch_populate_kprobe_blacklist()", "entry text (__entry_text_start..__entry_text_end): EINVAL")
	rBlIRQ       = newRule("blacklist.irqentry", lgen, kprobeC+" populate_kprobe_blacklist()", "irq/softirq entry text: EINVAL")
	rBlOther     = newRule("blacklist.other", lgen, kprobeC+" within_kprobe_blacklist()", "other kprobe blacklist range: EINVAL")
	rBlAny       = newRule("blacklist.lookup", lgen, kprobeC+" within_kprobe_blacklist()", "kprobe blacklist lookup")
	rJumpLbl     = newRule("site.jump_label", lgen, jumpC+" jump_label_text_reserved()", "a jump-label (static key) site overlaps the address: EINVAL")
	rStatCall    = newRule("site.static_call", lgen, scallC+" static_call_text_reserved()", "a static-call site overlaps the address: EINVAL")
	rBug         = newRule("site.bug", lgen, bugC+" find_bug()", "a BUG()/WARN() (ud2) site: EINVAL")
	rCFI         = newRule("site.cfi_preamble", lcfi, kprobeC+" is_cfi_preamble_symbol()", "__cfi_/__pfx_ symbol: EINVAL")
	rSMPLock     = newRule("site.smp_lock", l6x, altC+" alternatives_text_reserved()", "an SMP lock-prefix site (.smp_locks, registered only on a uniprocessor boot); for a single kprobe the kernel passes [addr, addr) and the exclusive end never matches")

	// prepare_kprobe
	rFtracePrep = newRule("ftrace.prepare", l6x, ftraceC+" arch_prepare_kprobe_ftrace()", "ftrace-based probe: no slot, never boosted, never optimized")

	// can_probe
	rBoundary      = newRule("can_probe.boundary", l6x, coreC+" can_probe()", "decoding from the symbol start does not land on the address: not an instruction boundary, EILSEQ")
	rProbeDecode   = newRule("can_probe.decode", l6x, coreC+" can_probe()", "an instruction between the symbol start and the address does not decode: EILSEQ")
	rIntUD         = newRule("can_probe.int_ud", l612, coreC+" can_probe() / is_exception_insn()", "INT3, INT n, INTO, INT1, UD0, UD1, UD2 must not be probed: EILSEQ")
	rProbeDecodeAt = newRule("can_probe.decode_at", l612, coreC+" can_probe()", "the instruction at the address does not decode: EILSEQ")

	// __copy_instruction
	rCopyDecode  = newRule("copy_insn.decode", l6x, coreC+" __copy_instruction()", "the instruction does not decode: EINVAL")
	rEmuPrefix   = newRule("copy_insn.emulate_prefix", l6x, coreC+" __copy_instruction()", "Xen/KVM force-emulate prefix (0F 0B 'xen'/'kvm'): EINVAL")
	rCopyInt3    = newRule("copy_insn.int3", l6x, coreC+" __copy_instruction()", "an int3 (another subsystem's breakpoint, not recoverable): EINVAL")
	rMasking     = newRule("copy_insn.masking_exception", l6x, insnH+" insn_masking_exception()", "opcode 0x1F (the kernel tests POP DS 0x1F, not POP SS 0x17) or mov to SS (8E /2): EINVAL")
	rRIPOverflow = newRule("copy_insn.rip_overflow", l6x, coreC+" __copy_instruction()", "RIP-relative displacement no longer fits s32 once rebased to the slot: EINVAL")
	rRIPRebase   = newRule("copy_insn.rip_rebase", l6x, coreC+" __copy_instruction()", "RIP-relative displacement rebased to the slot")

	// prepare_emulation
	rEmIF      = newRule("prepare_emulation.ifmodifier", l6x, coreC+" prepare_emulation()", "cli/sti/pushf/popf: emulated (IF must not change while single-stepping)")
	rEmRet     = newRule("prepare_emulation.ret", l6x, coreC+" prepare_emulation()", "ret/lret (C2 C3 CA CB): emulated as a near ret (lret's CS and ret imm16 are ignored)")
	rEmCall    = newRule("prepare_emulation.call", l6x, coreC+" prepare_emulation()", "call rel (E8): emulated")
	rEmJmp     = newRule("prepare_emulation.jmp", l6x, coreC+" prepare_emulation()", "jmp rel (E9 EB): emulated")
	rEmJcc     = newRule("prepare_emulation.jcc", l6x, coreC+" prepare_emulation()", "jcc (70-7F, 0F 80-8F): emulated")
	rEmLoop    = newRule("prepare_emulation.loop", l6x, coreC+" prepare_emulation()", "loop/loope/loopne/jcxz (E0-E3): emulated")
	rEmCallInd = newRule("prepare_emulation.call_indirect", l6x, coreC+" prepare_emulation()", "call *%reg (FF /2, mod=3): emulated")
	rEmJmpInd  = newRule("prepare_emulation.jmp_indirect", l6x, coreC+" prepare_emulation()", "jmp *%reg (FF /4, mod=3): emulated")
	rEmFar     = newRule("prepare_emulation.far", l6x, coreC+" prepare_emulation()", "far call/jmp absolute (9A, EA): EOPNOTSUPP")
	rEmInt3    = newRule("prepare_emulation.int3", l6x, coreC+" prepare_emulation()", "int3 (CC): EOPNOTSUPP")
	rEmIret    = newRule("prepare_emulation.iret", l6x, coreC+" prepare_emulation()", "iret (CF): EOPNOTSUPP")
	rEmVMX     = newRule("prepare_emulation.vmx", l6x, coreC+" prepare_emulation()", "0F 01 with mod=3 reg=0 (VMX/ENCLV group): EOPNOTSUPP")
	rEmFarInd  = newRule("prepare_emulation.far_indirect", l6x, coreC+" prepare_emulation()", "far call/jmp indirect (FF /3, FF /5): EOPNOTSUPP")
	rEmIndSize = newRule("prepare_emulation.indirect_addr_size", l6x, coreC+" prepare_emulation()", "indirect call/jmp with an address size other than the kernel's (67 prefix): EOPNOTSUPP")
	rEmIndMem  = newRule("prepare_emulation.indirect_mem", l6x, coreC+" prepare_emulation()", "indirect call/jmp through memory (mod != 3): EOPNOTSUPP")

	// prepare_singlestep
	rPreempt  = newRule("prepare_singlestep.preemption", l6x, coreC+" prepare_singlestep()", "CONFIG_PREEMPTION: boosting is compiled out")
	rPostH    = newRule("prepare_singlestep.post_handler", l6x, coreC+" prepare_singlestep()", "the probe has a post_handler: not boosted")
	rLength   = newRule("prepare_singlestep.length", l6x, coreC+" prepare_singlestep()", "MAX_INSN_SIZE - len < 5 (len > 10): no room for the jmp back")
	rBoost    = newRule("prepare_singlestep.boost", l6x, coreC+" prepare_singlestep()", "boosted: slot = instruction + jmp rel32 back, no second trap")
	rInt3Slot = newRule("prepare_singlestep.int3", l6x, coreC+" prepare_singlestep()", "slot = instruction + int3 (a second trap)")
	rENOSPC   = newRule("prepare_singlestep.enospc", l6x, coreC+" prepare_singlestep()", "MAX_INSN_SIZE - len < 1: no room for the int3: ENOSPC")
	rEmulated = newRule("setup_singlestep.emulate", l6x, coreC+" setup_singlestep()", "not boosted and an emulation routine exists: emulated at the hit")

	// can_boost
	rCBExTable = newRule("can_boost.extable", l6x, coreC+" can_boost()", "the address has an exception-table entry: not boostable")
	rCB2Byte   = newRule("can_boost.2byte_bitmap", l6x+","+l2617, coreC+" can_boost() twobyte_is_boostable", "two-byte opcode 0F xx: boostable iff xx is set in twobyte_is_boostable (prefixes not examined)")
	rCB3Byte   = newRule("can_boost.3byte", l6x, coreC+" can_boost()", "three-byte opcode (0F 38 / 0F 3A): not boostable")
	rCBPrefix  = newRule("can_boost.prefix_cs_addr", l6x+","+l2617, coreC+" can_boost()", "CS override (2E) or address-size (67) prefix: not boostable")
	rCB1Byte   = newRule("can_boost.1byte_list", l6x, coreC+" can_boost()", "one-byte opcode on the not-boostable list (62 70-7F 9A C0-C1 CC-CE D0-D3 D6 D8-DF E0-E3 E8-E9 EB F0-F4 F6-F7 FE; 6.12 refines the groups)")
	rCBGrp2    = newRule("can_boost.grp2", l612, coreC+" can_boost()", "Grp2 (C0 C1 D0-D3): not boostable only for /6")
	rCBGrp3    = newRule("can_boost.grp3", l612, coreC+" can_boost()", "Grp3 (F6 F7): not boostable only for /1")
	rCBGrp4    = newRule("can_boost.grp4", l612, coreC+" can_boost()", "Grp4 (FE): boostable only for /0 /1")
	rCBGrp5    = newRule("can_boost.grp5", l6x, coreC+" can_boost()", "Grp5 (FF): 6.1 boostable only for /4; 6.12 for /0 /1 /4")
	rCBOK      = newRule("can_boost.ok", l6x, coreC+" can_boost()", "can_boost() returns true")

	// optprobes
	rOptConfig   = newRule("can_optimize.config", l6x, "CONFIG_OPTPROBES", "optprobes not configured (or the kprobes-optimization sysctl is off)")
	rOptUnsup    = newRule("can_optimize.unsupported", l2617+","+lup+","+t32Pol+","+a64All, "-", "this policy has no jump optimization")
	rOptFtrace   = newRule("can_optimize.ftrace", l6x, kprobeC+" try_to_optimize_kprobe()", "ftrace-based probes are never optimized")
	rOptRejected = newRule("can_optimize.rejected", l6x, kprobeC+" register_kprobe()", "the probe itself is rejected")
	rOptPostH    = newRule("can_optimize.post_handler", l6x, kprobeC+" optimize_kprobe()", "probes with a post_handler are never optimized")
	rOptEntry    = newRule("can_optimize.entry_text", l6x, optC+" can_optimize()", "entry text is never optimized")
	rOptSize     = newRule("can_optimize.size", l6x, optC+" can_optimize()", "size - offset < 5: no room for the jmp in the function")
	rOptExTable  = newRule("can_optimize.extable", l6x, optC+" can_optimize()", "an address in the function has an exception-table entry (fixup code may jump in)")
	rOptDecode   = newRule("can_optimize.decode", l6x, optC+" can_optimize()", "an instruction of the function does not decode")
	rOptIndirect = newRule("can_optimize.indirect_jump", l6x, optC+" can_optimize() insn_is_indirect_jump()", "the function has an indirect jump (FF /4, FF /5, EA; a jump table may target the region); 6.12 skips this test with RETPOLINE or IBT")
	rOptThunk    = newRule("can_optimize.thunk_jump", l61, optC+" insn_is_indirect_jump()", "CONFIG_RETPOLINE: a jmp/jcc into __indirect_thunk_start..end counts as an indirect jump")
	rOptJumpInto = newRule("can_optimize.jump_into", l6x, optC+" insn_jump_into_range()", "a relative jump of the function targets [addr+1, addr+5] (the kernel's end is inclusive)")
	rOptCopy     = newRule("copy_optimized.insn", l6x, optC+" copy_optimized_instructions()", "an instruction in the 5-byte region cannot be copied (__copy_instruction fails)")
	rOptCanBoost = newRule("copy_optimized.can_boost", l6x, optC+" copy_optimized_instructions()", "an instruction in the 5-byte region is not boostable")
	rOptResFtr   = newRule("copy_optimized.reserved_ftrace", l6x, optC+" copy_optimized_instructions()", "the region contains an ftrace location: EBUSY")
	rOptResAlt   = newRule("copy_optimized.reserved_smp_lock", l6x, optC+" copy_optimized_instructions()", "the region contains an SMP lock-prefix site (UP boot only): EBUSY")
	rOptResJL    = newRule("copy_optimized.reserved_jump_label", l6x, optC+" copy_optimized_instructions()", "the region overlaps a jump-label site: EBUSY")
	rOptResSC    = newRule("copy_optimized.reserved_static_call", l6x, optC+" copy_optimized_instructions()", "the region overlaps a static-call site: EBUSY")
	rOptOK       = newRule("can_optimize.ok", l6x, optC+" arch_prepare_optimized_kprobe()", "jump-optimized: the first 5 bytes become jmp rel32 to a detour buffer")

	// 2.6.17 booster
	rB6Text     = newRule("booster2006.not_text", l2617, kprobeC+" register_kprobe()", "not kernel text: EINVAL")
	rB6CanBoost = newRule("booster2006.can_boost", l2617, i386C+" can_boost()", "can_boost() on the raw bytes (prefixes 26 36 3E 64 65 66 F0 F2 F3 skipped; 2E, 67 refused; 0F xx by bitmap; one-byte rows 60 70 C0 D0 E0 F0 by rule; 9A refused)")
	rB6Resume   = newRule("booster2006.resume_special", l2617, i386C+" resume_execution()", "ret/lret/iret/far jmp (C2 C3 CA CB CF EA) and FF /4 /5: marked boostable after the first single-step whatever can_boost said (IP is already correct)")
	rB6NoChange = newRule("booster2006.resume_call", l2617, i386C+" resume_execution()", "9A and FF /2 /3 (calls): return address fixed, state unchanged")
	rB6Length   = newRule("booster2006.length", l2617, i386C+" resume_execution()", "(ip - slot) + 5 >= MAX_INSN_SIZE (16) after the first single-step: never boosted")
	rB6Lazy     = newRule("booster2006.lazy_jmp", l2617, i386C+" resume_execution()", "boosted from the second hit on: the first hit single-steps, then a jmp back is written at the IP it left")
	rB6Preempt  = newRule("booster2006.preempt", l2617, i386C+" kprobe_handler()", "CONFIG_PREEMPT: the boosted path is compiled out")
	rB6PostH    = newRule("booster2006.post_handler", l2617, i386C+" kprobe_handler()", "a post_handler is set: always single-stepped")
	rB6NoCheck  = newRule("booster2006.no_boundary_check", l2617, i386F+" arch_prepare_kprobe()", "2.6.17 accepts any address: a probe inside an instruction corrupts it")
	rB6Step     = newRule("booster2006.singlestep", l2617, i386C+" prepare_singlestep()", "TF single-step of the slot copy")

	// uprobes
	rUpDecode   = newRule("uprobe.decode", lup, upC+" uprobe_init_insn()", "the instruction does not decode: ENOEXEC")
	rUpPrefix   = newRule("uprobe.bad_prefix", lup, upC+" is_prefix_bad()", "ES, CS, SS, DS segment prefix or LOCK: ENOTSUPP")
	rUpMasking  = newRule("uprobe.masking_exception", lup, upC+" uprobe_init_insn()", "opcode 0x1F or mov to SS (8E /2): ENOTSUPP")
	rUpGood     = newRule("uprobe.good_insns", lup, upC+" good_insns_64/good_insns_32", "the first opcode byte is not in the good-instruction table (0x0F is, so every 0F xx passes; VEX/EVEX are judged by their opcode byte): ENOTSUPP")
	rUpBranch66 = newRule("uprobe.branch_66", lup, upC+" branch_setup_xol_ops()", "66-prefixed jmp/call/jcc: ENOTSUPP")
	rUpNop      = newRule("uprobe.emulate_nop", "uprobes-x86,uprobes-6.12,uprobes-6.18", upC+" branch_setup_xol_ops()", "opcode 0x90 (nop, pause, xchg with REX.B, VEX 0x90): emulated as a jump to the next instruction")
	rUpNopForms = newRule("uprobe.emulate_x86_nops", lup18, upC+" branch_setup_xol_ops() (measured on 6.18.44)", "one of the kernel's x86_nops exactly (BYTES_NOP1..8), or in a 64-bit task a 5-byte 0F 1F /0: emulated as a jump to the next instruction")
	rUpIsNop    = newRule("uprobe.emulate_insn_is_nop", lup72, upC+" branch_setup_xol_ops(); "+evalC+" insn_is_nop()", "insn_is_nop(): 90 without REX.B or F3, 0F 1F /0, mov %r,%r and lea 0(%r),%r of native size, jmp +0 (never VEX/EVEX): emulated, the 66-prefix branch check skipped")
	rUpOpt5     = newRule("uprobe.can_optimize_nop5", lup18, upC+" can_optimize() (measured on 6.18.44)", "a 5-byte 0F 1F /0 in a 64-bit task, not crossing a page: after its first hit the NOP becomes a call into [uprobes-trampoline] (no trap)")
	rUpOpt10    = newRule("uprobe.can_optimize_nop10", lup72, upC+" arch_uprobe_analyze_insn() can_optimize() is_optimizable_nop10()", "the 10-byte NOP 66 2E 0F 1F 84 .. in a 64-bit task, not crossing a page: ARCH_UPROBE_FLAG_CAN_OPTIMIZE, uprobe_init_insn() skipped (the CS prefix is not refused); after its first hit it becomes lea -0x80(%rsp),%rsp + call [uprobes-trampoline]")
	rUpRex2Mut  = newRule("uprobe.rex2_opcode_rewrite", lup72, evalC+" insn_is_nop() (opcode.value <<= 8 | 0x0f, kept)", "REX2 map-1 instruction: insn_is_nop() leaves OPCODE1 reading 0x0F (can_optimize calls it before uprobe_init_insn for 10-byte instructions), so branch_setup_xol_ops finds 0x0F with one opcode byte: single-stepped, never emulated as a branch")
	rUpOptPage  = newRule("uprobe.optimize_page_cross", lup18+","+lup72, upC+" can_optimize()", "the optimizable NOP crosses a page boundary: not optimized (no cross-page atomic write)")
	rUpJmp      = newRule("uprobe.emulate_jmp", lup, upC+" branch_setup_xol_ops()", "jmp rel (E9 EB): emulated")
	rUpCall     = newRule("uprobe.emulate_call", lup, upC+" branch_setup_xol_ops()", "call rel (E8): emulated")
	rUpJcc      = newRule("uprobe.emulate_jcc", lup, upC+" branch_setup_xol_ops()", "jcc (70-7F, 0F 80-8F; also a VEX/EVEX opcode byte 70-7F): emulated")
	rUpPush     = newRule("uprobe.emulate_push", lup, upC+" push_setup_xol_ops()", "push reg (50-57, or 41 50-57 in 64-bit): emulated")
	rUpXOL      = newRule("uprobe.xol", lup, upC+" default_xol_ops", "single-stepped out of line in the XOL slot with TF")
	rUpRIP      = newRule("uprobe.riprel", lup, upC+" riprel_analyze()", "RIP-relative operand rewritten to use a scratch register (si/di/bx)")
	rUpNoCheck  = newRule("uprobe.no_boundary_check", lup, eventsC, "uprobes do not check instruction boundaries: an offset inside an instruction is installed")
)

func blacklistRule(k BlacklistKind) *rule {
	switch k {
	case BlacklistSymbol:
		return rBlNokprobe
	case BlacklistKprobes:
		return rBlKprobes
	case BlacklistNoinstr:
		return rBlNoinstr
	case BlacklistEntry:
		return rBlEntry
	case BlacklistIRQEntry:
		return rBlIRQ
	}
	return rBlOther
}
