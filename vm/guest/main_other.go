//go:build !linux

package guest

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

var errNotSupported = fmt.Errorf("guest: only on linux: %w", decode.ErrNotSupported)

// Main fails with an error wrapping decode.ErrNotSupported: the guest runs
// only as /init of a Linux kernel.
func Main() error { return errNotSupported }
