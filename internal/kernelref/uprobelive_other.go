//go:build !linux

package kernelref

// HostUprobes needs Linux; see the Linux version.
func HostUprobes(bits int, insns [][]byte, dir string) ([]string, error) {
	return nil, errNotSupported
}

// KernelRelease needs Linux.
func KernelRelease() (string, error) { return "", errNotSupported }
