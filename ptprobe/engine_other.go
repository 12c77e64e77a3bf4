//go:build !(linux && amd64)

package ptprobe

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

// Engine is a trace (not available on this platform).
type Engine struct{}

// New fails off linux/amd64.
func New(opt Options) (*Engine, error) {
	return nil, fmt.Errorf("%w: kboost trace needs linux/amd64 (ptrace): %w", ErrEngine, decode.ErrNotSupported)
}

// Run is never reached off linux/amd64.
func (e *Engine) Run() (Summary, error) { return Summary{}, decode.ErrNotSupported }

// Detach is a no-op off linux/amd64.
func (e *Engine) Detach() {}

// Installed never fires off linux/amd64.
func (e *Engine) Installed() <-chan struct{} { return nil }
