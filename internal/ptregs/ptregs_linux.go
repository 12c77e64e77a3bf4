//go:build linux && amd64

package ptregs

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sizes of the NT_PRSTATUS register set: struct user_regs_struct of x86-64
// (27 longs) and of i386 (17 ints).
const (
	Len64 = 27 * 8
	Len32 = 17 * 4
)

const ntPRSTATUS = 1

// Layout says where the registers kboost uses sit in one register set.
type Layout struct {
	Name                   string
	Len, Word              int
	PC, SP, FP, OrigNr, Rv int // word indexes
	// Dwarf gives the word index of each DWARF register column, in the
	// psABI's numbering (x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8-r15
	// rip; i386: eax ecx edx ebx esp ebp esi edi eip): CFI unwinding.
	Dwarf []int
}

// The two layouts (arch/x86/include/asm/user_{64,32}.h).
var (
	X86_64 = &Layout{Name: "x86-64", Len: Len64, Word: 8, PC: 16, SP: 19, FP: 4, OrigNr: 15, Rv: 10,
		Dwarf: []int{10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16}}
	I386 = &Layout{Name: "i386", Len: Len32, Word: 4, PC: 12, SP: 15, FP: 5, OrigNr: 11, Rv: 6,
		Dwarf: []int{6, 1, 2, 0, 15, 5, 3, 4, 12}}
)

// Regs is one tracee's register set as the kernel gave it.
type Regs struct {
	L   *Layout
	raw [Len64]byte
}

// Get reads tid's registers.
func Get(tid int) (*Regs, error) {
	r := &Regs{}
	iov := unix.Iovec{Base: &r.raw[0]}
	iov.SetLen(len(r.raw))
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(tid),
		ntPRSTATUS, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return nil, fmt.Errorf("PTRACE_GETREGSET(NT_PRSTATUS): %w", errno)
	}
	switch iov.Len {
	case Len64:
		r.L = X86_64
	case Len32:
		r.L = I386
	default:
		return nil, fmt.Errorf("PTRACE_GETREGSET(NT_PRSTATUS): %d bytes, neither the x86-64 nor the i386 register set", iov.Len)
	}
	return r, nil
}

// Set writes r back to tid.
func (r *Regs) Set(tid int) error {
	iov := unix.Iovec{Base: &r.raw[0]}
	iov.SetLen(r.L.Len)
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETREGSET, uintptr(tid),
		ntPRSTATUS, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("PTRACE_SETREGSET(NT_PRSTATUS): %w", errno)
	}
	return nil
}

// Word returns register word i (zero-extended).
func (r *Regs) Word(i int) uint64 {
	if r.L.Word == 4 {
		return uint64(binary.LittleEndian.Uint32(r.raw[i*4:]))
	}
	return binary.LittleEndian.Uint64(r.raw[i*8:])
}

// SetWord sets register word i (truncated to the layout's word).
func (r *Regs) SetWord(i int, v uint64) {
	if r.L.Word == 4 {
		binary.LittleEndian.PutUint32(r.raw[i*4:], uint32(v))
		return
	}
	binary.LittleEndian.PutUint64(r.raw[i*8:], v)
}

// Dwarf returns the registers by DWARF column (Layout.Dwarf).
func (r *Regs) Dwarf() []uint64 {
	out := make([]uint64, len(r.L.Dwarf))
	for col, i := range r.L.Dwarf {
		out[col] = r.Word(i)
	}
	return out
}

// PC, SP and FP are the instruction, stack and frame pointers.
func (r *Regs) PC() uint64 { return r.Word(r.L.PC) }
func (r *Regs) SP() uint64 { return r.Word(r.L.SP) }
func (r *Regs) FP() uint64 { return r.Word(r.L.FP) }

// PC reads a stopped tracee's instruction pointer.
func PC(tid int) (uint64, error) {
	r, err := Get(tid)
	if err != nil {
		return 0, err
	}
	return r.PC(), nil
}
