//go:build linux

package kernelref

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// HostUprobes asks the running kernel what its uprobes do with each of insns (a
// byte string at most 32 bytes: the instruction and what follows it) in a
// bits-bit process. It writes a probe executable holding the instructions into
// dir, starts it (it sleeps in pause(2) and never runs them), and registers one
// uprobe per instruction through the perf uprobe PMU, attached to that process
// (the kernel analyses the instruction when the probe is installed into a
// process that maps the file). The result per instruction is "" when the kernel
// accepted the probe, else the errno name ("ENOTSUPP" is 524). Every probe is
// removed when its perf event is closed, and the process is killed, on every path.
// Needs root (or CAP_PERFMON and CAP_SYS_ADMIN) and a kernel with uprobes.
func HostUprobes(bits int, insns [][]byte, dir string) ([]string, error) {
	pmu, err := os.ReadFile("/sys/bus/event_source/devices/uprobe/type")
	if err != nil {
		return nil, fmt.Errorf("the running kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS): %w", errNotSupported)
	}
	typ, err := strconv.Atoi(strings.TrimSpace(string(pmu)))
	if err != nil {
		return nil, fmt.Errorf("uprobe PMU type %q: %v", pmu, err)
	}
	img, err := buildProbeExe(bits, insns)
	if err != nil {
		return nil, err
	}
	path, err := filepath.Abs(filepath.Join(dir, fmt.Sprintf("kboost-uprobe-target-%d-%d", bits, os.Getpid())))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, img, 0o755); err != nil {
		return nil, err
	}
	defer os.Remove(path)
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.ENOEXEC) {
			return nil, fmt.Errorf("the running kernel cannot execute %d-bit programs (exec: %v): %w", bits, syscall.ENOEXEC, errNotSupported)
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if err := waitMapped(cmd.Process.Pid, path); err != nil {
		return nil, err
	}
	cpath := append([]byte(path), 0)
	out := make([]string, len(insns))
	errs := make([]error, len(insns))
	// Registration waits for the kernel (grace periods): run several at once.
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = hostUprobe(typ, cpath, cmd.Process.Pid, SlotOffset(i))
			}
		}()
	}
	for i := range insns {
		next <- i
	}
	close(next)
	wg.Wait()
	runtime.KeepAlive(cpath)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// hostUprobe registers a uprobe at file offset off of the NUL-terminated path
// cpath, attached to process pid, and removes it.
func hostUprobe(typ int, cpath []byte, pid, off int) (string, error) {
	attr := unix.PerfEventAttr{
		Type:   uint32(typ),
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: 1,
		Ext1:   uint64(uintptr(unsafe.Pointer(&cpath[0]))), // config1: the file's path
		Ext2:   uint64(off),                                // config2: the file offset
	}
	fd, err := unix.PerfEventOpen(&attr, pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			return "", err
		}
		return errnoName(errno), nil
	}
	unix.Close(fd)
	return "", nil
}

// waitMapped waits until process pid maps path.
func waitMapped(pid int, path string) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
		if err == nil && bytes.Contains(maps, []byte(path)) {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("process %d did not map %s within 5s", pid, path)
}

// errnoName names the errnos a uprobe registration gives.
func errnoName(e syscall.Errno) string {
	switch e {
	case 524:
		return "ENOTSUPP"
	case unix.EINVAL:
		return "EINVAL"
	case unix.ENOEXEC:
		return "ENOEXEC"
	case unix.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case unix.ENOENT:
		return "ENOENT"
	case unix.EPERM:
		return "EPERM"
	case unix.EACCES:
		return "EACCES"
	case unix.EBUSY:
		return "EBUSY"
	case unix.EEXIST:
		return "EEXIST"
	}
	return fmt.Sprintf("errno%d", int(e))
}

// KernelRelease is the running kernel's release (uname -r).
func KernelRelease() (string, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	return unix.ByteSliceToString(u.Release[:]), nil
}
