//go:build linux

package memhint

import (
	"syscall"
	"unsafe"
)

// madvPopulateRead and madvPopulateWrite are MADV_POPULATE_READ and
// MADV_POPULATE_WRITE (Linux 5.14): fault a range in, readable or writable,
// in one system call.
const (
	madvPopulateRead  = 22
	madvPopulateWrite = 23
)

// minBytes is the size below which Prefault does nothing: a system call
// costs more than the few faults it would save.
const minBytes = 64 << 10

// Prefault backs the whole capacity of s with memory now. The whole pages
// inside the backing array are populated; its contents are unchanged.
func Prefault[T any](s []T) {
	var zero T
	n := uintptr(cap(s)) * unsafe.Sizeof(zero)
	if n < minBytes {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s[:1])))
	start := (p + 4095) &^ 4095
	end := (p + n) &^ 4095
	if end <= start {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateWrite)
}

// PrefaultRead maps the pages of b (typically a view of a file mapping) for
// reading now, so that reading them later takes no page faults. Its contents
// are unchanged.
func PrefaultRead(b []byte) {
	if len(b) < minBytes {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	start := p &^ 4095
	end := (p + uintptr(len(b)) + 4095) &^ 4095
	syscall.Syscall(syscall.SYS_MADVISE, start, end-start, madvPopulateRead)
}
