//go:build linux

package loader

import (
	"context"
	"errors"
	"time"
)

// Watch inserts the probes, reports hit counts until ctx is done, then removes
// them. With the perf target the probes also vanish if the process is killed;
// with tracefs a killed watcher leaves them behind for Sweep.
func Watch(ctx context.Context, specs []Spec, opt WatchOptions) (err error) {
	if err := CheckKprobes(); err != nil {
		return err
	}
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	target := opt.Target
	if target == TargetAuto {
		target = TargetTracefs
		if _, err := KprobePMUType(); err == nil {
			target = TargetPerf
		}
	}
	var counts func() ([]Count, error)
	switch target {
	case TargetPerf:
		var probes []*PerfProbe
		probes, err = OpenCounters(specs, OpenPerf)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, CloseCounters(probes)) }()
		counts = func() ([]Count, error) {
			hits, err := ReadCounters(probes)
			if err != nil {
				return nil, err
			}
			out := make([]Count, len(probes))
			for i, p := range probes {
				out[i] = Count{p.Spec, hits[i]}
			}
			return out, nil
		}
	default:
		t, err := OpenTracefs()
		if err != nil {
			return err
		}
		var added []Spec
		defer func() {
			for _, s := range added {
				err = errors.Join(err, t.Remove(s.Group, s.Event))
			}
		}()
		for _, s := range specs {
			n, err := t.Add(s)
			if err != nil {
				return err
			}
			added = append(added, n)
			if err := t.Enable(n.Group, n.Event, true); err != nil {
				return err
			}
		}
		counts = func() ([]Count, error) {
			out := make([]Count, len(added))
			for i, s := range added {
				h, err := t.Hits(s.Group, s.Event)
				if err != nil {
					return nil, err
				}
				out[i] = Count{s, h}
			}
			return out, nil
		}
	}
	if opt.OnReady != nil {
		opt.OnReady(target)
	}
	return TickCounts(ctx, opt.Interval, counts, opt.OnTick)
}
