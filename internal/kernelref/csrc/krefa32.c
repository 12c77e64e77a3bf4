/*
 * kboost's harness around the 32-bit ARM kprobes decision code: the kernel's
 * own arch/arm/probes/decode.c, decode-arm.c or decode-thumb.c and
 * kprobes/checkers-*.c compiled whole, plus pieces cut from kprobes/core.c,
 * actions-*.c and opt-arm.c (ex_a32_*.c, see internal/kernelref/a32_build.go).
 * The emulation and simulation routines (inline ARM assembly in the kernel)
 * are replaced by markers compared by address. Written for kboost; nothing
 * here is kernel code.
 *
 * Built twice: without KREF_THUMB (an ARM-mode kernel, !CONFIG_THUMB2_KERNEL:
 * A32 probes, optprobes) and with KREF_THUMB (CONFIG_THUMB2_KERNEL: T16/T32).
 *
 * Modes:
 *   krefa32 -names      the marker names, one a line, index order.
 *   krefa32 -bulk       little-endian u32 values on stdin until EOF: an A32
 *                       word, or (Thumb) an instruction value: a 32-bit one
 *                       with its first halfword in bits 31..16, a 16-bit one
 *                       in bits 15..0; for each, a 16-byte record on stdout
 *                       (see answer()).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;

#define __init
#define __kprobes
#define __visible
#define NOKPROBE_SYMBOL(x)
#define EXPORT_SYMBOL_GPL(x)
#define BUG_ON(c) do { if (c) abort(); } while (0)
#define unlikely(x) (x)
#define likely(x) (x)
#define fallthrough __attribute__((__fallthrough__))
#define hweight32(x) ((unsigned)__builtin_popcount((u32)(x)))
#define min(a, b) ((a) < (b) ? (a) : (b))
#define test_bit(nr, addr) ((*(addr) >> (nr)) & 1UL)
#define __LINUX_ARM_ARCH__ 7
#ifdef KREF_THUMB
#define CONFIG_THUMB2_KERNEL 1
#endif

/* Little-endian kernel: memory order is the opcode order. */
#define __opcode_to_mem_arm(x) ((u32)(x))
#define __opcode_to_mem_thumb16(x) ((u16)(x))
#define __mem_to_opcode_arm(x) ((u32)(x))
#define __mem_to_opcode_thumb16(x) ((u16)(x))
#define __opcode_thumb32_compose(first, second) (((u32)(u16)(first) << 16) | (u32)(u16)(second))
#define is_wide_instruction(instr) ((unsigned)(instr) >= 0xe800)
#define it_advance(cpsr) (cpsr) /* run time only */

/* The AArch32 register file as pt_regs lays it out (18 words). */
struct pt_regs { u32 uregs[18]; };
#define ARM_cpsr uregs[16]
#define ARM_pc uregs[15]
#define ARM_lr uregs[14]
#define ARM_sp uregs[13]
#define ARM_ip uregs[12]
#define ARM_fp uregs[11]
#define ARM_r0 uregs[0]
#define ARM_ORIG_r0 uregs[17]
#define PSR_T_BIT 0x00000020
#define PSR_V_BIT 0x10000000
#define PSR_C_BIT 0x20000000
#define PSR_Z_BIT 0x40000000
#define PSR_N_BIT 0x80000000

/* The real asm/probes.h (copied into inc/ by the build) gives the types. */
#include <asm/probes.h>
#include "ex_a32_defines.h"

#define arch_specific_insn arch_probes_insn
typedef u32 kprobe_opcode_t;

/*
 * Markers for the routines the kernel writes in assembly or that only run at
 * probe time: each has its own body so the compiler cannot merge them.
 */
static volatile int marker_hit;
#define MARK(name) \
	void name(probes_opcode_t o, struct arch_probes_insn *a, struct pt_regs *r) \
	{ (void)o; (void)a; (void)r; marker_hit = __COUNTER__ + 1; }

#ifndef KREF_THUMB
#define MARKERS(X) \
	X(emulate_ldrdstrd) X(emulate_ldr) X(emulate_str) \
	X(emulate_rd12rn16rm0rs8_rwflags) X(emulate_rd12rn16rm0_rwflags_nopc) \
	X(emulate_rd16rn12rm0rs8_rwflags_nopc) X(emulate_rd12rm0_noflags_nopc) \
	X(emulate_rdlo12rdhi16rn0rm8_rwflags_nopc)
#else
#define MARKERS(X) \
	X(t32_simulate_table_branch) X(t32_simulate_mrs) X(t32_simulate_cond_branch) \
	X(t32_simulate_branch) X(t32_simulate_ldr_literal) X(t32_emulate_ldrdstrd) \
	X(t32_emulate_ldrstr) X(t32_emulate_rd8rn16rm0_rwflags) X(t32_emulate_rd8pc16_noflags) \
	X(t32_emulate_rd8rn16_noflags) X(t32_emulate_rdlo12rdhi8rn16rm0_noflags) \
	X(t16_simulate_bxblx) X(t16_simulate_ldr_literal) X(t16_simulate_ldrstr_sp_relative) \
	X(t16_simulate_reladr) X(t16_simulate_add_sp_imm) X(t16_simulate_cbz) \
	X(t16_simulate_it) X(t16_singlestep_it) X(t16_simulate_cond_branch) \
	X(t16_simulate_branch) X(t16_emulate_loregs) X(t16_emulate_loregs_rwflags) \
	X(t16_emulate_loregs_noitrwflags) X(t16_emulate_hiregs) X(t16_emulate_push) \
	X(t16_emulate_pop_nopc) X(t16_emulate_pop_pc)
#endif
#define COMMON_MARKERS(X) \
	X(simulate_ldm1stm1) X(simulate_stm1_pc) X(simulate_ldm1_pc) \
	X(emulate_generic_r0_12_noflags) X(emulate_generic_r2_14_noflags) X(emulate_ldm_r3_15)

MARKERS(MARK)
COMMON_MARKERS(MARK)

/* The kernel's table code, whole. */
#include "probes/decode.c"
#ifndef KREF_THUMB
#include "probes/decode-arm.c"
#include "probes/kprobes/checkers-common.c"
#include "probes/kprobes/checkers-arm.c"
#else
#include "probes/decode-thumb.c"
#include "probes/kprobes/checkers-common.c"
#include "probes/kprobes/checkers-thumb.c"
#endif

/* The names, index order; "-" for none. */
#define NAME(n) #n,
#define ADDR(n) (const void *)n,
static const char *const names[] = {
	"-", "probes_simulate_nop", "probes_emulate_none",
#ifndef KREF_THUMB
	"simulate_bbl", "simulate_blx1", "simulate_blx2bx", "simulate_mrs", "simulate_mov_ipsp",
#endif
	MARKERS(NAME) COMMON_MARKERS(NAME)
};
static const void *const addrs[] = {
	NULL, (const void *)probes_simulate_nop, (const void *)probes_emulate_none,
#ifndef KREF_THUMB
	(const void *)simulate_bbl, (const void *)simulate_blx1, (const void *)simulate_blx2bx,
	(const void *)simulate_mrs, (const void *)simulate_mov_ipsp,
#endif
	MARKERS(ADDR) COMMON_MARKERS(ADDR)
};

static int name_index(const void *p)
{
	for (unsigned i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++)
		if (addrs[i] == p)
			return (int)i;
	return 255;
}

/* What arch_prepare_kprobe needs around it (core.h declares the type). */
typedef enum probes_insn(kprobe_decode_insn_t)(probes_opcode_t, struct arch_probes_insn *, bool,
						const union decode_action *, const struct decode_checker *[]);
enum probes_insn kprobe_decode_ldmstm(kprobe_opcode_t insn, struct arch_probes_insn *asi,
				      const struct decode_header *h);
static int last_decode; /* the decoder's answer, recorded by the cut arch_prepare_kprobe */
struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	struct arch_probes_insn ainsn;
};
static kprobe_opcode_t slot_page[MAX_INSN_SIZE];
static kprobe_opcode_t *get_insn_slot(void) { return slot_page; }
#define flush_insns(addr, size) ((void)(addr), (void)(size))

#include "ex_a32_kprobes.c"

static int cc_index(probes_check_cc *f)
{
	for (int i = 0; i < 16; i++)
		if (probes_condition_checks[i] == f)
			return i;
#ifdef KREF_THUMB
	if (f == thumb_check_cc)
		return 16;
#endif
	return 255;
}

/*
 * One record, 16 bytes:
 *   0  ret: 0 or the negated errno (as a signed byte)
 *   1  the decoder's answer (INSN_REJECTED, INSN_GOOD, INSN_GOOD_NO_SLOT)
 *   2  handler name index (insn_handler), 255 unknown
 *   3  condition-check index: 0..15 probes_condition_checks[], 16 thumb_check_cc
 *   4  stack_space (s16)
 *   6  flags: 1 can_optimize(), 2 can_kprobe_direct_exec(register_usage_flags),
 *      4 the single-step routine is t16_singlestep_it (Thumb)
 *   7  0
 *   8  the slot's first 8 bytes (memory order) when INSN_GOOD, else 0
 */
static union { u32 w[4]; u16 h[8]; } text;

static void answer(u32 first, u32 second, int wide, u8 rec[16])
{
	struct kprobe kp;
	memset(rec, 0, 16);
	memset(&kp, 0, sizeof(kp));
	memset(slot_page, 0, sizeof(slot_page));
	memset(&text, 0, sizeof(text));
#ifndef KREF_THUMB
	(void)second;
	(void)wide;
	text.w[0] = first;
#else
	text.h[0] = (u16)first;
	text.h[1] = wide ? (u16)second : 0;
#endif
	kp.addr = text.w;
	int ret = arch_prepare_kprobe(&kp);
	rec[0] = (u8)(int8_t)ret;
	rec[1] = (u8)last_decode;
	rec[2] = (u8)name_index((const void *)kp.ainsn.insn_handler);
	rec[3] = (u8)cc_index(kp.ainsn.insn_check_cc);
	rec[4] = (u8)(kp.ainsn.stack_space & 0xff);
	rec[5] = (u8)((kp.ainsn.stack_space >> 8) & 0xff);
#ifndef KREF_THUMB
	if (ret == 0 && can_optimize(&kp))
		rec[6] |= 1;
	if (ret == 0 && can_kprobe_direct_exec(kp.ainsn.register_usage_flags))
		rec[6] |= 2;
#else
	if (kp.ainsn.insn_singlestep == t16_singlestep_it)
		rec[6] |= 4;
#endif
	if (ret == 0 && last_decode == INSN_GOOD)
		memcpy(rec + 8, slot_page, 8);
}

/* Value order (Thumb: first halfword in bits 31..16 when wide). */
static void answer_value(u32 v, u8 rec[16])
{
#ifndef KREF_THUMB
	answer(v, 0, 0, rec);
#else
	if (v >> 16)
		answer(v >> 16, v & 0xffff, 1, rec);
	else
		answer(v, 0, 0, rec);
#endif
}

static int bulk(void)
{
	u32 w;
	while (fread(&w, 4, 1, stdin) == 1) {
		u8 rec[16];
		answer_value(w, rec);
		if (fwrite(rec, 16, 1, stdout) != 1)
			return 1;
	}
	return fflush(stdout) != 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-names") == 0) {
		for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			puts(names[i]);
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "-bulk") == 0)
		return bulk();
	fprintf(stderr, "usage: krefa32 -names | -bulk\n");
	return 2;
}
