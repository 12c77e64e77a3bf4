//go:build linux

package uprobe

import "golang.org/x/sys/unix"

// RunningRelease is the running kernel's release (uname -r).
func RunningRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}
