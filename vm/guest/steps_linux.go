//go:build linux

package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

func init() {
	Register("uname", stepUname)
	Register("kallsyms", stepKallsyms)
	Register("config", stepConfig)
	Register("features", stepFeatures)
	Register("dmesg", stepDmesg)
	Register("cpuinfo", stepCPUInfo)
	Register("kprobe-check", stepKprobeCheck)
}

func stepUname(e *Env, _ json.RawMessage) error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	return e.PutJSON("uname.json", Uname{
		Sysname: unix.ByteSliceToString(u.Sysname[:]),
		Release: unix.ByteSliceToString(u.Release[:]),
		Version: unix.ByteSliceToString(u.Version[:]),
		Machine: unix.ByteSliceToString(u.Machine[:]),
	})
}

// stepKallsyms stores /proc/kallsyms as kallsyms.txt. It first sets kptr_restrict to
// 0 so that root sees real addresses, and fails if the addresses are still hidden.
func stepKallsyms(e *Env, _ json.RawMessage) error {
	_ = os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0)
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return fmt.Errorf("reading /proc/kallsyms: %w", err)
	}
	// Per-CPU symbols legitimately sit at small addresses, even 0; a kernel hiding
	// addresses shows 0 everywhere.
	if !anyNonzeroAddress(b) {
		return errors.New("/proc/kallsyms shows only zero addresses (kptr_restrict or lockdown)")
	}
	e.Put("kallsyms.txt", b)
	return nil
}

// stepConfig stores /proc/config.gz as config.gz when the kernel offers it
// (CONFIG_IKCONFIG_PROC); features.json says whether it exists.
func stepConfig(e *Env, _ json.RawMessage) error {
	b, ok, err := readFileOptional("/proc/config.gz")
	if err != nil {
		return fmt.Errorf("reading /proc/config.gz: %w", err)
	}
	if ok {
		e.Put("config.gz", b)
	}
	return nil
}

func stepFeatures(e *Env, _ json.RawMessage) error {
	f := Features{Exists: map[string]bool{}, Values: map[string]string{}}
	for _, p := range FeaturePaths {
		_, err := os.Stat(p)
		f.Exists[p] = err == nil
	}
	for _, p := range []string{
		"/proc/sys/debug/kprobes-optimization",
		"/sys/kernel/debug/kprobes/enabled",
		"/sys/bus/event_source/devices/kprobe/type",
		"/proc/sys/kernel/kptr_restrict",
		"/proc/cmdline",
	} {
		if b, err := os.ReadFile(p); err == nil {
			f.Values[p] = string(bytes.TrimSpace(b))
		}
	}
	return e.PutJSON("features.json", f)
}

func stepDmesg(e *Env, _ json.RawMessage) error {
	n, err := unix.Klogctl(unix.SYSLOG_ACTION_SIZE_BUFFER, nil)
	if err != nil {
		return fmt.Errorf("klogctl: %w", err)
	}
	buf := make([]byte, n)
	n, err = unix.Klogctl(unix.SYSLOG_ACTION_READ_ALL, buf)
	if err != nil {
		return fmt.Errorf("klogctl: %w", err)
	}
	e.Put("dmesg.txt", buf[:n])
	return nil
}

// stepCPUInfo stores /proc/cpuinfo as cpuinfo.txt: the CPU as the booted
// kernel names it (x86 "flags" and "bugs"), for offline audits of the same
// machine.
func stepCPUInfo(e *Env, _ json.RawMessage) error {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return fmt.Errorf("reading /proc/cpuinfo: %w", err)
	}
	e.Put("cpuinfo.txt", b)
	return nil
}

func anyNonzeroAddress(kallsyms []byte) bool {
	for len(kallsyms) > 0 {
		var line []byte
		line, kallsyms, _ = bytes.Cut(kallsyms, []byte("\n"))
		addr, _, _ := bytes.Cut(line, []byte(" "))
		if len(bytes.Trim(addr, "0")) > 0 {
			return true
		}
	}
	return false
}
