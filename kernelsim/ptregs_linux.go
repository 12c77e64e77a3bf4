//go:build linux && amd64

package kernelsim

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sizes of the NT_PRSTATUS register set: struct user_regs_struct of x86-64
// (27 longs) and of i386 (17 ints).
const (
	prstatus64Len = 27 * 8
	prstatus32Len = 17 * 4
)

// tracedPC reads a stopped tracee's instruction pointer through
// PTRACE_GETREGSET(NT_PRSTATUS), which answers in the tracee's own layout and
// says how long it is. PTRACE_GETREGS is not used: which layout it fills for
// a 32-bit tracee depends on how the kernel judges the tracer's mode, and
// some hypervisor guests (PVM, whose user code segment is not __USER_CS)
// fill the i386 layout into the 64-bit struct, leaving rip zero.
func tracedPC(pid int) (uint64, error) {
	var buf [prstatus64Len]byte
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_GETREGSET, uintptr(pid),
		uintptr(_NT_PRSTATUS), uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return 0, fmt.Errorf("PTRACE_GETREGSET(NT_PRSTATUS): %w", errno)
	}
	switch iov.Len {
	case prstatus64Len:
		return binary.LittleEndian.Uint64(buf[16*8:]), nil // rip
	case prstatus32Len:
		return uint64(binary.LittleEndian.Uint32(buf[12*4:])), nil // eip
	}
	return 0, fmt.Errorf("PTRACE_GETREGSET(NT_PRSTATUS): %d bytes, neither the x86-64 nor the i386 register set", iov.Len)
}

const _NT_PRSTATUS = 1
