package loader

import (
	"context"
	"time"
)

// Target chooses how probes are inserted.
type Target int

const (
	// TargetAuto uses the perf kprobe PMU when present, else tracefs.
	TargetAuto Target = iota
	// TargetPerf: fd-scoped probes through perf_event_open.
	TargetPerf
	// TargetTracefs: kprobe_events in a kboost group.
	TargetTracefs
)

func (t Target) String() string {
	switch t {
	case TargetPerf:
		return "perf"
	case TargetTracefs:
		return "tracefs"
	}
	return "auto"
}

// Count is one probe's hit count at a tick.
type Count struct {
	Spec Spec
	Hits uint64
}

// WatchOptions configure Watch.
type WatchOptions struct {
	Target   Target
	Interval time.Duration // between OnTick calls; 0 means 1 s
	// OnReady is called once every probe is in place, with the target used.
	OnReady func(Target)
	// OnTick receives the counts every Interval (and once at the end).
	OnTick func([]Count)
}

// TickCounts reports counts() to onTick (if set) every interval until ctx is
// done, then once more; an error from counts ends it.
func TickCounts[T any](ctx context.Context, interval time.Duration, counts func() (T, error), onTick func(T)) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if c, err := counts(); err == nil && onTick != nil {
				onTick(c)
			}
			return nil
		case <-tick.C:
			c, err := counts()
			if err != nil {
				return err
			}
			if onTick != nil {
				onTick(c)
			}
		}
	}
}
