//go:build !linux

package loader

import "context"

// Tracefs drives kprobe_events (Linux only).
type Tracefs struct{ Dir string }

// CheckRoot returns ErrNotSupported off Linux.
func CheckRoot() error { return ErrNotSupported }

// OpenTracefs returns ErrNotSupported off Linux.
func OpenTracefs() (*Tracefs, error) { return nil, ErrNotSupported }

// ReadKprobesList returns ErrNotSupported off Linux.
func ReadKprobesList() ([]ListEntry, error) { return nil, ErrNotSupported }

// Add returns ErrNotSupported off Linux.
func (t *Tracefs) Add(s Spec) (Spec, error) { return s, ErrNotSupported }

// Enable returns ErrNotSupported off Linux.
func (t *Tracefs) Enable(group, event string, on bool) error { return ErrNotSupported }

// Remove returns ErrNotSupported off Linux.
func (t *Tracefs) Remove(group, event string) error { return ErrNotSupported }

// Events returns ErrNotSupported off Linux.
func (t *Tracefs) Events() ([]Event, error) { return nil, ErrNotSupported }

// Sweep returns ErrNotSupported off Linux.
func (t *Tracefs) Sweep() ([]Event, error) { return nil, ErrNotSupported }

// Profile returns ErrNotSupported off Linux.
func (t *Tracefs) Profile() ([]Profile, error) { return nil, ErrNotSupported }

// Hits returns ErrNotSupported off Linux.
func (t *Tracefs) Hits(group, event string) (uint64, error) { return 0, ErrNotSupported }

// KprobePMUType returns ErrNotSupported off Linux.
func KprobePMUType() (uint32, error) { return 0, ErrNotSupported }

// PerfProbe is a perf-owned kprobe (Linux only).
type PerfProbe struct{ Spec Spec }

// OpenPerf returns ErrNotSupported off Linux.
func OpenPerf(s Spec) (*PerfProbe, error) { return nil, ErrNotSupported }

// Hits returns ErrNotSupported off Linux.
func (p *PerfProbe) Hits() (uint64, error) { return 0, ErrNotSupported }

// Close does nothing off Linux.
func (p *PerfProbe) Close() error { return nil }

// Kcore reads /proc/kcore (Linux only).
type Kcore struct{}

// OpenKcore returns ErrNotSupported off Linux.
func OpenKcore() (*Kcore, error) { return nil, ErrNotSupported }

// Read returns ErrNotSupported off Linux.
func (k *Kcore) Read(addr uint64, n int) ([]byte, error) { return nil, ErrNotSupported }

// Close does nothing off Linux.
func (k *Kcore) Close() error { return nil }

// Live is the running kernel (Linux only).
type Live struct {
	Pred         *Predictor
	Kcore        *Kcore
	Optimization bool
	ConfigFrom   string
	Source       string
}

// OpenLive returns ErrNotSupported off Linux.
func OpenLive(vmlinux, cfgPath string) (*Live, error) { return nil, ErrNotSupported }

// Close does nothing off Linux.
func (lv *Live) Close() error { return nil }

// Expect returns ErrNotSupported off Linux.
func (lv *Live) Expect(s Spec) (Expectation, error) { return Expectation{}, ErrNotSupported }

// KprobesList is debugfs' list of registered kprobes.
const KprobesList = "/sys/kernel/debug/kprobes/list"

// Watch returns ErrNotSupported off Linux.
func Watch(ctx context.Context, specs []Spec, opt WatchOptions) error { return ErrNotSupported }

// Place returns ErrNotSupported off Linux.
func (lv *Live) Place(s Spec) (Spec, Placement, error) { return s, Placement{}, ErrNotSupported }

// SlotSnapshot returns nil off Linux.
func (lv *Live) SlotSnapshot() SlotPages { return nil }

// Readback returns nothing off Linux.
func (lv *Live) Readback(x *Expectation, le *ListEntry, before SlotPages) Readback {
	return Readback{}
}

// The dynamic-event files of tracefs.
const (
	KprobeEvents = "kprobe_events"
	UprobeEvents = "uprobe_events"
)

// OpenTracefsWith returns ErrNotSupported off Linux.
func OpenTracefsWith(file string, missing error) (*Tracefs, error) { return nil, ErrNotSupported }

// Register returns ErrNotSupported off Linux.
func (t *Tracefs) Register(file, def, point string) error { return ErrNotSupported }

// RemoveFrom returns ErrNotSupported off Linux.
func (t *Tracefs) RemoveFrom(file, group, event string) error { return ErrNotSupported }

// EventsOf returns ErrNotSupported off Linux.
func (t *Tracefs) EventsOf(file string) ([]Event, error) { return nil, ErrNotSupported }

// SweepOf returns ErrNotSupported off Linux.
func (t *Tracefs) SweepOf(file string) ([]Event, error) { return nil, ErrNotSupported }

// ReadFile returns ErrNotSupported off Linux.
func (t *Tracefs) ReadFile(name string) ([]byte, error) { return nil, ErrNotSupported }

// Type returns ErrNotSupported off Linux.
func (p PMU) Type() (uint32, error) { return 0, ErrNotSupported }

// Field returns ErrNotSupported off Linux.
func (p PMU) Field(name string) (shift, width uint, err error) { return 0, 0, ErrNotSupported }

// PerfEvents is a set of perf counters (Linux only).
type PerfEvents struct{}

// Count returns ErrNotSupported off Linux.
func (ev *PerfEvents) Count() (uint64, error) { return 0, ErrNotSupported }

// Close does nothing off Linux.
func (ev *PerfEvents) Close() error { return nil }

// CheckKprobes returns ErrNotSupported off Linux.
func CheckKprobes() error { return ErrNotSupported }
