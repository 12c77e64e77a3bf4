// kref: kboost's host harness around the x86 kprobes and uprobes decision code of a
// Linux source tree. Written for kboost; it contains no kernel code itself. The
// kernel's own instruction decoder (tools/arch/x86/lib/{inat,insn}.c and the
// generated inat-tables.c) is #included exactly as the kernel's insn_sanity host
// tool does, and the functions of arch/x86/kernel/kprobes/core.c and
// arch/x86/kernel/uprobes.c are #included from files that internal/kernelref cut
// out of that tree at test time (ex_*.c / ex_*.h). This file supplies the
// environment those functions expect from the rest of the kernel: types, a fake
// kernel text mapping, and stubs for the services they call.
//
// Protocol: one query per input line, one answer line per query.
//   K OFF FLAGS FUNCADDR SLOTADDR HEX  register a kprobe at FUNCADDR+OFF, where HEX
//                                      are the function's bytes from FUNCADDR on;
//                                      FLAGS: '-' or letters p (CONFIG_PREEMPTION),
//                                      h (post_handler), x (exception table entry)
//   D MODE HEX                         kernel insn_decode of HEX (buffer = HEX)
//   U MODE HEX [ADDR]                  arch_uprobe_analyze_insn on HEX at ADDR (0x400000)
// MODE is 32 or 64. Answers are "key=value" words; see internal/kernelref.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <sys/mman.h>

#include <asm/insn.h>
#include <inat.c>
#include <insn.c>

/* ---- kernel environment expected by the extracted code ---- */

#define ENOTSUPP 524 /* kernel-internal errno, include/linux/errno.h */

#undef IS_ENABLED
#define IS_ENABLED(option) KR_IS_ENABLED_##option
#define KR_IS_ENABLED_CONFIG_PREEMPTION kr_preemption
#define KR_IS_ENABLED_CONFIG_CFI_CLANG 0 /* Debian builds with gcc: no kCFI (6.x) */
#define KR_IS_ENABLED_CONFIG_CFI 0       /* the same option, renamed (7.x) */

#ifdef CONFIG_X86_64
#define KR_SIZEOF_LONG 8
#else
#define KR_SIZEOF_LONG 4
#endif

#ifndef fallthrough
#define fallthrough __attribute__((__fallthrough__))
#endif
#define nokprobe_inline inline __attribute__((always_inline))
#define pr_err(...) ((void)0)

static int kr_test_bit(unsigned int nr, const volatile void *addr)
{
	return (((const volatile unsigned char *)addr)[nr / 8] >> (nr % 8)) & 1;
}
#undef test_bit
#define test_bit(nr, addr) kr_test_bit((nr), (addr))

static void kr_set_bit(unsigned int nr, volatile void *addr)
{
	((volatile unsigned char *)addr)[nr / 8] |= 1 << (nr % 8);
}
#undef set_bit
#define set_bit(nr, addr) kr_set_bit((nr), (addr))
#ifndef PAGE_SIZE
#define PAGE_SIZE 4096UL
#define PAGE_MASK (~(PAGE_SIZE - 1))
#endif

typedef u8 kprobe_opcode_t;
typedef u8 uprobe_opcode_t;

struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
struct kprobe;
struct mm_struct { int is64; };

#include "ex_defines.h"
#include "ex_types.h"

struct kprobe {
	kprobe_opcode_t *addr;
	void *post_handler;
	kprobe_opcode_t opcode;
	struct arch_specific_insn ainsn;
};

static int kr_preemption;     /* CONFIG_PREEMPTION */
static int kr_extable;        /* the probe address has an exception table entry */
static unsigned long kr_func; /* host address of the probed function's first byte */
static u8 *kr_slot;           /* the slot's (fake) address, never dereferenced */
static u8 kr_slotbuf[64];     /* what text_poke wrote into the slot */
static int kr_slotlen;

static const void *search_exception_tables(unsigned long addr)
{
	(void)addr;
	return kr_extable ? (const void *)&kr_extable : NULL;
}
static struct kprobe *get_kprobe(void *addr) { (void)addr; return NULL; }
static unsigned long ftrace_location(unsigned long addr) { (void)addr; return 0; }
static const unsigned char kr_nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
static const unsigned char *const x86_nops[6] = { [5] = kr_nop5 };
static long copy_from_kernel_nofault(void *dst, const void *src, size_t size)
{
	memcpy(dst, src, size);
	return 0;
}
static unsigned long __recover_optprobed_insn(kprobe_opcode_t *buf, unsigned long addr)
{
	(void)buf;
	return addr; /* no optimized probe covers addr */
}
static int kallsyms_lookup_size_offset(unsigned long addr, unsigned long *size, unsigned long *offset)
{
	(void)size;
	*offset = addr - kr_func;
	return 1;
}
static int is_cfi_trap(unsigned long addr) { (void)addr; return 0; }
static int alternatives_text_reserved(void *start, void *end) { (void)start; (void)end; return 0; }
static kprobe_opcode_t *get_insn_slot(void) { return kr_slot; }
static void free_insn_slot(kprobe_opcode_t *slot, int dirty) { (void)slot; (void)dirty; }
static void perf_event_text_poke(const void *addr, const void *old, unsigned int old_len,
				 const void *new, unsigned int new_len)
{
	(void)addr; (void)old; (void)old_len; (void)new; (void)new_len;
}
static void *text_poke(void *addr, const void *buf, size_t len)
{
	(void)addr;
	if (len > sizeof(kr_slotbuf))
		len = sizeof(kr_slotbuf);
	memcpy(kr_slotbuf, buf, len);
	kr_slotlen = (int)len;
	return addr;
}

/* The emulation routines are identified by address only. */
#define KR_EMU(name) static void name(struct kprobe *p, struct pt_regs *regs) { (void)p; (void)regs; }
KR_EMU(kprobe_emulate_ifmodifiers)
KR_EMU(kprobe_emulate_ret)
KR_EMU(kprobe_emulate_call)
KR_EMU(kprobe_emulate_jmp)
KR_EMU(kprobe_emulate_jcc)
KR_EMU(kprobe_emulate_loop)
KR_EMU(kprobe_emulate_call_indirect)
KR_EMU(kprobe_emulate_jmp_indirect)

static const struct { void (*fn)(struct kprobe *, struct pt_regs *); const char *name; } kr_emus[] = {
	{ kprobe_emulate_ifmodifiers, "ifmodifiers" },
	{ kprobe_emulate_ret, "ret" },
	{ kprobe_emulate_call, "call" },
	{ kprobe_emulate_jmp, "jmp" },
	{ kprobe_emulate_jcc, "jcc" },
	{ kprobe_emulate_loop, "loop" },
	{ kprobe_emulate_call_indirect, "call_indirect" },
	{ kprobe_emulate_jmp_indirect, "jmp_indirect" },
};

static int kr_uprobe_64;
static int is_64bit_mm(struct mm_struct *mm) { (void)mm; return kr_uprobe_64; }
static const struct uprobe_xol_ops branch_xol_ops, push_xol_ops, default_xol_ops;

#include "ex_kprobes.c"
#include "ex_uprobes.c"

/* ---- the harness ---- */

static const char *kr_errname(int e)
{
	switch (e < 0 ? -e : e) {
	case 0: return "-";
	case EINVAL: return "EINVAL";
	case EILSEQ: return "EILSEQ";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOSPC: return "ENOSPC";
	case ENOMEM: return "ENOMEM";
	case ENOEXEC: return "ENOEXEC";
	case ENOSYS: return "ENOSYS";
	case ENOTSUPP: return "ENOTSUPP";
	}
	return "E?";
}

static int kr_hex(const char *s, u8 *out, int max)
{
	int n = 0;
	if (s[0] == '-' && (s[1] == 0 || s[1] == '\n'))
		return 0;
	while (s[0] && s[1] && n < max) {
		unsigned int v;
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (u8)v;
		s += 2;
	}
	return (s[0] && s[0] != '\n') ? -1 : n;
}

static void kr_printhex(const char *key, const u8 *b, int n)
{
	printf(" %s=", key);
	if (n == 0)
		printf("-");
	for (int i = 0; i < n; i++)
		printf("%02x", b[i]);
}

#define KR_TEXT_SIZE 8192
static u8 *kr_text; /* two pages of fake kernel text */

static void kr_kprobe(char *args)
{
	unsigned long off, func, slot;
	char flags[16], hex[512];
	u8 bytes[256];
	if (sscanf(args, "%lu %15s %lx %lx %511s", &off, flags, &func, &slot, hex) != 5) {
		printf("K error=syntax\n");
		return;
	}
	int n = kr_hex(hex, bytes, (int)sizeof(bytes));
	if (n < 0 || off >= (unsigned long)n || (func & 0xfff) + n + 64 > KR_TEXT_SIZE) {
		printf("K error=args\n");
		return;
	}
	kr_preemption = strchr(flags, 'p') != NULL;
	kr_extable = strchr(flags, 'x') != NULL;
	memset(kr_text, INT3_INSN_OPCODE, KR_TEXT_SIZE);
	u8 *host = kr_text + (func & 0xfff);
	memcpy(host, bytes, n);
	kr_func = (unsigned long)host;
	u8 *addr = host + off;
	/* The slot lies at the same distance from the probe as in the kernel. */
	kr_slot = addr + (long)(slot - (func + off));
	memset(kr_slotbuf, 0, sizeof(kr_slotbuf));
	kr_slotlen = 0;

	struct kprobe p;
	memset(&p, 0, sizeof(p));
	p.addr = addr;
	p.post_handler = strchr(flags, 'h') ? (void *)&p : NULL;
	int ret = arch_prepare_kprobe(&p);

	/* Side facts, for the record: the kernel decoder's view and can_boost. */
	struct insn insn;
	int dret = insn_decode_kernel(&insn, addr);
	int cb = dret < 0 ? 0 : can_boost(&insn, addr);
	const char *op = "-";
	for (size_t i = 0; i < sizeof(kr_emus) / sizeof(kr_emus[0]); i++)
		if (ret == 0 && p.ainsn.emulate_op == kr_emus[i].fn)
			op = kr_emus[i].name;
	printf("K ret=%d err=%s len=%d canboost=%d boostable=%d op=%s", ret, kr_errname(ret),
	       dret < 0 ? 0 : insn.length, cb, ret == 0 ? (int)p.ainsn.boostable : 0, op);
	kr_printhex("slot", kr_slotbuf, ret == 0 ? kr_slotlen : 0);
	printf("\n");
}

static void kr_decode(char *args)
{
	int mode;
	char hex[512];
	u8 bytes[256];
	if (sscanf(args, "%d %511s", &mode, hex) != 2) {
		printf("D error=syntax\n");
		return;
	}
	int n = kr_hex(hex, bytes, (int)sizeof(bytes));
	if (n < 0) {
		printf("D error=args\n");
		return;
	}
	struct insn insn;
	int ret = insn_decode(&insn, bytes, n, mode == 64 ? INSN_MODE_64 : INSN_MODE_32);
	printf("D ret=%d len=%d", ret, ret < 0 ? 0 : insn.length);
	if (ret == 0) {
		printf(" emu=%d pfx=%d rex=%d vex=%d op=%d", insn.emulate_prefix_size,
		       insn.prefixes.nbytes, insn.rex_prefix.nbytes, insn.vex_prefix.nbytes,
		       insn.opcode.nbytes);
		kr_printhex("opcode", insn.opcode.bytes, insn.opcode.nbytes);
		printf(" modrm=%d sib=%d disp=%d imm=%d imm2=%d rip=%d opnd=%d addr=%d",
		       insn.modrm.nbytes, insn.sib.nbytes, insn.displacement.nbytes,
		       insn.immediate1.nbytes, insn.immediate2.nbytes, insn_rip_relative(&insn),
		       insn.opnd_bytes, insn.addr_bytes);
	}
	printf("\n");
}

static void kr_uprobe(char *args)
{
	int mode;
	char hex[512];
	u8 bytes[256];
	unsigned long kr_uprobe_addr = 0;
	if (sscanf(args, "%d %511s %lx", &mode, hex, &kr_uprobe_addr) < 2) {
		printf("U error=syntax\n");
		return;
	}
	int n = kr_hex(hex, bytes, (int)sizeof(bytes));
	if (n < 0) {
		printf("U error=args\n");
		return;
	}
	struct arch_uprobe au;
	struct mm_struct mm = { mode == 64 };
	memset(&au, 0, sizeof(au));
	memset(au.insn, INT3_INSN_OPCODE, sizeof(au.insn));
	memcpy(au.insn, bytes, n < (int)sizeof(au.insn) ? n : (int)sizeof(au.insn));
	kr_uprobe_64 = mode == 64;
	unsigned long addr = kr_uprobe_addr ? kr_uprobe_addr : 0x400000;
	int ret = arch_uprobe_analyze_insn(&au, &mm, addr);
	const char *ops = "-";
	int len = 0;
	if (ret == 0 && au.ops == &branch_xol_ops) {
		ops = "branch";
		len = au.branch.ilen;
	} else if (ret == 0 && au.ops == &push_xol_ops) {
		ops = "push";
		len = au.push.ilen;
	} else if (ret == 0 && au.ops == &default_xol_ops) {
		ops = "default";
		len = au.defparam.ilen;
	}
	int opt = 0;
#ifdef OPT_INSN_SIZE
	/* 7.x: can_optimize() held (the 10-byte NOP). */
	opt = ret == 0 && test_bit(ARCH_UPROBE_FLAG_CAN_OPTIMIZE, &au.flags);
#endif
	printf("U ret=%d err=%s len=%d ops=%s fixups=%d opt=%d\n", ret, kr_errname(ret), len, ops,
	       ret == 0 && au.ops == &default_xol_ops ? au.defparam.fixups : 0, opt);
}

/* B MODE TEXT OFFS OUT: the kernel decoder's length at each offset (u32 LE) of
 * TEXT, one byte each (0: insn_decode failed), written to OUT. */
static void kr_bulk(char *args)
{
	int mode;
	char tp[1024], op[1024], outp[1024];
	if (sscanf(args, "%d %1023s %1023s %1023s", &mode, tp, op, outp) != 4) {
		printf("B error=syntax\n");
		return;
	}
	FILE *tf = fopen(tp, "rb"), *of = fopen(op, "rb"), *out = fopen(outp, "wb");
	if (!tf || !of || !out) {
		printf("B error=open\n");
		goto done;
	}
	fseek(tf, 0, SEEK_END);
	long size = ftell(tf);
	fseek(tf, 0, SEEK_SET);
	u8 *text = malloc(size + 1);
	if (!text || fread(text, 1, size, tf) != (size_t)size) {
		printf("B error=read\n");
		free(text);
		goto done;
	}
	unsigned char o4[4];
	long n = 0;
	while (fread(o4, 1, 4, of) == 4) {
		unsigned long off = o4[0] | o4[1] << 8 | o4[2] << 16 | (unsigned long)o4[3] << 24;
		u8 len = 0;
		if ((long)off < size) {
			struct insn insn;
			long avail = size - (long)off;
			if (insn_decode(&insn, text + off, avail < MAX_INSN_SIZE ? (int)avail : MAX_INSN_SIZE,
					mode == 64 ? INSN_MODE_64 : INSN_MODE_32) == 0)
				len = insn.length;
		}
		fputc(len, out);
		n++;
	}
	free(text);
	fclose(tf);
	fclose(of);
	if (fclose(out) != 0) {
		printf("B error=write\n");
		return;
	}
	printf("B n=%ld\n", n);
	return;
done:
	if (tf) fclose(tf);
	if (of) fclose(of);
	if (out) fclose(out);
}

int main(void)
{
	char line[2048];
	kr_text = mmap(NULL, KR_TEXT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (kr_text == MAP_FAILED) {
		perror("kref: mmap");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		switch (line[0]) {
		case 'K': kr_kprobe(line + 1); break;
		case 'D': kr_decode(line + 1); break;
		case 'U': kr_uprobe(line + 1); break;
		case 'B': kr_bulk(line + 1); break;
		case '\n': case '#': break;
		default: printf("? error=command\n");
		}
		fflush(stdout);
	}
	return 0;
}
