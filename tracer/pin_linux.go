//go:build linux && (amd64 || 386 || arm64 || arm)

package tracer

import (
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pinSelf puts the tracer's thread on cfg.CPU before the tree is started:
// fork copies the calling thread's mask, so every task of the tree starts
// on that CPU too.
func (t *Tracer) pinSelf() error {
	if err := unix.SchedGetaffinity(0, &t.unpinned); err != nil {
		return fmt.Errorf("%w: sched_getaffinity: %w", ErrTracer, err)
	}
	cpu := t.cfg.CPU
	if cpu < 0 || cpu >= 8*int(unsafeSizeofCPUSet) || !t.unpinned.IsSet(cpu) {
		return fmt.Errorf("%w: kboost may run on CPUs %s (its affinity mask), not %d; pick one of those", ErrCPU, cpuList(&t.unpinned), cpu)
	}
	t.pinned.Zero()
	t.pinned.Set(cpu)
	if err := unix.SchedSetaffinity(0, &t.pinned); err != nil {
		return fmt.Errorf("%w: CPU %d: sched_setaffinity: %w", ErrCPU, cpu, err)
	}
	t.pin = true
	return nil
}

// unpin gives tid back the mask the tree started with, if its mask is
// still kboost's one CPU (a mask the tracee set itself is its own).
func (t *Tracer) unpin(tid int) {
	if !t.pin {
		return
	}
	var cur unix.CPUSet
	if unix.SchedGetaffinity(tid, &cur) == nil && cur == t.pinned {
		unix.SchedSetaffinity(tid, &t.unpinned)
	}
}

// unsafeSizeofCPUSet is the mask's size in bytes (CPUs 0..8*size-1).
const unsafeSizeofCPUSet = unsafe.Sizeof(unix.CPUSet{})

// cpuList writes a mask as the kernel's lists do (0-3,6).
func cpuList(s *unix.CPUSet) string {
	var parts []string
	n := 8 * int(unsafeSizeofCPUSet)
	for i := 0; i < n; i++ {
		if !s.IsSet(i) {
			continue
		}
		j := i
		for j+1 < n && s.IsSet(j+1) {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(i))
		} else {
			parts = append(parts, strconv.Itoa(i)+"-"+strconv.Itoa(j))
		}
		i = j
	}
	if parts == nil {
		return "none"
	}
	return strings.Join(parts, ",")
}
