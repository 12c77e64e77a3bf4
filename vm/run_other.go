//go:build !linux

package vm

import (
	"context"

	"github.com/kboost/kboost/vm/guest"
)

// Run reports ErrNotSupported: booting guests needs Linux.
func Run(ctx context.Context, cfg Config, steps ...guest.Step) (*Result, error) {
	return nil, ErrNotSupported
}
