package loader

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PMU is a dynamic perf event source under /sys/bus/event_source/devices
// (kprobe, uprobe): its type number and the config fields of its format
// directory.
type PMU struct {
	Dir     string // e.g. /sys/bus/event_source/devices/kprobe
	Missing error  // returned when the PMU is absent
}

// The kernel's probe PMUs.
var (
	KprobePMU = PMU{Dir: "/sys/bus/event_source/devices/kprobe", Missing: ErrNoKprobePMU}
	UprobePMU = PMU{Dir: "/sys/bus/event_source/devices/uprobe", Missing: ErrNoUprobePMU}
)

// ErrNoUprobePMU: the running kernel has no perf uprobe PMU.
var ErrNoUprobePMU = errors.New("loader: no perf uprobe PMU (/sys/bus/event_source/devices/uprobe/type missing: kernel before 4.17 or without CONFIG_UPROBE_EVENTS)")

// ParseConfigField parses a PMU format file ("config:0", "config:32-63") into
// the field's first bit and width.
func ParseConfigField(s string) (shift, width uint, err error) {
	s = strings.TrimSpace(s)
	v, ok := strings.CutPrefix(s, "config:")
	if !ok {
		return 0, 0, fmt.Errorf("loader: unexpected PMU format %q (want config:N or config:N-M)", s)
	}
	lo, hi, rng := strings.Cut(v, "-")
	a, err1 := strconv.ParseUint(lo, 10, 6)
	b := a
	var err2 error
	if rng {
		b, err2 = strconv.ParseUint(hi, 10, 6)
	}
	if err1 != nil || err2 != nil || b < a {
		return 0, 0, fmt.Errorf("loader: unexpected PMU format %q (want config:N or config:N-M)", s)
	}
	return uint(a), uint(b - a + 1), nil
}

// UprobeProfile is one uprobe_profile line: "FILE EVENT HITS".
type UprobeProfile struct {
	File, Event string
	Hits        uint64
}

// ParseUprobeProfile parses uprobe_profile; malformed lines are skipped.
func ParseUprobeProfile(b []byte) []UprobeProfile {
	var out []UprobeProfile
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		h, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, UprobeProfile{File: f[0], Event: f[1], Hits: h})
	}
	return out
}

// HitCounter is an open perf event counting one probe's hits (a kprobe's
// PerfProbe, a uprobe's PMUEvent).
type HitCounter interface {
	Hits() (uint64, error)
	Close() error
}

// OpenCounters opens one counter per point, in order. If one fails, those
// already open are closed (so nothing is left registered) and the error is
// returned.
func OpenCounters[P any, C HitCounter](points []P, open func(P) (C, error)) ([]C, error) {
	cs := make([]C, 0, len(points))
	for _, p := range points {
		c, err := open(p)
		if err != nil {
			return nil, errors.Join(err, CloseCounters(cs))
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// ReadCounters reads every counter's hits, in order.
func ReadCounters[C HitCounter](cs []C) ([]uint64, error) {
	out := make([]uint64, len(cs))
	for i, c := range cs {
		h, err := c.Hits()
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// CloseCounters closes every counter and joins their errors.
func CloseCounters[C HitCounter](cs []C) error {
	var err error
	for _, c := range cs {
		err = errors.Join(err, c.Close())
	}
	return err
}
