//go:build !linux

package uprobe

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
