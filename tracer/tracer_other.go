//go:build !(linux && amd64)

package tracer

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

// Tracer is a running trace (not available on this platform).
type Tracer struct{}

// New fails off linux/amd64.
func New(cfg Config) (*Tracer, error) {
	return nil, fmt.Errorf("%w: ptrace tracing needs linux/amd64: %w", ErrTracer, decode.ErrNotSupported)
}

// Run is never reached off linux/amd64.
func (t *Tracer) Run(h Handler) (Result, error) { return Result{}, decode.ErrNotSupported }

// Detach is a no-op off linux/amd64.
func (t *Tracer) Detach() {}

// ReadString is not available off linux/amd64.
func ReadString(pid int, addr uint64, max int) (string, bool, error) {
	return "", false, decode.ErrNotSupported
}

// ReadMem is not available off linux/amd64.
func ReadMem(pid int, addr uint64, buf []byte) (int, error) { return 0, decode.ErrNotSupported }
