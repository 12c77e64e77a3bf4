package ptregs

// A32 is 32-bit ARM's struct pt_regs (r0-r15, cpsr, orig_r0;
// arch/arm/include/uapi/asm/ptrace.h), also what an arm64 kernel answers
// for a compat task; r11 is the ARM-mode frame pointer (APCS frames differ
// from AAPCS64's records: a frame-pointer walk may stop early). The call
// number is not in the set (a32_linux.go skips a call with
// PTRACE_SET_SYSCALL).
var A32 = &Layout{Name: "arm", Len: 18 * 4, Word: 4, PC: 15, SP: 13, FP: 11, OrigNr: -1, Rv: 0}
