//go:build !(linux && amd64)

package kernelsim

import (
	"fmt"
	"time"

	"github.com/kboost/kboost/decode"
)

// Sandbox is the hardware Backend; it needs linux/amd64.
type Sandbox struct {
	Watchdog    time.Duration
	CaseTimeout time.Duration
	Restarts    int
	LastCrash   string
}

var _ Backend = (*Sandbox)(nil)

func unsupported() error {
	return fmt.Errorf("kernelsim: the hardware sandbox needs linux/amd64: %w", errNotSupported)
}

// New fails with errNotSupported on this platform.
func New(a *Arch) (*Sandbox, error) { return nil, unsupported() }

// NewWithOptions fails with errNotSupported on this platform.
func NewWithOptions(a *Arch, o Options) (*Sandbox, error) { return nil, unsupported() }

// NativeExec fails with errNotSupported on this platform.
func NativeExec(a *Arch) error { return unsupported() }

// Arch implements Backend.
func (s *Sandbox) Arch() *Arch { return nil }

// Run implements Backend.
func (s *Sandbox) Run(cases []Case, results []Result) error { return unsupported() }

// Close implements Backend.
func (s *Sandbox) Close() error { return nil }

// Pid is always 0 here.
func (s *Sandbox) Pid() int { return 0 }

// Emulator is always "" here.
func (s *Sandbox) Emulator() string { return "" }

// HWLengths fails with errNotSupported on this platform.
func (s *Sandbox) HWLengths(bs [][]byte, out []HWLen) error { return unsupported() }

// HWLength fails with errNotSupported on this platform.
func HWLength(b []byte, mode decode.Mode) (int, LengthOutcome, error) {
	return 0, LenUnknown, unsupported()
}

// MeasureChecks fails with errNotSupported on this platform.
func MeasureChecks(a *Arch, d time.Duration, seed uint64) (CheckRate, error) {
	return CheckRate{}, unsupported()
}
