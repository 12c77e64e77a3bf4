//go:build !(linux && amd64)

package native

import (
	"fmt"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
)

// Sandbox is the hardware backend; it needs linux/amd64.
type Sandbox struct {
	Watchdog    time.Duration
	CaseTimeout time.Duration
	Restarts    int
	LastCrash   string
}

var _ kernelsim.Backend = (*Sandbox)(nil)

func unsupported() error {
	return fmt.Errorf("kernelsim: the hardware sandbox needs linux/amd64: %w", errNotSupported)
}

// New fails with errNotSupported on this platform.
func New(a *kernelsim.Arch) (*Sandbox, error) { return nil, unsupported() }

// NewWithOptions fails with errNotSupported on this platform.
func NewWithOptions(a *kernelsim.Arch, o kernelsim.Options) (*Sandbox, error) {
	return nil, unsupported()
}

// NativeExec fails with errNotSupported on this platform.
func NativeExec(a *kernelsim.Arch) error { return unsupported() }

// Arch implements kernelsim.Backend.
func (s *Sandbox) Arch() *kernelsim.Arch { return nil }

// Run implements kernelsim.Backend.
func (s *Sandbox) Run(cases []kernelsim.Case, results []kernelsim.Result) error { return unsupported() }

// Close implements kernelsim.Backend.
func (s *Sandbox) Close() error { return nil }

// Pid is always 0 here.
func (s *Sandbox) Pid() int { return 0 }

// Emulator is always "" here.
func (s *Sandbox) Emulator() string { return "" }

// HWLengths fails with errNotSupported on this platform.
func (s *Sandbox) HWLengths(bs [][]byte, out []HWLen) error { return unsupported() }

// HWLengthsHint fails with errNotSupported on this platform.
func (s *Sandbox) HWLengthsHint(bs [][]byte, hints []int, out []HWLen) error { return unsupported() }

// HWLength fails with errNotSupported on this platform.
func HWLength(b []byte, mode decode.Mode) (int, LengthOutcome, error) {
	return 0, LenUnknown, unsupported()
}

// MeasureChecks fails with errNotSupported on this platform.
func MeasureChecks(a *kernelsim.Arch, d time.Duration, seed uint64) (CheckRate, error) {
	return CheckRate{}, unsupported()
}
