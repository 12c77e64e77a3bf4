/* kboost uprobe oracle corpus: one function per instruction. Each k_NAME runs
 * PRE, then the probed instruction at the global label s_NAME, then POST and
 * ret. The test probes s_NAME and runs "corpus NAME COUNT": the process says
 * "ready", waits for a byte on stdin, calls k_NAME COUNT times, says "done",
 * and waits for another byte before it exits (so the test can read its
 * memory and maps). Built with gcc at test time; only caller-saved registers,
 * the red zone of leaf functions and kb_buf are touched. */
#define _SDT_HAS_SEMAPHORES 1
#define _GNU_SOURCE 1
#include <sys/sdt.h>
#include <signal.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long kb_buf[64] __attribute__((aligned(64)));

#include "kbcorpus.h"

/* Two-operand ALU forms over register pairs (64-bit, then 32-bit). */
#define RR(op)                                                    \
	I(op##_rax_rcx, #op " %rcx,%rax")                           \
	I(op##_rdx_rsi, #op " %rsi,%rdx")                           \
	I(op##_rdi_r8, #op " %r8,%rdi")                             \
	I(op##_r9_r10, #op " %r10,%r9")                             \
	I(op##_r11_rax, #op " %rax,%r11")                           \
	I(op##_ecx_edx, #op " %edx,%ecx")                           \
	I(op##_r8d_esi, #op " %esi,%r8d")                           \
	I(op##_ax_cx, #op " %cx,%ax")                               \
	I(op##_al_cl, #op " %cl,%al")
RR(add) RR(sub) RR(and) RR(or) RR(xor) RR(adc) RR(sbb) RR(cmp) RR(test) RR(mov)

/* Immediates. */
#define RI(op)                                                    \
	I(op##_i8_rax, #op " $0x7f,%rax")                           \
	I(op##_i32_rcx, #op " $0x12345678,%rcx")                    \
	I(op##_i8_r9d, #op " $-3,%r9d")                             \
	I(op##_i32_eax, #op " $0x11223344,%eax")                    \
	I(op##_i8_al, #op " $5,%al")
RI(add) RI(sub) RI(and) RI(or) RI(xor) RI(cmp) RI(adc) RI(sbb)
I(test_i32_eax, "test $0x100,%eax") I(test_i8_al, "test $1,%al")
I(mov_i32_eax, "mov $0x11223344,%eax") I(mov_i64_rax, "movabs $0x1122334455667788,%rax")
I(mov_i32s_rcx, "mov $-1,%rcx") I(mov_i8_cl, "mov $7,%cl")

/* Shifts and rotates. */
#define SH(op)                                                    \
	I(op##_1_rax, #op " $1,%rax")                               \
	I(op##_i_edx, #op " $3,%edx")                               \
	I(op##_cl_r8, #op " %cl,%r8")                               \
	I(op##_i_sil, #op " $2,%sil")
SH(shl) SH(shr) SH(sar) SH(rol) SH(ror) SH(rcl) SH(rcr)
I(shld_i, "shld $4,%rcx,%rax") I(shrd_cl, "shrd %cl,%rdx,%rax")

/* One operand. */
#define UN(op)                                                    \
	I(op##_rax, #op " %rax")                                    \
	I(op##_ecx, #op " %ecx")                                    \
	I(op##_r10, #op " %r10")                                    \
	I(op##_m, #op "q kb_buf(%rip)")
UN(inc) UN(dec) UN(neg) UN(not)

/* Multiplication, moves with extension, conditional moves and sets. */
I(imul_rr, "imul %rcx,%rax") I(imul_rri8, "imul $3,%rcx,%rax") I(imul_rri32, "imul $0x10000,%rdx,%rax")
I(mul_rcx, "mul %rcx") I(imul1_rcx, "imul %rcx")
I(movzbl, "movzbl %cl,%eax") I(movzwl, "movzwl %cx,%eax") I(movsbq, "movsbq %cl,%rax")
I(movswq, "movswq %cx,%rax") I(movslq, "movslq %ecx,%rax") I(movzbl_m, "movzbl kb_buf(%rip),%eax")
#define CC(c) I(cmov##c, "cmov" #c " %rcx,%rax") I(set##c, "set" #c " %al")
CC(o) CC(no) CC(b) CC(ae) CC(e) CC(ne) CC(be) CC(a) CC(s) CC(ns) CC(p) CC(np) CC(l) CC(ge) CC(le) CC(g)
I(bswap_rax, "bswap %rax") I(bswap_ecx, "bswap %ecx") I(xchg_rr, "xchg %rcx,%rax") I(xchg_r8, "xchg %r8,%rax")
I(bt_rr, "bt %rcx,%rax") I(bts_i, "bts $3,%rax") I(btr_i, "btr $3,%rax") I(bsf, "bsf %rcx,%rax") I(bsr, "bsr %rcx,%rax")
I(popcnt, "popcnt %rcx,%rax") I(lzcnt, "lzcnt %rcx,%rax") I(tzcnt, "tzcnt %rcx,%rax")
I(cqto, "cqto") I(cltd, "cltd") I(cltq, "cltq") I(cwtl, "cwtl") I(clc, "clc") I(stc, "stc") I(cmc, "cmc")
I(cld, "cld") I(lahf, "lahf") I(sahf, "sahf") I(pushf, "pushf\npopf")

/* Addresses: lea (RIP-relative too) and memory operands. */
I(lea_sib, "lea (%rax,%rcx,4),%rdx") I(lea_disp8, "lea 8(%rsp),%rax") I(lea_disp32, "lea 0x1000(%rcx),%rax")
I(lea_rip, "lea kb_buf(%rip),%rax") I(lea_rip_r8, "lea kb_buf(%rip),%r8") I(lea_32, "lea (%rcx,%rdx),%eax")
I(mov_load_rip, "mov kb_buf(%rip),%rax") I(mov_store_rip, "mov %rcx,kb_buf+8(%rip)")
I(add_load_rip, "add kb_buf(%rip),%eax") I(cmp_m_i, "cmpq $0,kb_buf(%rip)") I(movl_m_i, "movl $1,kb_buf+16(%rip)")
I(mov_load_rsp, "mov 8(%rsp),%rax") I(mov_store_redzone, "mov %rcx,-8(%rsp)") I(mov_load_redzone, "mov -16(%rsp),%rax")
FN(mov_load_base, "lea kb_buf(%rip),%rcx", "mov 8(%rcx),%rax", "")
FN(mov_store_sib, "lea kb_buf(%rip),%rcx\nxor %edx,%edx", "mov %rax,(%rcx,%rdx,8)", "")
FN(add_m_r, "lea kb_buf(%rip),%rcx", "add %rax,16(%rcx)", "")
FN(movsq, "lea kb_buf(%rip),%rsi\nlea kb_buf+256(%rip),%rdi", "movsq", "")
FN(stosq, "lea kb_buf+256(%rip),%rdi", "stosq", "")
FN(rep_stosb, "lea kb_buf+256(%rip),%rdi\nmov $8,%ecx", "rep stosb", "")
FN(lodsb, "lea kb_buf(%rip),%rsi", "lodsb", "")
FN(scasb, "lea kb_buf(%rip),%rdi", "scasb", "")
FN(cmpxchg, "lea kb_buf(%rip),%rcx", "cmpxchg %rdx,(%rcx)", "")
FN(xadd, "lea kb_buf(%rip),%rcx", "xadd %rdx,(%rcx)", "")
FN(lock_add, "lea kb_buf(%rip),%rcx", "lock addq $1,(%rcx)", "")
FN(lock_xadd, "lea kb_buf(%rip),%rcx", "lock xadd %rdx,(%rcx)", "")

/* The stack: push is emulated (50-57, 41 50-57), others single-stepped. */
#define PU(r) FN(push_##r, "", "push %" #r, "pop %rax")
PU(rax) PU(rcx) PU(rdx) PU(rbx) PU(rsp) PU(rbp) PU(rsi) PU(rdi)
PU(r8) PU(r9) PU(r10) PU(r11) PU(r12) PU(r13) PU(r14) PU(r15)
FN(push_i8, "", "push $1", "pop %rax") FN(push_i32, "", "push $0x12345", "pop %rax")
FN(push_m, "", "pushq kb_buf(%rip)", "pop %rax") FN(push_w, "", "pushw %ax", "popw %ax")
FN(pop_rax, "push %rcx", "pop %rax", "") FN(pop_r8, "push %rcx", "pop %r8", "")
FN(pop_m, "push %rcx", "popq kb_buf(%rip)", "")
FN(leave, "push %rbp\nmov %rsp,%rbp", "leave", "")
FN(enter, "", "enter $0,$0", "leave")

/* Branches: relative jmp, jcc, call are emulated. */
I(jmp8, "jmp 1f\n1:") I(jmp32, ".byte 0xe9\n.long 0")
#define JC(c, n) I(j##c, "j" #c " 1f\n1:") I(j##c##32, ".byte 0x0f,0x80+" #n "\n.long 0")
JC(o, 0) JC(no, 1) JC(b, 2) JC(ae, 3) JC(e, 4) JC(ne, 5) JC(be, 6) JC(a, 7)
JC(s, 8) JC(ns, 9) JC(p, 10) JC(np, 11) JC(l, 12) JC(ge, 13) JC(le, 14) JC(g, 15)
FN(call, "", "call 1f", "jmp 2f\n1: ret\n2:")
FN(jmp_ind, "lea 1f(%rip),%rax", "jmp *%rax", "1:")
FN(call_ind, "lea 1f(%rip),%rax", "call *%rax", "jmp 2f\n1: ret\n2:")
FN(jrcxz, "xor %ecx,%ecx", "jrcxz 1f", "1:")
FN(loop, "mov $1,%ecx", "loop 1f", "1:")
FN(ret, "", "ret", "")
FN(ret_imm, "pop %rcx\nsub $8,%rsp\npush %rcx", "ret $8", "")

/* NOP forms: all emulated on 6.18; 5-byte NOPs are optimized. */
I(nop1, "nop") I(nop2, ".byte 0x66,0x90") I(nop3, ".byte 0x0f,0x1f,0x00")
I(nop4, ".byte 0x0f,0x1f,0x40,0x00") I(nop5, ".byte 0x0f,0x1f,0x44,0x00,0x00")
I(nop5_66, ".byte 0x66,0x0f,0x1f,0x40,0x00") I(nop6, ".byte 0x66,0x0f,0x1f,0x44,0x00,0x00")
I(nop7, ".byte 0x0f,0x1f,0x80,0,0,0,0") I(nop8, ".byte 0x0f,0x1f,0x84,0,0,0,0,0")
I(nop9, ".byte 0x66,0x0f,0x1f,0x84,0,0,0,0,0") I(nop10_cs, ".byte 0x66,0x2e,0x0f,0x1f,0x84,0,0,0,0,0")
I(nop_reg, ".byte 0x0f,0x1f,0xc0") I(nop_rex, ".byte 0x48,0x0f,0x1f,0x40,0x00") I(nop5_sib, ".byte 0x0f,0x1f,0x44,0x20,0x08")
I(pause, "pause") I(xchg_ax_ax, "xchg %ax,%ax") I(xchg_r8d, ".byte 0x41,0x90") I(nopw_0f1f_reg1, ".byte 0x0f,0x1f,0x48,0x00")
I(prefetch, "prefetcht0 kb_buf(%rip)") I(endbr64, "endbr64") I(hint_0f19, ".byte 0x0f,0x19,0x40,0x00")
I(nop8_66, ".byte 0x66,0x0f,0x1f,0x80,0,0,0,0") I(nop9_rex, ".byte 0x48,0x0f,0x1f,0x84,0,0,0,0,0")
I(nop4_sib, ".byte 0x0f,0x1f,0x04,0x00") I(nop_rip, ".byte 0x0f,0x1f,0x05,0,0,0,0") I(nop7_disp, ".byte 0x0f,0x1f,0x80,0,1,0,0")
I(nop5_disp, ".byte 0x0f,0x1f,0x44,0x00,0x01") I(nop10_66, ".byte 0x66,0x66,0x0f,0x1f,0x84,0,0,0,0,0")
I(nop3_66, ".byte 0x66,0x0f,0x1f,0x00") I(nop6_rex66, ".byte 0x66,0x48,0x0f,0x1f,0x40,0x00") I(nop6_66_80, ".byte 0x66,0x0f,0x1f,0x40,0x00,0x90")
I(nop_reg_66, ".byte 0x66,0x0f,0x1f,0xc0") I(nop_rex_reg, ".byte 0x48,0x0f,0x1f,0xc0") I(nop9_sib_disp, ".byte 0x0f,0x1f,0x84,0x20,0,0,0,0,0x90")
I(nop5_reg1, ".byte 0x0f,0x1f,0x4c,0x00,0x00") I(hint5_0f1e, ".byte 0x0f,0x1e,0x44,0x00,0x00") I(hint5_0f19, ".byte 0x0f,0x19,0x44,0x00,0x00")
I(nop5_6666, ".byte 0x66,0x66,0x0f,0x1f,0x00") I(nop5_f3, ".byte 0xf3,0x0f,0x1f,0x40,0x00") I(nop5_rip_short, ".byte 0x66,0x0f,0x1f,0x04,0x00")
I(nop5_f2, ".byte 0xf2,0x0f,0x1f,0x40,0x00") I(nop5_reg_pfx, ".byte 0x66,0x66,0x66,0x0f,0x1f,0xc0") I(nop5_regform, ".byte 0x66,0x66,0x0f,0x1f,0xc0")
I(nop11, ".byte 0x66,0x66,0x2e,0x0f,0x1f,0x84,0,0,0,0,0") I(nop5_ds, ".byte 0x3e,0x0f,0x1f,0x40,0x00")

/* SSE / AVX. */
I(movdqa_rr, "movdqa %xmm0,%xmm1") I(pxor, "pxor %xmm2,%xmm2") I(movq_r_x, "movq %rax,%xmm0")
I(movq_x_r, "movq %xmm0,%rax") I(addps, "addps %xmm1,%xmm0") I(movups_m, "movups kb_buf(%rip),%xmm0")
I(vpxor, "vpxor %xmm1,%xmm2,%xmm3") I(vmovdqu_y, "vmovdqu kb_buf(%rip),%ymm0") I(vzeroupper, "vzeroupper")
I(pshufd, "pshufd $0x1b,%xmm0,%xmm1") I(cvtsi2sd, "cvtsi2sd %rax,%xmm0") I(crc32, "crc32 %rcx,%rax")
I(andn, "andn %rcx,%rdx,%rax") I(shlx, "shlx %rcx,%rdx,%rax") I(rorx, "rorx $3,%rcx,%rax")

/* Fences and reads of the machine. */
I(lfence, "lfence") I(mfence, "mfence") I(sfence, "sfence") I(rdtsc, "rdtsc") FN(cpuid, "push %rbx\nxor %eax,%eax", "cpuid", "pop %rbx")
I(rdtscp, "rdtscp")

/* Never run: the kernel refuses these, or they fault natively (ud2, sysenter). */
NR(int3, "int3") NR(hlt, "hlt") NR(in_al, "in $0x80,%al") NR(int80, "int $0x80")
NR(cs_mov, ".byte 0x2e,0x89,0xc8") NR(ds_mov, ".byte 0x3e,0x89,0xc8") NR(ss_mov, ".byte 0x36,0x89,0xc8")
NR(es_mov, ".byte 0x26,0x89,0xc8") NR(bad06, ".byte 0x06") NR(ud2, "ud2") NR(into_bad, ".byte 0xce")
NR(mov_ss, ".byte 0x8e,0xd0") NR(pop_ds_bad, ".byte 0x1f") NR(sysenter, "sysenter") NR(lock_nop, ".byte 0xf0,0x90")
NR(jmp16, ".byte 0x66,0xeb,0x00") NR(call16, ".byte 0x66,0xe8,0,0") NR(jcc16, ".byte 0x66,0x74,0x00")

/* Accepted, and the process dies or misbehaves once single-stepped (see the test). */
FN(syscall, "mov $39,%eax", "syscall", "") /* getpid */

/* Hazards. k_redzone keeps its argument at -8(%rsp) across a 5-byte NOP:
 * once the NOP is optimized, the call into the trampoline overwrites it.
 * k_midimm returns 0x11223344 (a probe inside the immediate changes it);
 * k_midlea is probed on its ModRM byte. */
FN(redzone, "mov %rdi,-8(%rsp)", ".byte 0x0f,0x1f,0x44,0x00,0x00", "mov -8(%rsp),%rax")
FN(midimm, "", "mov $0x11223344,%eax", "")
FN(midlea, "", "lea 0x10(%rdi),%rax", "")
/* k_xchg_r8_sem returns its argument through xchg %rax,%r8 (49 90). */
FN(xchg_r8_sem, "mov %rdi,%r8\nxor %eax,%eax", "xchg %rax,%r8", "")

/* The trap flag on the CPU, no uprobe involved (the site, a NOP before it,
 * is only the trial's probe): k_tfpause sets TF with popf, runs pause, and
 * returns how far past the pause the single-step trap came (2: right after
 * it, as the CPU should); k_tfnop the same over a nop (1). An emulator that
 * loses the trap after pause returns more. */
volatile unsigned long kb_trap_ip;
static void kb_on_trap(int sig, siginfo_t *si, void *ctx) {
	ucontext_t *uc = ctx;
	(void)sig, (void)si;
	if (!kb_trap_ip)
		kb_trap_ip = uc->uc_mcontext.gregs[REG_RIP];
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100L;
}
void kb_tf_setup(void) {
	struct sigaction sa = {0};
	sa.sa_sigaction = kb_on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, 0);
	kb_trap_ip = 0;
}
#define TF(name, insn) FN(name, "sub $8,%rsp\ncall kb_tf_setup\nadd $8,%rsp", "nop", \
	"pushf\norq $0x100,(%rsp)\npopf\nkb_" #name "_at: " insn "\nnop\nnop\n" \
	"mov kb_trap_ip(%rip),%rax\nlea kb_" #name "_at(%rip),%rdx\nsub %rdx,%rax")
TF(tfpause, "pause") TF(tfnop, "nop")

/* USDT sites. */
/* With _SDT_HAS_SEMAPHORES every probe names a semaphore; only u_gated tests it. */
#define SEMA(n) unsigned short kbtest_##n##_semaphore __attribute__((unused)) __attribute__((section(".probes")));
SEMA(plain) SEMA(args) SEMA(gated)
__attribute__((noinline)) long u_plain(long x) { STAP_PROBE(kbtest, plain); return x + 1; }
__attribute__((noinline)) long u_args(long x) { int y = (int)x * 3; STAP_PROBE2(kbtest, args, x, y); return x + y; }
__attribute__((noinline)) long u_gated(long x) { if (kbtest_gated_semaphore) STAP_PROBE1(kbtest, gated, x); return x; }

static const struct kb_ent usdt[] = {{u_plain, "u_plain"}, {u_args, "u_args"}, {u_gated, "u_gated"}, {0, 0}};

#ifdef KB_LIB
extern long kb_lib(long); /* libkb.so */
#endif

int main(int argc, char **argv) {
	if (argc != 3) {
		fprintf(stderr, "usage: corpus NAME COUNT\n");
		return 2;
	}
	long (*fn)(long) = 0;
	for (const struct kb_ent *e = __start_kbtab; e < __stop_kbtab; e++)
		if (!strcmp(e->name, argv[1]))
			fn = e->fn;
	for (const struct kb_ent *e = usdt; e->name; e++)
		if (!strcmp(e->name, argv[1]))
			fn = e->fn;
#ifdef KB_LIB
	if (!strcmp(argv[1], "lib"))
		fn = kb_lib;
#endif
	if (!fn) {
		fprintf(stderr, "corpus: no function %s\n", argv[1]);
		return 2;
	}
	long n = atol(argv[2]), wrong = 0, last = 0;
	char c;
	printf("ready\n");
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	for (long i = 0; i < n; i++) {
		last = fn(i + 1);
		if (!strcmp(argv[1], "redzone") && last != i + 1)
			wrong++;
	}
	printf("done %ld wrong %ld last %#lx\n", n, wrong, (unsigned long)last);
	fflush(stdout);
	if (read(0, &c, 1) != 1)
		return 1;
	return 0;
}
