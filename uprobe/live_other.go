//go:build !linux

package uprobe

import (
	"context"

	"github.com/kboost/kboost/loader"
)

// PMUEvent is a perf-owned uprobe (Linux only).
type PMUEvent struct{ Probe Probe }

// OpenPMU returns ErrNotSupported off Linux.
func OpenPMU(p Probe) (*PMUEvent, error) { return nil, ErrNotSupported }

// Hits returns ErrNotSupported off Linux.
func (e *PMUEvent) Hits() (uint64, error) { return 0, ErrNotSupported }

// Close does nothing off Linux.
func (e *PMUEvent) Close() error { return nil }

// ReadBack returns ErrNotSupported off Linux.
func ReadBack(pid int, path string, off uint64, n int) (Readback, error) {
	return Readback{}, ErrNotSupported
}

// AddTracefs returns ErrNotSupported off Linux.
func AddTracefs(p Probe, event string) (string, error) { return "", ErrNotSupported }

// RemoveTracefs returns ErrNotSupported off Linux.
func RemoveTracefs(group, event string) error { return ErrNotSupported }

// SweepTracefs returns ErrNotSupported off Linux.
func SweepTracefs() ([]loader.Event, error) { return nil, ErrNotSupported }

// ListTracefs returns ErrNotSupported off Linux.
func ListTracefs() ([]TracefsProbe, error) { return nil, ErrNotSupported }

// Watch returns ErrNotSupported off Linux.
func Watch(ctx context.Context, probes []Probe, opt WatchOptions) error { return ErrNotSupported }

// Bench returns ErrNotSupported off Linux.
func Bench(dir string, scale float64, runs int, k *Kernel) ([]BenchRow, error) {
	return nil, ErrNotSupported
}

// BenchTarget returns ErrNotSupported off Linux.
func BenchTarget(file string, site Site, ret bool, argv []string, runs int) ([]TargetRow, error) {
	return nil, ErrNotSupported
}

// TrialProcess is a started trial program (Linux only).
type TrialProcess struct{}

// StartTrial returns ErrNotSupported off Linux.
func StartTrial(bin string, args ...string) (*TrialProcess, error) { return nil, ErrNotSupported }

// Trial returns ErrNotSupported off Linux.
func Trial(bin string, p Probe, norun bool, args ...string) (TrialResult, error) {
	return TrialResult{}, ErrNotSupported
}
