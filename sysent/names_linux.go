//go:build linux

package sysent

import (
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrnoName names a Linux errno (x86 and ARM share asm-generic's numbers).
func ErrnoName(e int) string {
	if n := unix.ErrnoName(syscall.Errno(e)); n != "" {
		return n
	}
	if n := restartErrnos[e]; n != "" {
		return n
	}
	return "E" + strconv.Itoa(e)
}

// SignalName names a Linux signal number.
func SignalName(s int) string {
	if n := unix.SignalName(syscall.Signal(s)); n != "" {
		return n
	}
	return strconv.Itoa(s)
}
