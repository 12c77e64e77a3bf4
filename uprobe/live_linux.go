//go:build linux

package uprobe

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/kboost/kboost/loader"
	"golang.org/x/sys/unix"
)

// PMUEvent is a uprobe owned by perf file descriptors: it vanishes when they
// close, however kboost ends.
type PMUEvent struct {
	Probe Probe
	ev    *loader.PerfEvents
}

// OpenPMU registers p through the perf uprobe PMU and enables it.
func OpenPMU(p Probe) (*PMUEvent, error) {
	if err := loader.CheckRoot(); err != nil {
		return nil, err
	}
	typ, err := loader.UprobePMU.Type()
	if err != nil {
		return nil, err
	}
	// A counting event (no sample period): a sample per hit would cost a
	// perf record each time.
	attr := unix.PerfEventAttr{Type: typ}
	if p.Return {
		bit, _, err := loader.UprobePMU.Field("retprobe")
		if err != nil {
			return nil, err
		}
		attr.Config |= 1 << bit
	}
	if p.RefCtrOffset != 0 {
		shift, width, err := loader.UprobePMU.Field("ref_ctr_offset")
		if err != nil {
			return nil, err
		}
		if width < 64 && p.RefCtrOffset>>width != 0 {
			return nil, fmt.Errorf("uprobe: semaphore offset %#x does not fit the PMU's %d-bit ref_ctr_offset", p.RefCtrOffset, width)
		}
		attr.Config |= p.RefCtrOffset << shift
	}
	path, err := unix.BytePtrFromString(p.Path)
	if err != nil {
		return nil, &loader.SpecError{Field: "path", Value: p.Path, Reason: "contains NUL"}
	}
	attr.Ext1 = uint64(uintptr(unsafe.Pointer(path))) // config1: the file's path
	attr.Ext2 = p.Offset                              // config2: the file offset
	pid := p.Pid
	if pid == 0 {
		pid = -1
	}
	ev, err := loader.OpenPerfEvents(&attr, pid, path)
	if err != nil {
		if ke, ok := err.(*loader.KernelError); ok {
			ke.Point = fmt.Sprintf("%s:%#x", p.Path, p.Offset)
		}
		return nil, err
	}
	return &PMUEvent{Probe: p, ev: ev}, nil
}

// Hits is the number of hits counted.
func (e *PMUEvent) Hits() (uint64, error) { return e.ev.Count() }

// Close removes the probe.
func (e *PMUEvent) Close() error { return e.ev.Close() }

// ReadBack reads, from process pid, the n bytes at file offset off of path
// (the probe site) and which uprobe mappings the process has.
func ReadBack(pid int, path string, off uint64, n int) (Readback, error) {
	var r Readback
	mb, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return r, err
	}
	maps := ParseMaps(mb)
	a, ok := siteAddr(maps, path, off)
	if !ok {
		return r, fmt.Errorf("uprobe: process %d does not map %s at file offset %#x", pid, path, off)
	}
	r.Addr = Hex(a)
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return r, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(a)); err != nil {
		return r, fmt.Errorf("uprobe: read process %d at %#x: %w", pid, a, err)
	}
	fillReadback(&r, maps, buf, swbpOf(path))
	return r, nil
}
