package kernelref

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// The arm64 oracle: the kernel's arm64 kprobes/uprobes decision code (insn.h
// predicates, insn.c, decode-insn.c, kprobes.c arch_prepare_kprobe, uprobes.c
// arch_uprobe_analyze_insn) cut from the source tree and compiled for the host
// with csrc/krefa64.c. All of it is plain C on a u32, so the host build runs the
// kernel's exact decisions.

//go:embed csrc/krefa64.c
var krefA64C []byte

// sourceMembersA64 are the kernel files the arm64 oracle needs.
var a64Source = sourceSet{keyTag: "a64|", dirTag: "a64src-", members: sourceMembersA64, anchor: a64DecodeC}

var sourceMembersA64 = []string{
	"Makefile",
	"arch/arm64/include/asm/insn.h",
	"arch/arm64/include/asm/insn-def.h",
	"arch/arm64/include/asm/brk-imm.h",
	"arch/arm64/include/asm/debug-monitors.h",
	"arch/arm64/include/asm/probes.h",
	"arch/arm64/include/asm/uprobes.h",
	"arch/arm64/lib/insn.c",
	"arch/arm64/kernel/probes/decode-insn.c",
	"arch/arm64/kernel/probes/decode-insn.h",
	"arch/arm64/kernel/probes/kprobes.c",
	"arch/arm64/kernel/probes/uprobes.c",
	"kernel/events/uprobes.c",
}

const (
	a64InsnH    = "arch/arm64/include/asm/insn.h"
	a64InsnC    = "arch/arm64/lib/insn.c"
	a64DecodeC  = "arch/arm64/kernel/probes/decode-insn.c"
	a64DecodeH  = "arch/arm64/kernel/probes/decode-insn.h"
	a64KprobesC = "arch/arm64/kernel/probes/kprobes.c"
	a64UprobesC = "arch/arm64/kernel/probes/uprobes.c"
)

// generatedA64 lists, per output file, what is cut from the tree.
var generatedA64 = []genFile{
	{"ex_a64_defines.h", []piece{
		{file: "arch/arm64/include/asm/insn-def.h", kind: kindLines, name: `^#define\s+(AARCH64_INSN_SIZE|AARCH64_BREAK_MON)\s`},
		{file: "arch/arm64/include/asm/brk-imm.h", kind: kindLines, name: `^#define\s+(KPROBES_BRK_IMM|UPROBES_BRK_IMM|KPROBES_BRK_SS_IMM)\s`},
		{file: "arch/arm64/include/asm/debug-monitors.h", kind: kindLines, name: `^#define\s+BRK64_OPCODE_(KPROBES|KPROBES_SS|UPROBES)\s`},
		{file: "arch/arm64/include/asm/uprobes.h", kind: kindLines, name: `^#define\s+UPROBE_SWBP_INSN\s`},
		{file: a64DecodeH, kind: kindLines, name: `^#define\s+MAX_ATOMIC_CONTEXT_SIZE\s`},
		{file: a64DecodeH, kind: kindRange, name: "enum probe_insn {", end: "};"},
		// 6.1: the encoding-class table; 6.12 tests the class with a mask (class_branch_sys).
		{file: a64InsnH, kind: kindRange, name: "enum aarch64_insn_encoding_class {", end: "};", optional: true},
		{file: a64InsnH, kind: kindRange, name: "enum aarch64_insn_hint_cr_op {", end: "};"},
		// 7.x keeps the slot in ainsn.xol_insn (the harness reads it through KR_SLOT).
		{file: "arch/arm64/include/asm/probes.h", kind: kindLines, name: `^\s+kprobe_opcode_t \*xol_insn;`, optional: true,
			fix: func(string) string { return "#define KR_XOL_IN_AINSN 1\n" }},
		{file: a64InsnH, kind: kindRange, name: "enum aarch64_insn_special_register {", end: "};"},
	}},
	{"ex_a64_types.h", []piece{
		{file: "arch/arm64/include/asm/probes.h", kind: kindStruct, name: "arch_probe_insn"},
		{file: "arch/arm64/include/asm/probes.h", kind: kindStruct, name: "arch_specific_insn"},
		{file: "arch/arm64/include/asm/uprobes.h", kind: kindStruct, name: "arch_uprobe"},
	}},
	{"ex_a64_insn.c", []piece{
		{file: a64InsnH, kind: kindRange, name: "#define\t__AARCH64_INSN_FUNCS(", end: "#undef\t__AARCH64_INSN_FUNCS"},
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_is_adr_adrp"},
		// 6.1 defines these in insn.c, 6.12 and later as inline functions in insn.h.
		{file: a64InsnC, kind: kindRange, name: "static const int aarch64_insn_encoding_class[] = {", end: "};", optional: true},
		{file: a64InsnC, kind: kindFunc, name: "aarch64_get_insn_class", optional: true},
		{file: a64InsnC, kind: kindFunc, name: "aarch64_insn_is_steppable_hint", optional: true},
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_is_steppable_hint", optional: true},
		{file: a64InsnC, kind: kindFunc, name: "aarch64_insn_uses_literal", optional: true},
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_is_branch", optional: true},
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_uses_literal", optional: true},
		{file: a64InsnC, kind: kindFunc, name: "aarch64_insn_is_branch", optional: true},
		{file: a64InsnC, kind: kindFunc, name: "aarch64_insn_extract_system_reg"},
		// 7.x simulates NOP (aarch64_insn_is_nop: the word is aarch64_insn_gen_nop()).
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_gen_hint", optional: true},
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_gen_nop", optional: true},
		{file: a64InsnH, kind: kindFunc, name: "aarch64_insn_is_nop", optional: true},
	}},
	{"ex_a64_decode.c", []piece{
		{file: a64DecodeC, kind: kindFunc, name: "aarch64_insn_is_steppable"},
		{file: a64DecodeC, kind: kindFunc, name: "arm_probe_decode_insn"},
		{file: a64DecodeC, kind: kindFunc, name: "is_probed_address_atomic"},
		{file: a64DecodeC, kind: kindFunc, name: "arm_kprobe_decode_insn"},
		{file: a64KprobesC, kind: kindFunc, name: "arch_prepare_ss_slot"},
		{file: a64KprobesC, kind: kindFunc, name: "arch_prepare_simulate"},
		{file: a64KprobesC, kind: kindFunc, name: "arch_prepare_kprobe"},
		{file: a64UprobesC, kind: kindFunc, name: "arch_uprobe_analyze_insn"},
		{file: "kernel/events/uprobes.c", kind: kindFunc, name: "is_swbp_insn"},
		{file: "kernel/events/uprobes.c", kind: kindFunc, name: "is_trap_insn"},
	}},
}

// BuildA64 is a built arm64 oracle.
type BuildA64 struct {
	Dir     string // holds krefa64 and the generated sources
	Version string // kernel version from the top Makefile
	Tarball string // "" for a hand tree
	// Tree and Provenance: the hand tree it was built from (Options.Tree) and
	// that tree's PROVENANCE text.
	Tree, Provenance string
}

// Bin is the oracle program.
func (b *BuildA64) Bin() string { return filepath.Join(b.Dir, "krefa64") }

// PrepareA64 extracts the arm64 files (once per tarball) and builds the arm64
// oracle (once per tarball and harness version), caching both under
// CacheDir/kernelref.
func PrepareA64(opts Options) (*BuildA64, error) {
	src, err := prepareSource(opts, a64Source)
	if err != nil {
		return nil, err
	}
	tree := src.tree
	dir := filepath.Join(src.root, "a64build-"+src.key+"-"+shortHash(string(krefA64C)+fingerprint(generatedA64)))
	if err := ensureDir(dir, func(tmp string) error { return buildA64(tree, tmp) }); err != nil {
		return nil, err
	}
	b := &BuildA64{Dir: dir, Version: src.version, Tarball: src.tarball}
	if opts.Tree != "" {
		p, err := os.ReadFile(filepath.Join(opts.Tree, ProvenanceFile))
		if err != nil {
			return nil, fmt.Errorf("a hand tree needs its %s: %v: %w", ProvenanceFile, err, ErrNoHandTree)
		}
		b.Tree, b.Provenance = opts.Tree, string(p)
	}
	return b, nil
}

func buildA64(tree, dir string) error {
	if err := generateFiles(tree, dir, generatedA64); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "krefa64.c"), krefA64C, 0o644); err != nil {
		return err
	}
	return run(dir, nil, "gcc", "-O2", "-Wall", "-Werror=implicit-function-declaration",
		"-Werror=incompatible-pointer-types", "-Wno-unused-function", "-I", dir,
		"-o", filepath.Join(dir, "krefa64"), filepath.Join(dir, "krefa64.c"))
}
