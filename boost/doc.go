// Package boost predicts what a given kernel's probe machinery does with a probe
// on an x86 or ARM64 instruction: reject it (with the kernel's errno), hand it to ftrace,
// emulate it, single-step it out of line, or boost it (run it out of line with a
// jmp back), and whether a kprobe there can be jump-optimized.
//
// # Contract
//
// A Policy is one kernel's rules as a value. Policies: linux-6.1 (x86-64 and
// i386, the reference: Debian's linux-source-6.1), linux-6.12 (Debian's
// linux-source-6.12: the rules that changed, as data and functions of their
// own; the rest is 6.1's), linux-7.2 (Debian unstable's linux-source-7.2: 6.12's
// rules with 7.2's decoder), linux-2.6.17-i386 (the original kprobe-booster with its lazy -1/0/1 state machine, replayable
// with Booster2006), uprobes-x86 (6.1) and the x86 uprobes of later versions,
// uprobes-6.12, uprobes-6.18 (no Debian source: upstream and the measured
// 6.18 host) and uprobes-7.2, whose Decision.Optimizable says the kernel
// rewrites the NOP into a call after its first hit; for ARM64 linux-6.1-arm64, uprobes-arm64
// (and per version linux-6.12-arm64, linux-7.2-arm64, uprobes-6.12-arm64,
// uprobes-6.18-arm64, which has no Debian source and is checked against 6.18.0's
// code compiled from files fetched by hand, and uprobes-7.2-arm64: the
// a64Kernel that changed) and the boost-arm64 model (steppable, PC-free instructions run from the slot
// followed by B addr+4), which decide from the raw A64 word with the kernel's
// own insn.h masks (a64_insn.go; rule ids arm64.*, uprobe_arm64.*,
// boost_arm64.*). Lookup finds one by name.
//
//   - Policy.Classify decides one decoded instruction at its address with only
//     an Env (configuration, optional site tables, slot address). The address is
//     assumed to be an instruction boundary; there is no function context, so
//     notrace and optprobe eligibility are not decided.
//   - Policy.AuditFunc decodes a function linearly from its symbol start, as
//     can_probe() does, and decides every instruction boundary, the ftrace site
//     (the 5-byte fentry nop/call at the entry, after an ENDBR), the IBT sym+0 ->
//     sym+4 redirection, notrace, and optprobe eligibility per can_optimize().
//     FuncAudit.At answers any offset, including non-boundaries (EILSEQ after the
//     site checks, as the kernel orders them; policies without a boundary check
//     decode whatever starts there).
//   - Policy.Explain and FuncAudit.ExplainAt list every rule tried, in the
//     kernel's order, with Pass / Fail / Decides / Unknown / Note.
//   - Policy.OpcodeGrid gives a verdict per opcode (and per ModRM.reg of group
//     opcodes) of a map, for `kboost opcodes`.
//
// Decisions carry the rules behind a verdict as stable dotted ids (Reason.Rule),
// all listed with their kernel location by Rules(). The slot image (Decision.Slot)
// is what the kernel writes to the instruction slot: the copied instruction with
// its RIP-relative displacement rebased to Env.SlotAddr, then E9 rel32 back
// (boost) or CC (int3 single-step).
//
// Decisions follow the kernel's code, quirks included, not the architecture:
// the kernel decoder keeps only the opcode byte of VEX/EVEX instructions, so
// can_boost, prepare_emulation and the uprobes tables judge `c5 f8 77`
// (vzeroupper) as if it were `77` (ja): it is emulated as a jcc. can_boost looks
// at no prefix but 2E and 67 and at none at all for 0F xx opcodes.
// insn_masking_exception tests 0x1F (POP DS) where it means POP SS (0x17).
// prepare_singlestep boosts when 15 - len >= 5. insn_jump_into_range's end is
// inclusive ([addr+1, addr+5]). alternatives_text_reserved(addr, addr) never
// matches a single kprobe. uprobes accept every 0F xx because 0x0F is set in the
// one-byte good-instruction table, and emulate any opcode byte 0x90 (pause,
// xchg %eax,%r8d, VEX kmovw) as a nop.
//
// Site knowledge comes through the Sites interface (nil: nothing known). A rule
// whose table is missing is recorded with Outcome Unknown and assumed not to
// apply. StaticSites with SiteTable implements Sites from sorted address sets.
//
// # Where each rule lives (Linux 6.1 unless noted)
//
//	rule id prefix          kernel file: function
//	trace_kprobe.notrace    kernel/trace/trace_kprobe.c: within_notrace_func
//	ibt.skip_endbr          arch/x86/kernel/kprobes/core.c: arch_adjust_kprobe_addr
//	ftrace.*                kernel/kprobes.c: check_ftrace_location; kprobes/ftrace.c
//	address_safe.*          kernel/kprobes.c: check_kprobe_address_safe
//	blacklist.*             kernel/kprobes.c: within_kprobe_blacklist, populate_kprobe_blacklist
//	site.jump_label         kernel/jump_label.c: jump_label_text_reserved
//	site.static_call        kernel/static_call_inline.c: static_call_text_reserved
//	site.bug                lib/bug.c: find_bug
//	site.cfi_preamble       kernel/kprobes.c: is_cfi_preamble_symbol
//	site.smp_lock           arch/x86/kernel/alternative.c: alternatives_text_reserved
//	can_probe.*             arch/x86/kernel/kprobes/core.c: can_probe (6.12: is_exception_insn)
//	copy_insn.*             arch/x86/kernel/kprobes/core.c: __copy_instruction; asm/insn.h
//	prepare_emulation.*     arch/x86/kernel/kprobes/core.c: prepare_emulation
//	prepare_singlestep.*    arch/x86/kernel/kprobes/core.c: prepare_singlestep
//	can_boost.*             arch/x86/kernel/kprobes/core.c: can_boost
//	can_optimize.*          arch/x86/kernel/kprobes/opt.c: can_optimize; kernel/kprobes.c
//	copy_optimized.*        arch/x86/kernel/kprobes/opt.c: copy_optimized_instructions
//	booster2006.*           arch/i386/kernel/kprobes.c (2.6.17 + April 2006 patch)
//	uprobe.*                arch/x86/kernel/uprobes.c
//	decode.*                arch/x86/lib/insn.c (kernel decoder behaviour)
//
// # The kernel's decoder
//
// Rules see an instruction the way the kernel's decoder (arch/x86/lib/insn.c)
// does, which differs from the CPU (package decode) on encodings compilers do
// not emit: it folds a Xen/KVM emulate prefix into the next instruction, decodes
// (i64) opcodes and undefined slots in 64-bit mode, keeps at most four distinct
// legacy prefixes and one REX (a further one is taken as the opcode), decodes
// mod for mov cr/dr, takes 8F as POP Ev (no XOP), and follows its own opcode
// map for the escape maps (empty and prefix-variant slots, VEX-only and
// EVEX-only opcodes). Each kernel version's decoder is a value (kdecoder) with
// that map generated from its own decoder: x86_kmap_table.go from Debian's 6.1
// source, x86_kmap612_table.go from 6.12's, which also decodes REX2 (D5: the
// opcode after it is kept alone, even for map 1), EVEX map 4 and VEX map 7,
// x86_kmap72_table.go from 7.2's, which adds XOP, stops the INAT_INV64 opcodes at
// the opcode byte in 64-bit mode and no longer sees VEX after a REX
// (TestOracleKernelEscMap regenerates and checks them); TestOracleKernelDecoder
// compares the whole kernel view with each version's decoder on structured
// and random inputs (KBOOST_ORACLE=1). Not
// modelled: VEX/EVEX after legacy or REX prefixes (the kernel decodes them; the
// refusal of package decode counts as the kernel's).
package boost
