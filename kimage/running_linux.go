//go:build linux

package kimage

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FindRunningConfig returns the configuration of the running kernel and where it
// was found: /proc/config.gz (CONFIG_IKCONFIG_PROC), else /boot/config-$(uname -r).
func FindRunningConfig() (*KConfig, string, error) {
	const proc = "/proc/config.gz"
	if _, err := os.Stat(proc); err == nil {
		c, err := LoadKConfig(proc)
		return c, proc, err
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, "", fmt.Errorf("uname: %w", err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	boot := "/boot/config-" + release
	if _, err := os.Stat(boot); err == nil {
		c, err := LoadKConfig(boot)
		return c, boot, err
	}
	return nil, "", fmt.Errorf("neither %s nor %s exists (load the configs module, install the kernel's package, or pass --config FILE): %w",
		proc, boot, ErrNoConfig)
}
