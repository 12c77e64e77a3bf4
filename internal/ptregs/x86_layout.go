package ptregs

// Sizes of the NT_PRSTATUS register set: struct user_regs_struct of x86-64
// (27 longs) and of i386 (17 ints).
const (
	Len64 = 27 * 8
	Len32 = 17 * 4
)

// The two layouts (arch/x86/include/asm/user_{64,32}.h).
var (
	X86_64 = &Layout{Name: "x86-64", Len: Len64, Word: 8, PC: 16, SP: 19, FP: 4, OrigNr: 15, Rv: 10,
		Dwarf: []int{10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16}}
	I386 = &Layout{Name: "i386", Len: Len32, Word: 4, PC: 12, SP: 15, FP: 5, OrigNr: 11, Rv: 6,
		Dwarf: []int{6, 1, 2, 0, 15, 5, 3, 4, 12}}
)
