package ptregs

// Layout says where the registers kboost uses sit in one register set.
type Layout struct {
	Name                   string
	Len, Word              int
	PC, SP, FP, OrigNr, Rv int // word indexes (OrigNr: -1, the number is not in the set)
	// Dwarf gives the word index of each DWARF register column, in the
	// psABI's numbering (x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15
	// rip; i386: eax ecx edx ebx esp ebp esi edi eip): CFI unwinding. Nil:
	// no CFI unwinding for the set.
	Dwarf []int
	// skip cancels the call at a syscall-entry stop where the number is
	// not in the set (nil: OrigNr = -1 does it).
	skip func(tid int) error
}

// maxLen is the largest register set of any layout (arm64's).
const maxLen = 34 * 8
