//go:build linux && arm64

package ptregs

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ntARMSystemCall is NT_ARM_SYSTEM_CALL: the number of the call a task
// stopped at its entry will run (-1: none).
const ntARMSystemCall = 0x404

// hostLayouts: an arm64 kernel answers A64 for its tasks and A32 for
// compat (AArch32) ones.
var hostLayouts = []*Layout{A64, A32}

func init() {
	A64.skip = skipA64
	A32.skip = skipA64
}

func skipA64(tid int) error {
	nr := int32(-1)
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&nr))}
	iov.SetLen(4)
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_SETREGSET, uintptr(tid),
		ntARMSystemCall, uintptr(unsafe.Pointer(&iov)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("PTRACE_SETREGSET(NT_ARM_SYSTEM_CALL): %w", errno)
	}
	return nil
}
