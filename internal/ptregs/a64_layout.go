package ptregs

// A64 is arm64's struct user_pt_regs (x0-x30, sp, pc, pstate;
// arch/arm64/include/uapi/asm/ptrace.h): the system call number is not in
// it (x8 holds it, but the kernel reads its own copy: a64_linux.go skips a
// call through NT_ARM_SYSTEM_CALL); x29 is the frame pointer of AAPCS64's
// frame records. DWARF columns 0-30 are x0-x30 and 31 sp: the set's own
// order.
var A64 = &Layout{Name: "arm64", Len: 34 * 8, Word: 8, PC: 32, SP: 31, FP: 29, OrigNr: -1, Rv: 0,
	Dwarf: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31}}
