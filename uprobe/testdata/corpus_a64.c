/* kboost uprobe oracle corpus for arm64 tasks (aarch64-linux-gnu-gcc
 * -static): the protocol of corpus.c (ready, a byte, COUNT calls of k_NAME,
 * done, a byte) with A64 instructions: data processing and loads/stores
 * (single-stepped out of line), branches, PC-relative and literal loads
 * (simulated), hints, system registers, and what the kernel refuses
 * (exclusives, exception generation, n_NAME sites, never run). Only
 * caller-saved registers (x1-x17, v0-v7) and kb_buf are touched; x9 keeps
 * the link register across a bl. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long kb_buf[64] __attribute__((aligned(64)));

#include "kbcorpus.h"

#define BUF "adrp x10, kb_buf\nadd x10, x10, :lo12:kb_buf"
#define M(name, insn) FN(name, BUF, insn, "")

/* Data processing, registers. */
I(add_x, "add x1, x0, x2") I(add_w, "add w1, w0, w2") I(sub_x, "sub x1, x0, x2") I(sub_w, "sub w1, w0, w2")
I(adds_x, "adds x1, x0, x2") I(subs_w, "subs w1, w0, w2") I(and_x, "and x1, x0, x2") I(orr_x, "orr x1, x0, x2")
I(eor_w, "eor w1, w0, w2") I(bic_x, "bic x1, x0, x2") I(orn_x, "orn x1, x0, x2") I(eon_x, "eon x1, x0, x2")
I(ands_x, "ands x1, x0, x2") I(add_sh, "add x1, x0, x2, lsl #3") I(add_ext, "add x1, x0, w2, uxtw #2")
I(adc_x, "adc x1, x0, x2") I(sbc_w, "sbc w1, w0, w2") I(neg_x, "neg x1, x0") I(mvn_x, "mvn x1, x0")
/* Immediates and moves. */
I(add_i, "add x1, x0, #0x123") I(sub_i12, "sub x1, x0, #1, lsl #12") I(and_i, "and x1, x0, #0xff00")
I(orr_i, "orr w1, w0, #0x1") I(eor_i, "eor x1, x0, #0x5555555555555555") I(cmp_i, "cmp x0, #7")
I(cmn_i, "cmn w0, #3") I(tst_i, "tst x0, #0x10") I(movz, "movz x1, #0x1234, lsl #16") I(movk, "movk x1, #0x5678")
I(movn, "movn w1, #0") I(mov_r, "mov x1, x0") I(mov_sp, "mov x1, sp") I(add_sp, "add x1, sp, #16")
/* Shifts and bit fields. */
I(lsl_i, "lsl x1, x0, #4") I(lsr_i, "lsr w1, w0, #3") I(asr_i, "asr x1, x0, #60") I(ror_i, "ror x1, x0, #13")
I(lslv, "lsl x1, x0, x2") I(lsrv, "lsr x1, x0, x2") I(asrv, "asr w1, w0, w2") I(rorv, "ror x1, x0, x2")
I(ubfx, "ubfx x1, x0, #4, #8") I(sbfx, "sbfx x1, x0, #2, #5") I(bfi, "bfi x1, x0, #8, #4") I(extr, "extr x1, x0, x2, #7")
I(clz, "clz x1, x0") I(cls, "cls w1, w0") I(rbit, "rbit x1, x0") I(rev, "rev x1, x0") I(rev16, "rev16 w1, w0")
I(rev32, "rev32 x1, x0") I(sxtw, "sxtw x1, w0") I(uxtb, "uxtb w1, w0")
/* Multiply and divide. */
I(mul, "mul x1, x0, x0") I(madd, "madd x1, x0, x0, x2") I(msub, "msub w1, w0, w0, w2") I(smulh, "smulh x1, x0, x0")
I(umulh, "umulh x1, x0, x0") I(smull, "smull x1, w0, w0") I(umaddl, "umaddl x1, w0, w0, x2") I(udiv, "udiv x1, x0, x0")
I(sdiv, "sdiv w1, w0, w0")
/* Conditional select and compare. */
I(csel, "csel x1, x0, x2, eq") I(csinc, "csinc x1, x0, x2, ne") I(csinv, "csinv w1, w0, w2, lt") I(csneg, "csneg x1, x0, x2, ge")
I(cset, "cset x1, hi") I(ccmp, "ccmp x0, #3, #4, ne") I(ccmn, "ccmn w0, w2, #0, eq") I(cmp_r, "cmp x0, x2") I(tst_r, "tst x0, x2")
/* Loads and stores on kb_buf and the stack. */
M(ldr_x, "ldr x1, [x10]") M(ldr_w, "ldr w1, [x10, #8]") M(ldrb, "ldrb w1, [x10, #3]") M(ldrh, "ldrh w1, [x10, #6]")
M(ldrsb, "ldrsb x1, [x10, #1]") M(ldrsw, "ldrsw x1, [x10, #4]") M(str_x, "str x0, [x10, #16]") M(str_w, "str w0, [x10, #24]")
M(strb, "strb w0, [x10, #2]") M(strh, "strh w0, [x10, #4]") M(ldp, "ldp x1, x2, [x10]") M(stp, "stp x0, x0, [x10, #32]")
M(ldr_pre, "ldr x1, [x10, #8]!") M(ldr_post, "ldr x1, [x10], #8") M(str_pre, "str x0, [x10, #16]!") M(ldur, "ldur x1, [x10, #3]")
M(stur, "stur w0, [x10, #5]") FN(ldr_reg, BUF "\nmov x2, #8", "ldr x1, [x10, x2]", "") FN(ldr_lsl, BUF "\nmov x2, #1", "ldr x1, [x10, x2, lsl #3]", "")
M(prfm, "prfm pldl1keep, [x10]") M(ldar, "ldar x1, [x10]") M(stlr, "stlr x0, [x10]") M(ldarb, "ldarb w1, [x10]")
I(ldr_sp, "ldr x1, [sp]") FN(stp_sp, "sub sp, sp, #16", "stp x0, x1, [sp]", "add sp, sp, #16")
FN(str_sp_pre, "", "str x0, [sp, #-16]!", "add sp, sp, #16") M(dc_zva, "dc zva, x10") M(dc_civac, "dc civac, x10")
M(ldr_q, "ldr q0, [x10]") M(str_d, "str d0, [x10, #8]") M(ld1, "ld1 {v0.16b}, [x10]") M(st1, "st1 {v0.16b}, [x10]")
/* Floating point and SIMD. */
I(fmov_dx, "fmov d0, x0") FN(fmov_xd, "fmov d1, x0", "fmov x1, d1", "") FN(fadd, "fmov d1, x0", "fadd d0, d1, d1", "")
FN(fmul, "fmov d1, x0", "fmul d0, d1, d1", "") I(scvtf, "scvtf d0, x0") FN(fcvtzs, "scvtf d1, x0", "fcvtzs x1, d1", "")
FN(fcmp, "fmov d1, x0", "fcmp d1, #0.0", "") FN(add_v, "dup v1.4s, w0", "add v0.4s, v1.4s, v1.4s", "") I(movi, "movi v0.16b, #0x11")
I(dup, "dup v0.2d, x0") I(ins, "ins v0.d[1], x0") FN(umov, "dup v1.4s, w0", "umov w1, v1.s[2]", "") FN(addv, "dup v1.4s, w0", "addv s0, v1.4s", "")
FN(fmov_i, "", "fmov d0, #1.0", "") FN(cnt, "dup v1.8b, w0", "cnt v0.8b, v1.8b", "") FN(tbl, "movi v1.16b, #1", "tbl v0.16b, {v1.16b}, v1.16b", "")
/* Branches: simulated. */
FN(b, "", "b 1f\n1:", "") FN(bcond_taken, "cmp x0, x0", "b.eq 1f\nnop\n1:", "") FN(bcond_not, "cmp x0, #0", "b.eq 1f\n1:", "")
FN(cbz, "", "cbz x0, 1f\n1:", "") FN(cbnz, "", "cbnz x0, 1f\nnop\n1:", "") FN(tbz, "", "tbz x0, #63, 1f\nnop\n1:", "")
FN(tbnz, "", "tbnz w0, #0, 1f\n1:", "") FN(bl, "mov x9, x30", "bl 1f\nb 2f\n1: ret\n2:", "mov x30, x9")
FN(blr, "mov x9, x30\nadr x2, 1f", "blr x2\nb 2f\n1: ret\n2:", "mov x30, x9") FN(br, "adr x2, 1f", "br x2\n1:", "")
FN(ret_x2, "adr x2, 1f", "ret x2\n1:", "") I(ret, "ret") FN(cbz_w, "", "cbz w0, 1f\n1:", "")
/* PC-relative and literal loads: simulated. */
I(adr, "adr x1, .") I(adrp, "adrp x1, kb_buf") I(ldr_lit, "ldr x1, 1f\nb 2f\n.p2align 3\n1: .quad 0x1122334455667788\n2:")
I(ldr_lit_w, "ldr w1, 1f\nb 2f\n1: .word 0x11\n2:") I(ldrsw_lit, "ldrsw x1, 1f\nb 2f\n1: .word -5\n2:")
I(ldr_lit_d, "ldr d0, 1f\nb 2f\n.p2align 3\n1: .quad 0\n2:") I(prfm_lit, "prfm pldl1keep, 1f\n1:")
/* Hints and barriers. */
I(nop, "nop") I(yield, "yield") I(isb, "isb") I(dmb, "dmb ish") I(dsb, "dsb sy") I(bti, "hint #34")
FN(paciasp, "", "paciasp", "autiasp") I(csdb, "csdb") I(esb, "hint #16") I(hint_7f, "hint #0x7f") I(sevl, "sevl") I(clrex, "clrex")
/* System registers EL0 may use. */
I(mrs_tpidr, "mrs x1, tpidr_el0") FN(msr_tpidr, "mrs x2, tpidr_el0", "msr tpidr_el0, x2", "") I(mrs_nzcv, "mrs x1, nzcv")
FN(msr_nzcv, "mrs x2, nzcv", "msr nzcv, x2", "") I(mrs_cntvct, "mrs x1, cntvct_el0") I(mrs_fpcr, "mrs x1, fpcr")
FN(msr_fpsr, "mrs x2, fpsr", "msr fpsr, x2", "") I(mrs_ctr, "mrs x1, ctr_el0") I(mrs_dczid, "mrs x1, dczid_el0")
/* Never run: exclusives, exception generation, privileged, unallocated. */
NR(ldxr, "ldxr x1, [x10]") NR(stxr, "stxr w3, x1, [x10]") NR(ldaxr, "ldaxr w1, [x10]") NR(stlxr, "stlxr w3, w1, [x10]")
NR(ldxp, "ldxp x1, x2, [x10]") NR(stxp, "stxp w3, x1, x2, [x10]") NR(brk, "brk #0") NR(svc, "svc #0") NR(hvc, "hvc #0")
NR(smc, "smc #0") NR(hlt, "hlt #0") NR(udf, "udf #0") NR(eret, "eret") NR(dcps1, "dcps1") NR(msr_daif, "msr daifset, #2")
NR(cas, ".inst 0xc8a07c41") NR(unalloc, ".inst 0xffffffff") NR(brk_5, "brk #5") NR(mrs_el1, "mrs x1, sctlr_el1")
NR(cpyfp, ".inst 0x19010440") NR(setp, ".inst 0x19c20420")

int main(int argc, char **argv) { return kb_main("corpus_a64", argc, argv); }
