package kernelref

import "strings"

// The kernel files the oracle needs, relative to the top of the source tree.
var sourceMembers = []string{
	"Makefile",
	// The decoder, built the way arch/x86/tools/Makefile builds insn_sanity.
	"tools/arch/x86/lib/insn.c",
	"tools/arch/x86/lib/inat.c",
	"tools/arch/x86/lib/x86-opcode-map.txt",
	"tools/arch/x86/tools/gen-insn-attr-x86.awk",
	"tools/arch/x86/include/",
	"tools/include/",
	// The in-kernel copies, compared with the tools/ copies above.
	"arch/x86/lib/insn.c",
	"arch/x86/lib/inat.c",
	"arch/x86/lib/x86-opcode-map.txt",
	"arch/x86/tools/gen-insn-attr-x86.awk",
	// insn_is_nop (7.x uprobes).
	"arch/x86/lib/insn-eval.c",
	// The decision code.
	"arch/x86/kernel/kprobes/core.c",
	"arch/x86/kernel/uprobes.c",
	"arch/x86/include/asm/kprobes.h",
	"arch/x86/include/asm/uprobes.h",
	"arch/x86/include/asm/text-patching.h",
}

// syncPairs are kernel files whose tools/ copy is compiled instead; they must
// match line for line, except lines marked __ignore_sync_check__ (the include
// paths), which is the kernel's own rule for these copies.
var syncPairs = [][2]string{
	{"arch/x86/lib/insn.c", "tools/arch/x86/lib/insn.c"},
	{"arch/x86/lib/inat.c", "tools/arch/x86/lib/inat.c"},
	{"arch/x86/lib/x86-opcode-map.txt", "tools/arch/x86/lib/x86-opcode-map.txt"},
	{"arch/x86/tools/gen-insn-attr-x86.awk", "tools/arch/x86/tools/gen-insn-attr-x86.awk"},
}

const (
	coreC    = "arch/x86/kernel/kprobes/core.c"
	uprobesC = "arch/x86/kernel/uprobes.c"
)

// generated lists, per output file, the constructs cut from the kernel tree.
// Order matters: C needs declarations before use.
var generated = []genFile{
	{"ex_defines.h", []piece{
		{file: "arch/x86/include/asm/text-patching.h", kind: kindLines,
			name: `^#define\s+(INT3|JMP32|CALL)_INSN_(SIZE|OPCODE)\s`},
		{file: "arch/x86/include/asm/uprobes.h", kind: kindLines,
			name: `^#define\s+(MAX_UINSN_BYTES|UPROBE_XOL_SLOT_BYTES)\s`},
		{file: uprobesC, kind: kindRange, name: "#define UPROBE_FIX_IP", end: "#define\tUPROBE_TRAP_NR"},
		{file: uprobesC, kind: kindLines, name: `^#define\s+(OPCODE[123]|MODRM_REG)\(`},
		// 7.x: optimized uprobes (the 10-byte NOP) decide at analysis time.
		{file: uprobesC, kind: kindLines, name: `^#define\s+(LEA_INSN_SIZE|OPT_INSN_SIZE)\s`, optional: true},
		{file: "arch/x86/include/asm/uprobes.h", kind: kindLines, name: `^\s+ARCH_UPROBE_FLAG_\w+\s*=`, optional: true, fix: asEnum},
	}},
	{"ex_types.h", []piece{
		{file: "arch/x86/include/asm/kprobes.h", kind: kindStruct, name: "arch_specific_insn"},
		{file: "arch/x86/include/asm/uprobes.h", kind: kindStruct, name: "arch_uprobe"},
		{file: uprobesC, kind: kindStruct, name: "uprobe_xol_ops"},
	}},
	{"ex_kprobes.c", []piece{
		{file: coreC, kind: kindRange, name: "#define W(", end: "#undef W"},
		{file: coreC, kind: kindFunc, name: "__synthesize_relative_insn"},
		{file: coreC, kind: kindFunc, name: "synthesize_reljump"},
		{file: coreC, kind: kindFunc, name: "can_boost"},
		{file: coreC, kind: kindFunc, name: "__recover_probed_insn"},
		{file: coreC, kind: kindFunc, name: "recover_probed_instruction"},
		// 6.9+: can_probe refuses INT and UD instructions.
		{file: coreC, kind: kindFunc, name: "is_exception_insn", optional: true},
		{file: coreC, kind: kindFunc, name: "can_probe"},
		{file: coreC, kind: kindFunc, name: "__copy_instruction"},
		{file: coreC, kind: kindFunc, name: "prepare_singlestep"},
		{file: coreC, kind: kindFunc, name: "prepare_emulation", fix: longSize},
		{file: coreC, kind: kindFunc, name: "arch_copy_kprobe"},
		{file: coreC, kind: kindFunc, name: "arch_prepare_kprobe"},
	}},
	{"ex_uprobes.c", []piece{
		{file: uprobesC, kind: kindRange, name: "#define W(", end: "#undef W"},
		// 7.x: the NOP forms uprobes emulate and optimize.
		{file: "arch/x86/lib/insn-eval.c", kind: kindFunc, name: "insn_is_nop", optional: true},
		{file: uprobesC, kind: kindFunc, name: "is_optimizable_nop10", optional: true},
		{file: uprobesC, kind: kindFunc, name: "can_optimize", nth: 1, optional: true, fix: only64},
		{file: uprobesC, kind: kindFunc, name: "is_prefix_bad"},
		{file: uprobesC, kind: kindFunc, name: "uprobe_init_insn"},
		// The 64-bit riprel_analyze (the first definition); the 32-bit one is empty.
		{file: uprobesC, kind: kindFunc, name: "riprel_analyze", nth: 1, fix: only64},
		{file: uprobesC, kind: kindRange, name: "#define CASE_COND", end: "#define XF("},
		{file: uprobesC, kind: kindFunc, name: "is_cond_jmp_opcode"},
		{file: uprobesC, kind: kindFunc, name: "branch_clear_offset"},
		{file: uprobesC, kind: kindFunc, name: "branch_setup_xol_ops"},
		{file: uprobesC, kind: kindFunc, name: "push_setup_xol_ops"},
		{file: uprobesC, kind: kindFunc, name: "arch_uprobe_analyze_insn"},
	}},
}

// longSize lets a host (64-bit) build answer as an i386 kernel would: the kernel
// compares with sizeof(unsigned long), the word size of the kernel being modelled.
func longSize(s string) string {
	return strings.ReplaceAll(s, "sizeof(unsigned long)", "KR_SIZEOF_LONG")
}

// only64 keeps a CONFIG_X86_64-only function (the first definition: the
// kernel's i386 one follows under #else) out of the i386 build, where the
// kernel's version is empty (void) or returns false (bool).
func only64(s string) string {
	head := s[:strings.Index(s, ")")+1]
	body := " {}"
	if strings.Contains(head, "bool ") {
		body = " { return false; }"
	}
	return "#ifdef CONFIG_X86_64\n" + s + "#else\n" + head + body + "\n#endif\n"
}

// asEnum makes enumerator lines an anonymous enum.
func asEnum(s string) string { return "enum {\n" + s + "};\n" }
