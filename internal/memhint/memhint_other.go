//go:build !linux

package memhint

// Prefault does nothing where kboost does not pre-fault memory.
func Prefault[T any](s []T) {}

// PrefaultRead does nothing where kboost does not pre-fault memory.
func PrefaultRead(b []byte) {}
