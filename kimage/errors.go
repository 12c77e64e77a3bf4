package kimage

import (
	"errors"
	"fmt"

	"github.com/kboost/kboost/decode"
)

// Sentinel errors. Functions wrap them with %w and add the file or field at fault;
// test with errors.Is.
var (
	// ErrFormat: the input is not in any format kimage recognises.
	ErrFormat = errors.New("unrecognised file format")
	// ErrCorrupt: the input has a recognised format but is truncated or malformed.
	ErrCorrupt = errors.New("corrupt or truncated input")
	// ErrUnsupportedArch: the file is for a machine kboost does not (yet) decode.
	ErrUnsupportedArch = errors.New("unsupported architecture")
	// ErrUnsupportedCompression: a compressed payload uses a method kimage lacks.
	ErrUnsupportedCompression = errors.New("unsupported compression")
	// ErrNoKernel: a Debian package holds no ./boot/vmlinuz-*.
	ErrNoKernel = errors.New("no kernel image in package")
	// ErrPlaceholderMap: the System.map is Debian's placeholder pointing at the
	// -dbg package, not a symbol table.
	ErrPlaceholderMap = errors.New("placeholder System.map (the real one is in the linux-image-*-dbg package)")
	// ErrKptrRestrict: every address in a kallsyms dump is zero.
	ErrKptrRestrict = errors.New("all symbol addresses are zero: run as root or set kernel.kptr_restrict=0")
	// ErrNoSymbol: a symbol name is not in the table.
	ErrNoSymbol = errors.New("no such symbol")
	// ErrNoConfig: no kernel configuration could be found.
	ErrNoConfig = errors.New("no kernel configuration found")
	// errNotSupported: the operation needs Linux (or apt) and this is not it.
	errNotSupported = fmt.Errorf("kimage: %w", decode.ErrNotSupported)
	// ErrAddress: an address lies in no section with file contents.
	ErrAddress = errors.New("address not backed by file contents")
	// ErrUnknownPackage: a kernel meta package kboost does not know how to fetch.
	ErrUnknownPackage = errors.New("unknown kernel meta package")
)

// FormatError describes malformed input: what was being read, where, and why.
// It wraps ErrFormat, ErrCorrupt, ErrUnsupportedCompression or ErrUnsupportedArch.
type FormatError struct {
	What string // "xz block header", "ar member header", "System.map line 12", ...
	Off  int64  // byte offset in the input, or -1
	Why  string
	Err  error
}

func (e *FormatError) Error() string {
	if e.Off >= 0 {
		return fmt.Sprintf("%s at offset %#x: %s: %v", e.What, e.Off, e.Why, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.What, e.Why, e.Err)
}

func (e *FormatError) Unwrap() error { return e.Err }

func corrupt(what string, off int64, format string, args ...any) error {
	return &FormatError{What: what, Off: off, Why: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}
