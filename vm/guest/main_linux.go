//go:build linux

package guest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// mounts are the file systems /init mounts before running steps. A failure is
// recorded in GuestReport.Setup, not fatal: a kernel without tracefs still answers
// the steps that do not need it.
var mounts = []struct{ source, target, fstype string }{
	{"devtmpfs", "/dev", "devtmpfs"},
	{"proc", "/proc", "proc"},
	{"sysfs", "/sys", "sysfs"},
	{"debugfs", "/sys/kernel/debug", "debugfs"},
	{"tracefs", "/sys/kernel/tracing", "tracefs"},
}

// Main is the whole life of the guest's /init: mount, run the scenario in
// ScenarioPath, print the result between markers on the console, power off.
// It refuses to run unless it is process 1, so that running the binary by mistake
// on a host cannot power the host off; it then returns an error. In a guest it
// does not return.
func Main() error {
	if mode := os.Getenv(ChildEnv); mode != "" && os.Getpid() != 1 {
		return runChild(mode)
	}
	if os.Getpid() != 1 {
		return fmt.Errorf("%w: kboost-guest is the /init of a kboost initramfs and runs only as process 1", ErrNotInit)
	}
	var rep GuestReport
	rep.Setup = setup()
	rep.UptimeStart = uptime()
	out := os.Stdout
	var sc Scenario
	b, err := os.ReadFile(ScenarioPath)
	if err == nil {
		err = json.Unmarshal(b, &sc)
	}
	if err != nil {
		EmitFail(out, sc.Nonce, fmt.Sprintf("reading %s: %v", ScenarioPath, err))
		powerOff()
	}
	if !sc.Verbose {
		// Only emergencies on the console: printk output could split protocol lines.
		_ = os.WriteFile("/proc/sys/kernel/printk", []byte("1 4 1 7\n"), 0)
	}
	if c, err := os.ReadFile("/proc/cmdline"); err == nil {
		rep.Cmdline = strings.TrimSpace(string(c))
	}
	env := NewEnv(out)
	if sc.HostMemory {
		env.hostMem = newHostMem(os.Stdin, out, sc.Nonce)
	}
	reports := env.Run(sc.Steps)
	rep.UptimeEnd = uptime()
	entries := env.Entries()
	steps, _ := json.MarshalIndent(reports, "", "  ")
	guest, _ := json.MarshalIndent(rep, "", "  ")
	entries = append([]Entry{{StepsFile, steps}, {GuestFile, guest}}, entries...)
	payload, err := Pack(entries)
	if err != nil {
		EmitFail(out, sc.Nonce, err.Error())
	} else if err := Emit(out, sc.Nonce, payload); err != nil {
		EmitFail(out, sc.Nonce, err.Error())
	}
	powerOff()
	return nil
}

func setup() []string {
	var notes []string
	for _, m := range mounts {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			notes = append(notes, fmt.Sprintf("mkdir %s: %v", m.target, err))
			continue
		}
		if err := unix.Mount(m.source, m.target, m.fstype, 0, ""); err != nil && err != unix.EBUSY {
			notes = append(notes, fmt.Sprintf("mount %s on %s: %v", m.fstype, m.target, err))
		}
		if m.target == "/dev" {
			ensureStdio()
		}
	}
	return notes
}

// ensureStdio gives /init a console on fds 0-2 when the kernel could not open one
// (an initramfs without /dev/console and no built-in one).
func ensureStdio() {
	if _, err := unix.FcntlInt(1, unix.F_GETFD, 0); err == nil {
		var st unix.Stat_t
		if unix.Fstat(1, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR {
			return
		}
	}
	fd, err := unix.Open("/dev/console", unix.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return
	}
	for i := 0; i < 3; i++ {
		_ = unix.Dup3(fd, i, 0)
	}
	if fd > 2 {
		unix.Close(fd)
	}
}

func uptime() float64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	f, _, _ := bytes.Cut(b, []byte(" "))
	v, _ := strconv.ParseFloat(string(f), 64)
	return v
}

func powerOff() {
	unix.Sync()
	err := unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	// Still here: a kernel that cannot power off (no ACPI). The host stops QEMU when
	// it sees the end marker; exiting would only panic the kernel, so wait.
	fmt.Fprintf(os.Stdout, "kboost-guest: power off failed (%v); waiting for the host to stop the machine\n", err)
	for {
		time.Sleep(time.Hour)
	}
}
