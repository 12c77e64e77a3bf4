//go:build !linux

package loader

import (
	"context"
	"fmt"

	"github.com/kboost/kboost/decode"
)

var errNotSupported = fmt.Errorf("loader: live kprobes need Linux: %w", decode.ErrNotSupported)

// Tracefs drives kprobe_events (Linux only).
type Tracefs struct{ Dir string }

// CheckRoot returns errNotSupported off Linux.
func CheckRoot() error { return errNotSupported }

// OpenTracefs returns errNotSupported off Linux.
func OpenTracefs() (*Tracefs, error) { return nil, errNotSupported }

// ReadKprobesList returns errNotSupported off Linux.
func ReadKprobesList() ([]ListEntry, error) { return nil, errNotSupported }

// Add returns errNotSupported off Linux.
func (t *Tracefs) Add(s Spec) (Spec, error) { return s, errNotSupported }

// Enable returns errNotSupported off Linux.
func (t *Tracefs) Enable(group, event string, on bool) error { return errNotSupported }

// Remove returns errNotSupported off Linux.
func (t *Tracefs) Remove(group, event string) error { return errNotSupported }

// Events returns errNotSupported off Linux.
func (t *Tracefs) Events() ([]Event, error) { return nil, errNotSupported }

// Sweep returns errNotSupported off Linux.
func (t *Tracefs) Sweep() ([]Event, error) { return nil, errNotSupported }

// Profile returns errNotSupported off Linux.
func (t *Tracefs) Profile() ([]Profile, error) { return nil, errNotSupported }

// Hits returns errNotSupported off Linux.
func (t *Tracefs) Hits(group, event string) (uint64, error) { return 0, errNotSupported }

// KprobePMUType returns errNotSupported off Linux.
func KprobePMUType() (uint32, error) { return 0, errNotSupported }

// PerfProbe is a perf-owned kprobe (Linux only).
type PerfProbe struct{ Spec Spec }

// OpenPerf returns errNotSupported off Linux.
func OpenPerf(s Spec) (*PerfProbe, error) { return nil, errNotSupported }

// Hits returns errNotSupported off Linux.
func (p *PerfProbe) Hits() (uint64, error) { return 0, errNotSupported }

// Close does nothing off Linux.
func (p *PerfProbe) Close() error { return nil }

// Kcore reads /proc/kcore (Linux only).
type Kcore struct{}

// OpenKcore returns errNotSupported off Linux.
func OpenKcore() (*Kcore, error) { return nil, errNotSupported }

// Read returns errNotSupported off Linux.
func (k *Kcore) Read(addr uint64, n int) ([]byte, error) { return nil, errNotSupported }

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

// OpenLive returns errNotSupported off Linux.
func OpenLive(vmlinux, cfgPath string) (*Live, error) { return nil, errNotSupported }

// Close does nothing off Linux.
func (lv *Live) Close() error { return nil }

// Expect returns errNotSupported off Linux.
func (lv *Live) Expect(s Spec) (Expectation, error) { return Expectation{}, errNotSupported }

// KprobesList is debugfs' list of registered kprobes.
const KprobesList = "/sys/kernel/debug/kprobes/list"

// Watch returns errNotSupported off Linux.
func Watch(ctx context.Context, specs []Spec, opt WatchOptions) error { return errNotSupported }

// Place returns errNotSupported off Linux.
func (lv *Live) Place(s Spec) (Spec, Placement, error) { return s, Placement{}, errNotSupported }

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

// OpenTracefsWith returns errNotSupported off Linux.
func OpenTracefsWith(file string, missing error) (*Tracefs, error) { return nil, errNotSupported }

// Register returns errNotSupported off Linux.
func (t *Tracefs) Register(file, def, point string) error { return errNotSupported }

// RemoveFrom returns errNotSupported off Linux.
func (t *Tracefs) RemoveFrom(file, group, event string) error { return errNotSupported }

// EventsOf returns errNotSupported off Linux.
func (t *Tracefs) EventsOf(file string) ([]Event, error) { return nil, errNotSupported }

// SweepOf returns errNotSupported off Linux.
func (t *Tracefs) SweepOf(file string) ([]Event, error) { return nil, errNotSupported }

// ReadFile returns errNotSupported off Linux.
func (t *Tracefs) ReadFile(name string) ([]byte, error) { return nil, errNotSupported }

// Type returns errNotSupported off Linux.
func (p PMU) Type() (uint32, error) { return 0, errNotSupported }

// Field returns errNotSupported off Linux.
func (p PMU) Field(name string) (shift, width uint, err error) { return 0, 0, errNotSupported }

// PerfEvents is a set of perf counters (Linux only).
type PerfEvents struct{}

// Count returns errNotSupported off Linux.
func (ev *PerfEvents) Count() (uint64, error) { return 0, errNotSupported }

// Close does nothing off Linux.
func (ev *PerfEvents) Close() error { return nil }

// CheckKprobes returns errNotSupported off Linux.
func CheckKprobes() error { return errNotSupported }
