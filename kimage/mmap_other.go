//go:build !linux

package kimage

import "os"

// OpenMapped is Open on systems where kboost does not map files.
func OpenMapped(path string) (*File, error) { return Open(path) }

// readSymbolFile reads a symbol map.
func readSymbolFile(path string) ([]byte, error) { return os.ReadFile(path) }
