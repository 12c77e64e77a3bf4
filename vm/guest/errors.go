package guest

import "errors"

var (
	// ErrNotSupported is returned by Main on systems other than Linux.
	ErrNotSupported = errors.New("guest: only supported on linux")
	// ErrNotInit is returned by Main when it is not process 1 (not inside a guest).
	ErrNotInit = errors.New("guest: not running as init")
)
