package guest

import "errors"

var (
	// ErrNotInit is returned by Main when it is not process 1 (not inside a guest).
	ErrNotInit = errors.New("guest: not running as init")
)
