package kernelref

import (
	_ "embed"
	"os"
	"path/filepath"
	"strings"
)

// The 32-bit ARM oracle: the kernel's arch/arm/probes/ table walker
// (decode.c), its decode tables (decode-arm.c, decode-thumb.c) and the
// kprobes checkers (kprobes/checkers-*.c) compiled whole for the host, with
// arch_prepare_kprobe (kprobes/core.c), the custom decoders and action tables
// (kprobes/actions-*.c) and can_optimize (kprobes/opt-arm.c) cut from the tree,
// around csrc/krefa32.c. Two programs: an ARM-mode kernel (krefa32) and a
// CONFIG_THUMB2_KERNEL one (krefa32t).

//go:embed csrc/krefa32.c
var krefA32C []byte

var a32Source = sourceSet{keyTag: "a32|", dirTag: "a32src-", members: sourceMembersA32, anchor: a32CoreC}

var sourceMembersA32 = []string{
	"Makefile",
	"arch/arm/probes/",
	"arch/arm/include/asm/probes.h",
	"arch/arm/include/asm/kprobes.h",
}

const (
	a32Probes   = "arch/arm/probes/"
	a32CoreC    = a32Probes + "kprobes/core.c"
	a32CoreH    = a32Probes + "kprobes/core.h"
	a32CommonC  = a32Probes + "kprobes/actions-common.c"
	a32ActArmC  = a32Probes + "kprobes/actions-arm.c"
	a32ActThumb = a32Probes + "kprobes/actions-thumb.c"
	a32OptC     = a32Probes + "kprobes/opt-arm.c"
)

// recordDecode makes the cut arch_prepare_kprobe keep the decoder's answer.
func recordDecode(s string) string {
	const call = "switch ((*decode_insn)("
	return strings.Replace(s, call, "switch (last_decode = (*decode_insn)(", 1)
}

func a32Generated(thumb bool) []genFile {
	defs := genFile{"ex_a32_defines.h", []piece{
		{file: "arch/arm/include/asm/kprobes.h", kind: kindLines, name: `^#define\s+MAX_INSN_SIZE\s`},
		{file: a32CoreH, kind: kindLines, name: `^#define\s+KPROBE_(ARM|THUMB16|THUMB32)_BREAKPOINT_INSTRUCTION\s`},
	}}
	kp := genFile{"ex_a32_kprobes.c", []piece{
		{file: a32CommonC, kind: kindFunc, name: "kprobe_decode_ldmstm"},
	}}
	if thumb {
		kp.pieces = append(kp.pieces,
			piece{file: a32ActThumb, kind: kindRange, name: "#define t32_emulate_rd8rn16rm0ra12_noflags", end: "\t\tt32_emulate_rdlo12rdhi8rn16rm0_noflags"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t32_decode_cond_branch"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t32_decode_ldmstm"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t16_decode_it"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t16_decode_cond_branch"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t16_decode_hiregs"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t16_decode_push"},
			piece{file: a32ActThumb, kind: kindFunc, name: "t16_decode_pop"},
			piece{file: a32ActThumb, kind: kindRange, name: "const union decode_action kprobes_t16_actions", end: "const struct decode_checker *kprobes_t16_checkers"},
		)
	} else {
		kp.pieces = append(kp.pieces,
			piece{file: a32ActArmC, kind: kindRange, name: "const union decode_action kprobes_arm_actions", end: "const struct decode_checker *kprobes_arm_checkers"},
			piece{file: a32OptC, kind: kindLines, name: `^#define\s+(ARM_REG_PC|can_kprobe_direct_exec)\b`},
			piece{file: a32OptC, kind: kindFunc, name: "can_optimize"},
		)
	}
	kp.pieces = append(kp.pieces, piece{file: a32CoreC, kind: kindFunc, name: "arch_prepare_kprobe", fix: recordDecode})
	return []genFile{defs, kp}
}

// The headers the compiled kernel files include; krefa32.c defines what they
// would, so they are empty (asm/probes.h is the kernel's own).
var a32EmptyHeaders = []string{
	"linux/kernel.h", "linux/types.h", "linux/stddef.h", "linux/module.h", "linux/ptrace.h",
	"linux/bug.h", "asm/system_info.h", "asm/ptrace.h", "asm/kprobes.h",
}

// BuildA32 is a built 32-bit ARM oracle pair.
type BuildA32 struct {
	Dir     string
	Version string
	Tarball string
}

// Bin is the oracle program for an ARM-mode kernel (thumb false) or a
// CONFIG_THUMB2_KERNEL one.
func (b *BuildA32) Bin(thumb bool) string {
	if thumb {
		return filepath.Join(b.Dir, "krefa32t")
	}
	return filepath.Join(b.Dir, "krefa32")
}

// PrepareA32 extracts arch/arm/probes (once per tarball) and builds both
// oracles (once per tarball and harness version) under CacheDir/kernelref.
func PrepareA32(opts Options) (*BuildA32, error) {
	src, err := prepareSource(opts, a32Source)
	if err != nil {
		return nil, err
	}
	tree := src.tree
	fp := fingerprint(a32Generated(false)) + fingerprint(a32Generated(true))
	dir := filepath.Join(src.root, "a32build-"+src.key+"-"+shortHash(string(krefA32C)+fp+strings.Join(a32EmptyHeaders, ",")))
	if err := ensureDir(dir, func(tmp string) error { return buildA32(tree, tmp) }); err != nil {
		return nil, err
	}
	return &BuildA32{Dir: dir, Version: src.version, Tarball: src.tarball}, nil
}

func buildA32(tree, dir string) error {
	inc := filepath.Join(dir, "inc")
	for _, h := range a32EmptyHeaders {
		p := filepath.Join(inc, filepath.FromSlash(h))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte("/* empty: see krefa32.c */\n"), 0o644); err != nil {
			return err
		}
	}
	probesH, err := os.ReadFile(filepath.Join(tree, "arch/arm/include/asm/probes.h"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(inc, "asm", "probes.h"), probesH, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "krefa32.c"), krefA32C, 0o644); err != nil {
		return err
	}
	for _, thumb := range []bool{false, true} {
		sub := filepath.Join(dir, "arm")
		bin, def := "krefa32", "-UKREF_THUMB"
		if thumb {
			sub, bin, def = filepath.Join(dir, "thumb"), "krefa32t", "-DKREF_THUMB"
		}
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		if err := generateFiles(tree, sub, a32Generated(thumb)); err != nil {
			return err
		}
		if err := run(dir, nil, "gcc", "-O2", "-Wall", "-Werror=implicit-function-declaration",
			"-Werror=incompatible-pointer-types", "-Wno-unused-function", "-Wno-unused-variable",
			"-Wno-unused-but-set-variable", def, "-I", sub, "-I", inc, "-I", filepath.Join(tree, "arch/arm"),
			"-o", filepath.Join(dir, bin), filepath.Join(dir, "krefa32.c")); err != nil {
			return err
		}
	}
	return nil
}
