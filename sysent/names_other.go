//go:build !linux

package sysent

import "strconv"

// ErrnoName names a Linux errno; off Linux only the kernel's internal
// restart codes, numbers otherwise.
func ErrnoName(e int) string {
	if n := restartErrnos[e]; n != "" {
		return n
	}
	return "E" + strconv.Itoa(e)
}

// SignalName names a Linux signal number; only numbers off Linux.
func SignalName(s int) string { return strconv.Itoa(s) }
