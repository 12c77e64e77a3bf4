/*
 * kboost's harness around the arm64 kprobes/uprobes decision code, cut from a
 * kernel tree at build time (ex_a64_*.{h,c}, see internal/kernelref/a64_build.go).
 * This file holds only what the kernel code needs from its surroundings: the
 * kernel's integer types, a fake text mapping with one symbol, stub simulation
 * handlers (compared by address to name the one chosen), and a fake
 * instruction slot. Written for kboost; nothing here is kernel code.
 *
 * Modes:
 *   krefa64            line queries on stdin, one answer line each:
 *     k MIS EXT SYM N W0 .. W(N-1) P
 *        a kprobe on word P of a text of N words; the symbol starts at word
 *        SYM (-1: no symbol, kallsyms fails); MIS is added to the probe
 *        address (byte misalignment); EXT: the address is in the exception
 *        table. Answer: "ret DEC HANDLER SLOT0 SLOT1 RESTORE" (hex words,
 *        "-" when no slot).
 *     u MIS W
 *        prepare_uprobe()'s is_trap_insn() then arch_uprobe_analyze_insn() on
 *        word W at a user address + MIS. Answer: "ret DEC HANDLER SIMULATE".
 *   krefa64 -bulk      little-endian words on stdin until EOF; for each, two
 *                      bytes on stdout: the kprobe answer (probe at sym+0,
 *                      aligned) and the uprobe answer, each
 *                      ok<<7 | dec<<4 | handler (see handler_index).
 *   krefa64 -sweep START COUNT STEP
 *                      the same two bytes for the words START, START+STEP, ...
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint32_t u32;
typedef uint64_t u64;
typedef uint32_t __le32;
typedef u32 pstate_check_t(unsigned long);

#define __kprobes
#define __always_inline inline __attribute__((always_inline))
#define BUILD_BUG_ON(c) ((void)sizeof(char[1 - 2 * !!(c)]))
#define le32_to_cpu(x) ((u32)(x))
#define cpu_to_le32(x) ((u32)(x))
#define IS_ALIGNED(x, a) ((((unsigned long)(x)) & ((a) - 1)) == 0)
#define pr_err(...) fprintf(stderr, __VA_ARGS__)
#define ENOTSUPP 524

#define __weak
struct pt_regs { u64 regs[31]; u64 sp, pc, pstate; };
typedef void(probes_handler_t)(u32 opcode, long addr, struct pt_regs *);
typedef u32 probe_opcode_t;
typedef u32 kprobe_opcode_t;
typedef __le32 uprobe_opcode_t;

#include "ex_a64_defines.h"
#include "ex_a64_types.h"

/* The slot pointer and the resume address: api.insn/api.restore up to 6.x,
 * ainsn.xol_insn/xol_restore in 7.x (ex_a64_defines.h says which). */
#ifdef KR_XOL_IN_AINSN
#define KR_SLOT(kp) ((kp).ainsn.xol_insn)
#define KR_RESTORE(kp) ((kp).ainsn.xol_restore)
#else
#define KR_SLOT(kp) ((kp).ainsn.api.insn)
#define KR_RESTORE(kp) ((kp).ainsn.api.restore)
#endif

/* The simulation handlers: only their identity matters. */
#define SIM(name) \
	void name(u32 opcode, long addr, struct pt_regs *regs) { (void)opcode; (void)addr; (void)regs; abort(); }
SIM(simulate_adr_adrp)
SIM(simulate_b_bl)
SIM(simulate_b_cond)
SIM(simulate_br_blr_ret)
SIM(simulate_cbz_cbnz)
SIM(simulate_tbz_tbnz)
SIM(simulate_ldr_literal)
SIM(simulate_ldrsw_literal)
SIM(simulate_br_blr) /* 7.x: RET has its own handler */
SIM(simulate_ret)
SIM(simulate_nop)    /* 7.x */

static probes_handler_t *const handlers[] = {
	NULL, simulate_b_cond, simulate_cbz_cbnz, simulate_tbz_tbnz, simulate_adr_adrp,
	simulate_b_bl, simulate_br_blr_ret, simulate_ldr_literal, simulate_ldrsw_literal,
	simulate_br_blr, simulate_ret, simulate_nop,
};
static const char *const handler_names[] = {
	"-", "simulate_b_cond", "simulate_cbz_cbnz", "simulate_tbz_tbnz", "simulate_adr_adrp",
	"simulate_b_bl", "simulate_br_blr_ret", "simulate_ldr_literal", "simulate_ldrsw_literal",
	"simulate_br_blr", "simulate_ret", "simulate_nop",
};

static int handler_index(probes_handler_t *h)
{
	for (unsigned i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
		if (handlers[i] == h)
			return i;
	return 15;
}

/* The fake kernel: one text of words, one symbol, one exception entry. */
#define MAXTEXT 256
static u32 text[MAXTEXT + 2];
static long sym_start = -1; /* word index of the symbol start, -1: none */
static long text_len;
static bool in_extable;

struct kprobe {
	kprobe_opcode_t *addr;
	kprobe_opcode_t opcode;
	struct arch_specific_insn ainsn;
};

#define MMCF_AARCH32 0x1
struct mm_struct { struct { unsigned long flags; } context; };

static int kallsyms_lookup_size_offset(unsigned long addr, unsigned long *size, unsigned long *offset)
{
	unsigned long start = (unsigned long)&text[0];
	if (sym_start < 0 || addr < start + 4 * sym_start || addr >= start + 4 * text_len)
		return 0;
	if (size)
		*size = 4 * (text_len - sym_start);
	if (offset)
		*offset = addr - (start + 4 * sym_start);
	return 1;
}

static const void *search_exception_tables(unsigned long addr)
{
	(void)addr;
	return in_extable ? (const void *)1 : NULL;
}

static u32 slot_page[4];
static kprobe_opcode_t *get_insn_slot(void) { return slot_page; }

static int aarch64_insn_patch_text_nosync(void *addr, u32 insn)
{
	memcpy(addr, &insn, 4);
	return 0;
}

#include "ex_a64_insn.c"
#include "ex_a64_decode.c"

static void kprobe_query(char *line)
{
	long mis, ext, sym, n, p;
	char *s = line;
	mis = strtol(s, &s, 10);
	ext = strtol(s, &s, 10);
	sym = strtol(s, &s, 10);
	n = strtol(s, &s, 10);
	if (n < 1 || n > MAXTEXT) {
		puts("error bad text length");
		return;
	}
	for (long i = 0; i < n; i++)
		text[i] = (u32)strtoul(s, &s, 16);
	p = strtol(s, &s, 10);
	if (p < 0 || p >= n) {
		puts("error bad probe index");
		return;
	}
	text_len = n;
	sym_start = sym;
	in_extable = ext != 0;
	memset(slot_page, 0, sizeof(slot_page));

	struct kprobe kp;
	memset(&kp, 0, sizeof(kp));
	kp.addr = (kprobe_opcode_t *)((char *)&text[p] + mis);
	int ret = arch_prepare_kprobe(&kp);
	struct arch_probe_insn *api = &kp.ainsn.api;
	const char *dec = ret ? "rejected" : KR_SLOT(kp) ? "slot" : "simulate";
	printf("%d %s %s", ret, dec, ret ? "-" : handler_names[handler_index(api->handler)]);
	if (!ret && KR_SLOT(kp))
		printf(" %08x %08x %lx\n", KR_SLOT(kp)[0], KR_SLOT(kp)[1],
		       KR_RESTORE(kp) - (unsigned long)kp.addr);
	else
		printf(" - - -\n");
}

static int uprobe_prepare(u32 insn, unsigned long addr, struct arch_uprobe *au)
{
	struct mm_struct mm = { { 0 } };
	memset(au, 0, sizeof(*au));
	au->insn = cpu_to_le32(insn);
	/* kernel/events/uprobes.c prepare_uprobe(): the trap test, then the arch. */
	if (is_trap_insn((uprobe_opcode_t *)&au->insn))
		return -ENOTSUPP;
	return arch_uprobe_analyze_insn(au, &mm, addr);
}

static void uprobe_query(char *line)
{
	char *s = line;
	long mis = strtol(s, &s, 10);
	u32 w = (u32)strtoul(s, &s, 16);
	struct arch_uprobe au;
	int ret = uprobe_prepare(w, 0x400000 + mis, &au);
	printf("%d %s %s\n", ret, ret ? "-" : au.simulate ? "simulate" : "xol",
	       ret ? "-" : handler_names[handler_index(au.api.handler)]);
}

static void answer(u32 w, unsigned char out[2]);

static int bulk(void)
{
	u32 w;
	text_len = 1;
	sym_start = 0;
	in_extable = false;
	while (fread(&w, 4, 1, stdin) == 1) {
		unsigned char out[2];
		answer(w, out);
		if (fwrite(out, 2, 1, stdout) != 1)
			return 1;
	}
	return fflush(stdout) != 0;
}

/* The words START, START+STEP, ... (COUNT of them, wrapping at 2^32). */
static int sweep(u32 start, u64 count, u32 step)
{
	static unsigned char buf[1 << 16];
	size_t n = 0;
	u32 w = start;
	text_len = 1;
	sym_start = 0;
	in_extable = false;
	for (u64 i = 0; i < count; i++, w += step) {
		answer(w, buf + n);
		n += 2;
		if (n == sizeof(buf)) {
			if (fwrite(buf, 1, n, stdout) != n)
				return 1;
			n = 0;
		}
	}
	if (n && fwrite(buf, 1, n, stdout) != n)
		return 1;
	return fflush(stdout) != 0;
}

static void answer(u32 w, unsigned char out[2])
{
	struct kprobe kp;
	memset(&kp, 0, sizeof(kp));
	text[0] = w;
	kp.addr = &text[0];
	int ret = arch_prepare_kprobe(&kp);
	int dec = ret ? 0 : KR_SLOT(kp) ? 2 : 1;
	out[0] = (ret == 0) << 7 | dec << 4 | (ret ? 0 : handler_index(kp.ainsn.api.handler));
	if (!ret && KR_SLOT(kp) &&
	    (KR_SLOT(kp)[0] != w || KR_SLOT(kp)[1] != BRK64_OPCODE_KPROBES_SS))
		out[0] |= 0x0F; /* an unexpected slot image */
	struct arch_uprobe au;
	ret = uprobe_prepare(w, 0x400000, &au);
	dec = ret ? 0 : au.simulate ? 1 : 2;
	out[1] = (ret == 0) << 7 | (ret == -ENOTSUPP) << 6 | dec << 4 | (ret ? 0 : handler_index(au.api.handler));
}

int main(int argc, char **argv)
{
	char line[8192];
	if (argc > 1 && strcmp(argv[1], "-bulk") == 0)
		return bulk();
	if (argc == 5 && strcmp(argv[1], "-sweep") == 0)
		return sweep((u32)strtoul(argv[2], NULL, 0), strtoull(argv[3], NULL, 0), (u32)strtoul(argv[4], NULL, 0));
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		switch (line[0]) {
		case 'k':
			kprobe_query(line + 1);
			break;
		case 'u':
			uprobe_query(line + 1);
			break;
		case '\n':
			break;
		default:
			puts("error unknown query");
		}
	}
	return 0;
}
