//go:build !linux

package vm

import "context"

// CheckKbuildDeps returns ErrNotSupported: kernels are built on Linux only.
func CheckKbuildDeps() error { return ErrNotSupported }

// BuildBoostKernel returns ErrNotSupported: kernels are built on Linux only.
func BuildBoostKernel(ctx context.Context, opts KbuildOptions) (*KernelBuild, error) {
	return nil, ErrNotSupported
}
