//go:build !linux

package sysent

import "strconv"

// ErrnoName names a Linux errno; only numbers off Linux.
func ErrnoName(e int) string { return "E" + strconv.Itoa(e) }

// SignalName names a Linux signal number; only numbers off Linux.
func SignalName(s int) string { return strconv.Itoa(s) }
