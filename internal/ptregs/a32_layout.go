package ptregs

// A32 is 32-bit ARM's struct pt_regs (r0-r15, cpsr, orig_r0;
// arch/arm/include/uapi/asm/ptrace.h), also what an arm64 kernel answers
// for a compat task; r11 is the ARM-mode frame pointer (APCS frames differ
// from AAPCS64's records: a frame-pointer walk may stop early). The call
// number is not in the set (a32_linux.go skips a call with
// PTRACE_SET_SYSCALL). DWARF columns 0-15 are r0-r15, the set's own order
// (the ARM EHABI unwinder of internal/cfi numbers them so).
var A32 = &Layout{Name: "arm", Len: 18 * 4, Word: 4, PC: 15, SP: 13, FP: 11, OrigNr: -1, Rv: 0,
	Dwarf: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}}
