//go:build !linux

package kimage

// OpenMapped is Open on systems where kboost does not map files.
func OpenMapped(path string) (*File, error) { return Open(path) }
