//go:build linux

package uprobe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kboost/kboost/loader"
)

func openTracefs() (*loader.Tracefs, error) {
	return loader.OpenTracefsWith(loader.UprobeEvents, errors.New("uprobe: tracefs has no uprobe_events (the kernel was built without CONFIG_UPROBE_EVENTS)"))
}

// AddTracefs registers and enables p as UprobeGroup/event in uprobe_events; it
// stays until RemoveTracefs or SweepTracefs.
func AddTracefs(p Probe, event string) (string, error) {
	if p.Pid > 0 {
		return "", errors.New("uprobe: uprobe_events probes every process: a --pid filter needs the perf PMU (watch)")
	}
	def, err := p.Definition(UprobeGroup, event)
	if err != nil {
		return "", err
	}
	t, err := openTracefs()
	if err != nil {
		return "", err
	}
	if err := t.Register(loader.UprobeEvents, def, fmt.Sprintf("%s:%#x", p.Path, p.Offset)); err != nil {
		return "", err
	}
	if err := t.Enable(UprobeGroup, event, true); err != nil {
		_ = t.RemoveFrom(loader.UprobeEvents, UprobeGroup, event)
		return "", err
	}
	return UprobeGroup + "/" + event, nil
}

// RemoveTracefs removes one kboost uprobe event (GROUP/EVENT).
func RemoveTracefs(group, event string) error {
	t, err := openTracefs()
	if err != nil {
		return err
	}
	return t.RemoveFrom(loader.UprobeEvents, group, event)
}

// SweepTracefs removes every kboost uprobe event.
func SweepTracefs() ([]loader.Event, error) {
	t, err := openTracefs()
	if err != nil {
		return nil, err
	}
	return t.SweepOf(loader.UprobeEvents)
}

// ListTracefs lists the kboost uprobe events with their hits.
func ListTracefs() ([]TracefsProbe, error) {
	t, err := openTracefs()
	if err != nil {
		return nil, err
	}
	evs, err := t.EventsOf(loader.UprobeEvents)
	if err != nil {
		return nil, err
	}
	prof, _ := t.ReadFile("uprobe_profile")
	hits := map[string]uint64{}
	for _, p := range loader.ParseUprobeProfile(prof) {
		hits[p.Event] = p.Hits
	}
	var out []TracefsProbe
	for _, e := range evs {
		out = append(out, TracefsProbe{Event: e.Group + "/" + e.Event, Point: e.Point, Hits: hits[e.Event]})
	}
	return out, nil
}

// Watch inserts the probes, reports hit counts until ctx is done, then
// removes them. Through the perf PMU (the default) they also vanish if the
// process is killed; through tracefs a killed watcher leaves them for
// SweepTracefs.
func Watch(ctx context.Context, probes []Probe, opt WatchOptions) (err error) {
	if opt.Interval <= 0 {
		opt.Interval = time.Second
	}
	target := "perf"
	if !opt.Tracefs {
		if _, err := loader.UprobePMU.Type(); err != nil {
			target = "tracefs"
		}
	} else {
		target = "tracefs"
	}
	var counts func() ([]Count, error)
	point := func(p Probe) string { return fmt.Sprintf("%s:%#x", p.Path, p.Offset) }
	if target == "perf" {
		var evs []*PMUEvent
		evs, err = loader.OpenCounters(probes, OpenPMU)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, loader.CloseCounters(evs)) }()
		counts = func() ([]Count, error) {
			hits, err := loader.ReadCounters(evs)
			if err != nil {
				return nil, err
			}
			out := make([]Count, len(evs))
			for i, e := range evs {
				out[i] = Count{e.Probe, point(e.Probe), hits[i]}
			}
			return out, nil
		}
	} else {
		t, err := openTracefs()
		if err != nil {
			return err
		}
		var names []string
		defer func() {
			for _, n := range names {
				err = errors.Join(err, t.RemoveFrom(loader.UprobeEvents, UprobeGroup, n))
			}
		}()
		for _, p := range probes {
			n := p.EventName()
			if _, err := AddTracefs(p, n); err != nil {
				return err
			}
			names = append(names, n)
		}
		counts = func() ([]Count, error) {
			prof, err := t.ReadFile("uprobe_profile")
			if err != nil {
				return nil, err
			}
			hits := map[string]uint64{}
			for _, p := range loader.ParseUprobeProfile(prof) {
				hits[p.Event] = p.Hits
			}
			out := make([]Count, len(probes))
			for i, p := range probes {
				out[i] = Count{p, point(p), hits[names[i]]}
			}
			return out, nil
		}
	}
	if opt.OnReady != nil {
		opt.OnReady(target)
	}
	return loader.TickCounts(ctx, opt.Interval, counts, opt.OnTick)
}
