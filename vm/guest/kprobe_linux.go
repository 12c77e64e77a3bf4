//go:build linux

package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kboost/kboost/loader"
	"golang.org/x/sys/unix"
)

const (
	kprobeGroup = loader.GroupPrefix
	kprobesList = loader.KprobesList
)

// tracingDir is the mounted tracefs with kprobe_events (loader's places).
func tracingDir() (string, error) {
	for _, d := range loader.TracefsDirs {
		if _, err := os.Stat(filepath.Join(d, "kprobe_events")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no kprobe_events in tracefs (kernel without CONFIG_KPROBE_EVENTS, or tracefs not mounted)")
}

// stepKprobeCheck registers each requested point as a kprobe event, one at a time,
// and records what the kernel said and did; see KprobeCheckArgs and ProbeCheck.
func stepKprobeCheck(e *Env, raw json.RawMessage) error {
	var args KprobeCheckArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("kprobe-check arguments: %w", err)
		}
	}
	for _, p := range args.Points {
		if _, _, err := ParsePoint(p); err != nil {
			return err
		}
	}
	dir, err := tracingDir()
	if err != nil {
		return err
	}
	wait := time.Duration(args.OptimizeWaitMS) * time.Millisecond
	if args.OptimizeWaitMS == 0 {
		wait = 500 * time.Millisecond
	}
	results := make([]ProbeCheck, 0, len(args.Points))
	for i, p := range args.Points {
		results = append(results, checkOne(dir, fmt.Sprintf("p%d", i), p, wait))
	}
	return e.PutJSON("kprobe-check.json", results)
}

func checkOne(dir, event, point string, wait time.Duration) ProbeCheck {
	pc := ProbeCheck{Point: point, Event: kprobeGroup + "/" + event}
	// Clearing error_log (open with O_TRUNC) makes its last entry ours.
	if f, err := os.OpenFile(filepath.Join(dir, "error_log"), os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		f.Close()
	}
	def := fmt.Sprintf("p:%s %s", pc.Event, point)
	if err := loader.AppendLine(filepath.Join(dir, "kprobe_events"), def); err != nil {
		pc.setErr(err)
		pc.ErrorLog = lastErrorLog(filepath.Join(dir, "error_log"))
		return pc
	}
	pc.Accepted = true
	enable := filepath.Join(dir, "events", kprobeGroup, event, "enable")
	if err := os.WriteFile(enable, []byte("1\n"), 0); err != nil {
		pc.EnableError = err.Error()
	} else {
		pc.Enabled = true
	}
	// The optimizer runs a few jiffies after arming, then waits for an RCU-tasks
	// grace period: poll the list until [OPTIMIZED] shows or the wait is over.
	deadline := time.Now().Add(wait)
	for {
		pc.List = findListLine(point)
		if !pc.Enabled || strings.Contains(pc.List, "[OPTIMIZED]") || strings.Contains(pc.List, "[FTRACE]") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pc.Flags = listFlags(pc.List)
	if pc.Enabled {
		_ = os.WriteFile(enable, []byte("0\n"), 0)
	}
	if err := loader.AppendLine(filepath.Join(dir, "kprobe_events"), "-:"+pc.Event); err != nil {
		pc.RemoveError = err.Error()
	}
	return pc
}

func (pc *ProbeCheck) setErr(err error) {
	var errno unix.Errno
	if errors.As(err, &errno) {
		pc.Errno = int(errno)
		pc.ErrnoName = unix.ErrnoName(errno)
	} else {
		pc.Errno = -1
		pc.ErrnoName = err.Error()
	}
}

// lastErrorLog returns the message of the newest error_log entry without its
// timestamp, e.g. "trace_kprobe: error: Probe point is not an instruction boundary".
func lastErrorLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return loader.LastErrorLog(b)
}

// findListLine returns the kprobes/list line for point, or "" if absent. The list
// names the probe by the symbol kallsyms gives its address, so an alias may differ
// from the request; with a single probe registered its line is the only one.
func findListLine(point string) string {
	b, err := os.ReadFile(kprobesList)
	if err != nil {
		return ""
	}
	want := normalizePoint(point)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		lines = append(lines, l)
		f := strings.Fields(l)
		if len(f) >= 3 && f[2] == want {
			return l
		}
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return ""
}

func normalizePoint(point string) string {
	sym, off, err := ParsePoint(point)
	if err != nil {
		return point
	}
	return fmt.Sprintf("%s+0x%x", sym, off)
}

func listFlags(line string) []string {
	var flags []string
	for _, f := range []string{"GONE", "DISABLED", "OPTIMIZED", "FTRACE"} {
		if strings.Contains(line, "["+f+"]") {
			flags = append(flags, f)
		}
	}
	return flags
}
