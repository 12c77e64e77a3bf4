//go:build !linux

package vm

import "context"

// CheckKbuildDeps returns errNotSupported: kernels are built on Linux only.
func CheckKbuildDeps() error { return errNotSupported }

// BuildBoostKernel returns errNotSupported: kernels are built on Linux only.
func BuildBoostKernel(ctx context.Context, opts KbuildOptions) (*KernelBuild, error) {
	return nil, errNotSupported
}
