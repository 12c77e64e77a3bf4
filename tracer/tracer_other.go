//go:build !(linux && (amd64 || 386 || arm64 || arm))

package tracer

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

// Tracer is a running trace (not available here).
type Tracer struct{}

// New fails off those platforms.
func New(cfg Config) (*Tracer, error) {
	return nil, fmt.Errorf("%w: ptrace tracing needs Linux on amd64, 386, arm64 or arm: %w", ErrTracer, decode.ErrNotSupported)
}

// Run is never reached off those platforms.
func (t *Tracer) Run(h Handler) (Result, error) { return Result{}, decode.ErrNotSupported }

// Detach is a no-op off those platforms.
func (t *Tracer) Detach() {}

// ReadString is not available off those platforms.
func ReadString(pid int, addr uint64, max int) (string, bool, error) {
	return "", false, decode.ErrNotSupported
}

// ReadMem is not available off those platforms.
func ReadMem(pid int, addr uint64, buf []byte) (int, error) { return 0, decode.ErrNotSupported }
