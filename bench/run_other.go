//go:build !(linux && amd64)

package bench

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

// Run needs Linux on amd64 (ptrace, the kernel's uprobes).
func Run(opt Options) (*Result, error) {
	return nil, fmt.Errorf("%w: kboost bench: %w", ErrBench, decode.ErrNotSupported)
}
