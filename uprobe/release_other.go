//go:build !linux

package uprobe

// RunningRelease needs Linux.
func RunningRelease() (string, error) { return "", errNotSupported }
