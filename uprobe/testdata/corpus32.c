/* kboost uprobe oracle corpus for i386 tasks (gcc -m32): the protocol of
 * corpus.c (ready, a byte, COUNT calls of k_NAME, done, a byte) with 32-bit
 * instructions, among them the opcodes only 32-bit code has (inc/dec 40-4F,
 * pusha, aaa, das, into, bound, push/pop of segment registers) and the NOP
 * forms, which no version optimizes in a 32-bit task. Only caller-saved
 * registers and kb_buf are touched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long kb_buf[64] __attribute__((aligned(64)));

#include "kbcorpus.h"

#define RR(op) I(op##_rr, #op " %ecx,%eax") I(op##_rr8, #op "b %cl,%al") I(op##_rr16, #op "w %cx,%ax") \
	I(op##_i8, #op " $0x7f,%eax") I(op##_i32, #op " $0x12345,%eax") I(op##_m, #op " kb_buf,%eax")   \
	I(op##_mr, #op " %eax,kb_buf+4")
RR(add) RR(or) RR(and) RR(sub) RR(xor) RR(cmp) RR(test) RR(adc) RR(sbb)
#define SH(op) I(op##_1, #op " $1,%eax") I(op##_cl, #op " %cl,%eax") I(op##_i, #op " $3,%eax")
SH(shl) SH(shr) SH(sar) SH(rol) SH(ror)
I(inc_eax, "inc %eax") I(inc_ecx, "inc %ecx") I(dec_eax, "dec %eax") I(dec_edx, "dec %edx")
I(inc_m, "incl kb_buf") I(neg, "neg %eax") I(not, "not %eax") I(mul, "mul %ecx") I(imul_rri, "imul $3,%ecx,%eax")
I(mov_rr, "mov %ecx,%eax") I(mov_i, "mov $0x11223344,%eax") I(mov_load, "mov kb_buf,%eax") I(mov_store, "mov %ecx,kb_buf+8")
I(movzbl, "movzbl %cl,%eax") I(movsbl, "movsbl %cl,%eax") I(lea_sib, "lea (%eax,%ecx,4),%edx") I(lea_disp, "lea 8(%esp),%eax")
I(xchg_rr, "xchg %ecx,%eax") I(bswap, "bswap %eax") I(cmove, "cmove %ecx,%eax") I(sete, "sete %al") I(bt, "bt %ecx,%eax")
I(cdq, "cdq") I(cwde, "cwde") I(clc, "clc") I(stc, "stc") I(cmc, "cmc") I(cld, "cld") I(lahf, "lahf") I(sahf, "sahf")
I(aaa, "aaa") I(das, "das") I(daa, "daa") I(aas, "aas") I(aam, "aam") I(aad, "aad") I(salc, ".byte 0xd6")
FN(pusha, "", "pusha", "popa") FN(popa, "pusha", "popa", "")
FN(push_eax, "", "push %eax", "pop %eax") FN(push_ebp, "", "push %ebp", "pop %ebp") FN(pop_ecx, "push %eax", "pop %ecx", "")
FN(push_i8, "", "push $1", "pop %ecx") FN(push_i32, "", "push $0x12345", "pop %ecx") FN(push_m, "", "pushl kb_buf", "pop %ecx")
FN(push_es, "", "push %es", "pop %es") FN(push_ds, "", "push %ds", "pop %ds") FN(pop_es, "push %es", "pop %es", "")
FN(push_ss, "", "push %ss", "add $4,%esp") FN(pushf, "", "pushf", "popf")
FN(jmp8, "", "jmp 1f", "1:") FN(jmp32, "", ".byte 0xe9; .long 0", "") FN(je, "xor %eax,%eax", "je 1f", "1:")
FN(jne32, "xor %eax,%eax", "jne 1f; .p2align 4; 1:", "") FN(call, "", "call 1f; 1: pop %eax", "")
FN(loop, "mov $1,%ecx", "loop 1f", "1:") FN(jecxz, "xor %ecx,%ecx", "jecxz 1f", "1:")
FN(call_ind, "lea 1f,%eax", "call *%eax; 1: pop %eax", "") FN(ret, "push $1f", "ret", "1:")
FN(rep_stos, "push %edi\nmov $8,%ecx\nlea kb_buf,%edi\nxor %eax,%eax", "rep stosl", "pop %edi")
FN(rep_movs, "push %esi\npush %edi\nmov $8,%ecx\nlea kb_buf,%esi\nlea kb_buf+64,%edi", "rep movsl", "pop %edi\npop %esi")
FN(enter, "", "enter $16,$0", "leave") FN(leave, "push %ebp\nmov %esp,%ebp", "leave", "")
FN(int80, "mov $20,%eax", "int $0x80", "") /* getpid */
/* NOP forms. */
I(nop1, "nop") I(nop2_66, ".byte 0x66,0x90") I(pause, "pause") I(nop3, ".byte 0x0f,0x1f,0x00") I(nop4, ".byte 0x0f,0x1f,0x40,0x00")
I(nop5, ".byte 0x0f,0x1f,0x44,0x00,0x00") I(nop5_66, ".byte 0x66,0x0f,0x1f,0x40,0x00") I(nop6, ".byte 0x66,0x0f,0x1f,0x44,0x00,0x00")
I(nop7, ".byte 0x0f,0x1f,0x80,0,0,0,0") I(nop8, ".byte 0x0f,0x1f,0x84,0,0,0,0,0") I(nop9, ".byte 0x66,0x0f,0x1f,0x84,0,0,0,0,0")
I(nop5_disp, ".byte 0x0f,0x1f,0x44,0x00,0x01") I(nop_reg, ".byte 0x0f,0x1f,0xc0") I(mov_self, "mov %eax,%eax")
I(lea_self, ".byte 0x8d,0x76,0x00") I(lea_self_sib, ".byte 0x8d,0x74,0x26,0x00") I(jmp0, ".byte 0xeb,0x00")
/* SSE. */
I(pxor, "pxor %xmm2,%xmm2") I(movd, "movd %eax,%xmm0") I(addps, "addps %xmm1,%xmm0") I(vpxor, "vpxor %xmm1,%xmm2,%xmm3")
I(lfence, "lfence") I(rdtsc, "rdtsc")
/* Never run. */
NR(int3, "int3") NR(hlt, "hlt") NR(nop10_cs, ".byte 0x66,0x2e,0x0f,0x1f,0x84,0,0,0,0,0") NR(cs_mov, ".byte 0x2e,0x89,0xc8")
NR(lock_nop, ".byte 0xf0,0x90") NR(into, "into") NR(bound, "bound %eax,kb_buf") NR(pop_ds_bad, ".byte 0x1f") NR(jmp16, ".byte 0x66,0xeb,0x00")
NR(ud2, "ud2") NR(sysenter, "sysenter") NR(lds, "lds kb_buf,%eax") NR(mov_ss, ".byte 0x8e,0xd0") NR(in_al, "in $0x80,%al")

int main(int argc, char **argv) { return kb_main("corpus32", argc, argv); }
