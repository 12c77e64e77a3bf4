//go:build !linux

package vm

func lockFile(path string) (func(), error) { return nil, errNotSupported }
