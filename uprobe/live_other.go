//go:build !linux

package uprobe

import (
	"context"
	"fmt"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/loader"
)

var errNotSupported = fmt.Errorf("uprobe: live uprobes need Linux: %w", decode.ErrNotSupported)

// PMUEvent is a perf-owned uprobe (Linux only).
type PMUEvent struct{ Probe Probe }

// OpenPMU returns errNotSupported off Linux.
func OpenPMU(p Probe) (*PMUEvent, error) { return nil, errNotSupported }

// Hits returns errNotSupported off Linux.
func (e *PMUEvent) Hits() (uint64, error) { return 0, errNotSupported }

// Close does nothing off Linux.
func (e *PMUEvent) Close() error { return nil }

// ReadBack returns errNotSupported off Linux.
func ReadBack(pid int, path string, off uint64, n int) (Readback, error) {
	return Readback{}, errNotSupported
}

// AddTracefs returns errNotSupported off Linux.
func AddTracefs(p Probe, event string) (string, error) { return "", errNotSupported }

// RemoveTracefs returns errNotSupported off Linux.
func RemoveTracefs(group, event string) error { return errNotSupported }

// SweepTracefs returns errNotSupported off Linux.
func SweepTracefs() ([]loader.Event, error) { return nil, errNotSupported }

// ListTracefs returns errNotSupported off Linux.
func ListTracefs() ([]TracefsProbe, error) { return nil, errNotSupported }

// Watch returns errNotSupported off Linux.
func Watch(ctx context.Context, probes []Probe, opt WatchOptions) error { return errNotSupported }

// Bench returns errNotSupported off Linux.
func Bench(dir string, scale float64, runs int, k *Kernel) ([]BenchRow, error) {
	return nil, errNotSupported
}

// BenchTarget returns errNotSupported off Linux.
func BenchTarget(file string, site Site, ret bool, argv []string, runs int) ([]TargetRow, error) {
	return nil, errNotSupported
}

// TrialProcess is a started trial program (Linux only).
type TrialProcess struct{}

// StartTrial returns errNotSupported off Linux.
func StartTrial(bin string, args ...string) (*TrialProcess, error) { return nil, errNotSupported }

// Trial returns errNotSupported off Linux.
func Trial(bin string, p Probe, norun bool, args ...string) (TrialResult, error) {
	return TrialResult{}, errNotSupported
}
