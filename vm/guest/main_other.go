//go:build !linux

package guest

// Main reports ErrNotSupported: the guest runs only as /init of a Linux kernel.
func Main() error { return ErrNotSupported }
