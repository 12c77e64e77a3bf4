package ptregs

// A64 is arm64's struct user_pt_regs (x0-x30, sp, pc, pstate;
// arch/arm64/include/uapi/asm/ptrace.h): the system call number is not in
// it (x8 holds it, but the kernel reads its own copy: a64_linux.go skips a
// call through NT_ARM_SYSTEM_CALL); x29 is the frame pointer of AAPCS64's
// frame records.
var A64 = &Layout{Name: "arm64", Len: 34 * 8, Word: 8, PC: 32, SP: 31, FP: 29, OrigNr: -1, Rv: 0}
