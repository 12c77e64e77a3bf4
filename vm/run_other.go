//go:build !linux

package vm

import (
	"context"
	"fmt"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/vm/guest"
)

// errNotSupported is returned on systems other than Linux.
var errNotSupported = fmt.Errorf("vm: only on linux: %w", decode.ErrNotSupported)

// Run reports errNotSupported: booting guests needs Linux.
func Run(ctx context.Context, cfg Config, steps ...guest.Step) (*Result, error) {
	return nil, errNotSupported
}
