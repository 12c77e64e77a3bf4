//go:build !linux

package kimage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// CacheDir returns $KBOOST_CACHE, else $HOME/.cache/kboost.
func CacheDir() string {
	if d := os.Getenv("KBOOST_CACHE"); d != "" {
		return d
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".cache", "kboost")
	}
	return filepath.Join(os.TempDir(), "kboost-cache")
}

// FetchDebianKernel needs apt on Linux; elsewhere it returns errNotSupported.
func FetchDebianKernel(ctx context.Context, meta string) (string, error) {
	return "", fmt.Errorf("fetching %s: %w", meta, errNotSupported)
}

// FetchDebianKernelVersion needs apt on Linux; elsewhere it returns errNotSupported.
func FetchDebianKernelVersion(ctx context.Context, meta, version string) (string, error) {
	return "", fmt.Errorf("fetching %s %s: %w", meta, version, errNotSupported)
}
