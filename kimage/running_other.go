//go:build !linux

package kimage

import "fmt"

// FindRunningConfig needs Linux; elsewhere it returns errNotSupported.
func FindRunningConfig() (*KConfig, string, error) {
	return nil, "", fmt.Errorf("finding the running kernel's config: %w", errNotSupported)
}
