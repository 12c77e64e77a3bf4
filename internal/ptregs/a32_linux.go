//go:build linux && arm

package ptregs

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ptraceSetSyscall is ARM's PTRACE_SET_SYSCALL: the number of the call a
// task stopped at its entry will run (-1: none).
const ptraceSetSyscall = 23

var hostLayouts = []*Layout{A32}

func init() { A32.skip = skipA32 }

func skipA32(tid int) error {
	_, _, errno := unix.Syscall6(unix.SYS_PTRACE, ptraceSetSyscall, uintptr(tid), 0, ^uintptr(0), 0, 0)
	if errno != 0 {
		return fmt.Errorf("PTRACE_SET_SYSCALL: %w", errno)
	}
	return nil
}
