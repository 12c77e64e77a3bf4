//go:build linux

package loader

import (
	"errors"
	"os"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// KprobePMUType reads the perf PMU type of kprobes.
func KprobePMUType() (uint32, error) { return KprobePMU.Type() }

// PerfProbe is a kprobe owned by perf file descriptors (one per online CPU):
// it exists while they are open and vanishes when they close, however the
// process ends.
type PerfProbe struct {
	Spec Spec
	ev   *PerfEvents
}

// OpenPerf creates the probe through the perf kprobe PMU and enables it.
func OpenPerf(s Spec) (*PerfProbe, error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	typ, err := KprobePMU.Type()
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{Type: typ, Sample: 1, Wakeup: 1}
	if s.Return {
		bit, _, err := KprobePMU.Field("retprobe")
		if err != nil {
			return nil, err
		}
		attr.Config |= 1 << bit
	}
	// config1 points to the symbol and config2 is the offset; for a raw
	// address config1 is 0 (no function) and config2 is the address.
	var sym *byte
	if s.Addr != 0 {
		attr.Ext2 = s.Addr
	} else {
		sym, err = unix.BytePtrFromString(s.Symbol)
		if err != nil {
			return nil, &SpecError{"symbol", s.Symbol, "contains NUL"}
		}
		attr.Ext1 = uint64(uintptr(unsafe.Pointer(sym)))
		attr.Ext2 = s.Offset
	}
	ev, err := OpenPerfEvents(&attr, -1, sym)
	if err != nil {
		var ke *KernelError
		if errors.As(err, &ke) {
			ke.Point = s.Point()
		}
		return nil, err
	}
	return &PerfProbe{Spec: s, ev: ev}, nil
}

// Hits sums the event counts over all CPUs.
func (p *PerfProbe) Hits() (uint64, error) { return p.ev.Count() }

// Close removes the probe.
func (p *PerfProbe) Close() error { return p.ev.Close() }

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return []int{0}, nil
	}
	return ParseCPUList(strings.TrimSpace(string(b)))
}
