//go:build linux

package loader

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

const pmuDir = "/sys/bus/event_source/devices/kprobe"

// KprobePMUType reads the perf PMU type of kprobes.
func KprobePMUType() (uint32, error) {
	b, err := os.ReadFile(pmuDir + "/type")
	if err != nil {
		return 0, ErrNoKprobePMU
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("loader: %s/type: %w", pmuDir, err)
	}
	return uint32(v), nil
}

// retprobeBit reads the "retprobe" config bit ("config:0") of the PMU.
func retprobeBit() (uint, error) {
	b, err := os.ReadFile(pmuDir + "/format/retprobe")
	if err != nil {
		return 0, fmt.Errorf("loader: the kprobe PMU has no retprobe format: %w", err)
	}
	s := strings.TrimSpace(string(b))
	v, ok := strings.CutPrefix(s, "config:")
	if !ok {
		return 0, fmt.Errorf("loader: unexpected retprobe format %q", s)
	}
	n, err := strconv.ParseUint(v, 10, 6)
	if err != nil {
		return 0, fmt.Errorf("loader: unexpected retprobe format %q", s)
	}
	return uint(n), nil
}

// PerfProbe is a kprobe owned by perf file descriptors (one per online CPU):
// it exists while they are open and vanishes when they close, however the
// process ends.
type PerfProbe struct {
	Spec Spec
	fds  []int
}

// OpenPerf creates the probe through the perf kprobe PMU and enables it.
func OpenPerf(s Spec) (*PerfProbe, error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	typ, err := KprobePMUType()
	if err != nil {
		return nil, err
	}
	attr := unix.PerfEventAttr{Type: typ, Sample: 1, Wakeup: 1}
	attr.Size = uint32(unsafe.Sizeof(attr))
	attr.Bits = unix.PerfBitDisabled
	if s.Return {
		bit, err := retprobeBit()
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
	p := &PerfProbe{Spec: s}
	cpus, err := onlineCPUs()
	if err != nil {
		return nil, err
	}
	for _, cpu := range cpus {
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		runtime.KeepAlive(sym)
		if err != nil {
			p.Close()
			return nil, &KernelError{Op: "perf_event_open", Point: s.Point(), Errno: err}
		}
		p.fds = append(p.fds, fd)
	}
	for _, fd := range p.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			p.Close()
			return nil, &KernelError{Op: "enable", Point: s.Point(), Errno: err}
		}
	}
	return p, nil
}

// Hits sums the event counts over all CPUs.
func (p *PerfProbe) Hits() (uint64, error) {
	var total uint64
	var b [8]byte
	for _, fd := range p.fds {
		n, err := unix.Read(fd, b[:])
		if err != nil {
			return 0, err
		}
		if n != 8 {
			return 0, errors.New("loader: short read of a perf counter")
		}
		total += binary.NativeEndian.Uint64(b[:])
	}
	return total, nil
}

// Close removes the probe.
func (p *PerfProbe) Close() error {
	var errs []error
	for _, fd := range p.fds {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, err)
		}
	}
	p.fds = nil
	return errors.Join(errs...)
}

// onlineCPUs parses /sys/devices/system/cpu/online ("0-3,5").
func onlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return []int{0}, nil
	}
	return ParseCPUList(strings.TrimSpace(string(b)))
}
