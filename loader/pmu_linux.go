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

	"github.com/kboost/kboost/internal/procstat"

	"golang.org/x/sys/unix"
)

// Type reads the PMU's perf type number.
func (p PMU) Type() (uint32, error) {
	b, err := os.ReadFile(p.Dir + "/type")
	if err != nil {
		return 0, p.Missing
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("loader: %s/type: %w", p.Dir, err)
	}
	return uint32(v), nil
}

// Field reads one config field of the PMU's format directory.
func (p PMU) Field(name string) (shift, width uint, err error) {
	b, err := os.ReadFile(p.Dir + "/format/" + name)
	if err != nil {
		return 0, 0, fmt.Errorf("loader: the %s PMU has no %s format: %w", p.Dir, name, err)
	}
	return ParseConfigField(string(b))
}

// PerfEvents is a set of perf counters of one event (one per CPU, or one for
// a process): the probe behind them lives while they are open and vanishes
// when they close, however the process ends.
type PerfEvents struct {
	fds []int
}

// OpenPerfEvents opens attr (disabled, then enabled once all are open) for
// every process on every online CPU (pid < 0), or for every thread of process
// pid on any CPU. A counter opened for a pid follows only that thread, and a
// multi-threaded target (a Go program, whose goroutines move between threads)
// would hit the probe on threads it does not see: so each thread that exists
// when the counters open gets its own. They are not inherited: the kprobe and
// uprobe PMUs read the probe's name or path through the attr's user pointer
// (config1) again when an inherited counter is created, in the task that
// clones, where the pointer means nothing: its clone() then fails with EFAULT
// (measured on 6.18.44: pthread_create "Bad address" in a target under
// `uprobe watch --pid`, Go's "failed to create new OS thread (errno=14)").
// Threads created later are not counted. keep is held alive across the calls
// (config1 may point into it).
func OpenPerfEvents(attr *unix.PerfEventAttr, pid int, keep any) (*PerfEvents, error) {
	attr.Size = uint32(unsafe.Sizeof(*attr))
	attr.Bits |= unix.PerfBitDisabled
	ev := &PerfEvents{}
	open := func(tid, cpu int) error {
		fd, err := unix.PerfEventOpen(attr, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		runtime.KeepAlive(keep)
		if err != nil {
			return &KernelError{Op: "perf_event_open", Errno: err}
		}
		ev.fds = append(ev.fds, fd)
		return nil
	}
	if pid < 0 {
		cpus, err := onlineCPUs()
		if err != nil {
			return nil, err
		}
		for _, cpu := range cpus {
			if err := open(-1, cpu); err != nil {
				ev.Close()
				return nil, err
			}
		}
	} else {
		// A thread that existed when the task list was read but created
		// another before its counter opened: read the list again until no
		// thread is new.
		seen := map[int]bool{}
		for {
			added := false
			for _, tid := range threads(pid) {
				if seen[tid] {
					continue
				}
				seen[tid], added = true, true
				if err := open(tid, -1); err != nil {
					if len(seen) > 1 && errors.Is(err, unix.ESRCH) {
						continue // that thread has exited meanwhile
					}
					ev.Close()
					return nil, err
				}
			}
			if !added {
				break
			}
		}
	}
	for _, fd := range ev.fds {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			ev.Close()
			return nil, &KernelError{Op: "enable", Errno: err}
		}
	}
	return ev, nil
}

// threads lists the thread ids of process pid (the pid itself when the task
// list cannot be read, so the kernel's own error names the problem).
func threads(pid int) []int {
	if tids, err := procstat.Threads(pid); err == nil && len(tids) > 0 {
		return tids
	}
	return []int{pid}
}

// Count sums the counters.
func (ev *PerfEvents) Count() (uint64, error) {
	var total uint64
	var b [8]byte
	for _, fd := range ev.fds {
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

// Close closes every counter (and so removes the probe).
func (ev *PerfEvents) Close() error {
	if ev == nil {
		return nil
	}
	var errs []error
	for _, fd := range ev.fds {
		if err := unix.Close(fd); err != nil {
			errs = append(errs, err)
		}
	}
	ev.fds = nil
	return errors.Join(errs...)
}
