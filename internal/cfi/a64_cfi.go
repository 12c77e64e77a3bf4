package cfi

import "github.com/kboost/kboost/decode"

// The AArch64 DWARF ABI's register numbers: x0-x30 are 0-30 (x29 the frame
// pointer, x30 the link register, which CIEs name as the return address
// column), sp 31. Pointer authentication's DW_CFA_AARCH64_negate_ra_state
// is not evaluated (an FDE using it is a format error): Debian's arm64 C
// library has none.
func init() {
	arches[decode.ARM64] = &Arch{SP: 31, FP: 29, PC: 30, Regs: 32, PtrSize: 8, LinkReg: true, SigReturn: a64SigReturn}
}

// a64SigReturnCode is the kernel's arm64 signal return trampoline, the
// vDSO's __kernel_rt_sigreturn (arch/arm64/kernel/vdso/sigreturn.S): mov
// x8, #139 (rt_sigreturn); svc #0, as one little-endian doubleword.
const a64SigReturnCode = 0xd4000001_d2801168

// The signal frame at the trampoline's sp (arch/arm64/kernel/signal.c's
// struct rt_sigframe): a 128-byte siginfo, then struct ucontext, whose
// uc_mcontext (struct sigcontext, 16-byte aligned) is at 176: fault_address,
// regs[31], sp, pc, pstate.
const a64SigcontextRegs = 128 + 176 + 8

// a64SigReturn restores the interrupted registers when pc is the
// trampoline: the vDSO's own CFI unwinds through the frame record the
// kernel pushes (the interrupted x29, x30), which skips the interrupted pc.
func a64SigReturn(pc uint64, r *Regs, mem Memory) (uint64, bool) {
	if w, ok := mem(pc); !ok || w != a64SigReturnCode {
		return 0, false
	}
	sp, ok := r.Get(31)
	if !ok {
		return 0, false
	}
	var v [33]uint64 // x0-x30, sp, pc
	for i := range v {
		if v[i], ok = mem(sp + a64SigcontextRegs + 8*uint64(i)); !ok {
			return 0, false
		}
	}
	for i := 0; i < 32; i++ {
		r.Set(i, v[i])
	}
	return v[32], true
}
