//go:build linux

package loader

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TracefsDirs are where tracefs is looked for, in order.
var TracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// KallsymsPath is the running kernel's symbol table (a variable for tests).
var KallsymsPath = "/proc/kallsyms"

// CheckKprobes says why kprobes cannot be used here, naming the first real
// cause: the kernel has none (ErrNoKprobes), else nil. An unreadable
// kallsyms proves nothing: nil.
func CheckKprobes() error {
	b, err := os.ReadFile(KallsymsPath)
	if err != nil {
		return nil
	}
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		// "ffffffff811c3e30 T register_kprobe"
		if f := bytes.Fields(line); len(f) >= 3 && string(f[2]) == "register_kprobe" {
			return nil
		}
	}
	return ErrNoKprobes
}

// The dynamic-event files of tracefs.
const (
	KprobeEvents = "kprobe_events"
	UprobeEvents = "uprobe_events"
)

// KprobesList is debugfs' list of registered kprobes.
const KprobesList = "/sys/kernel/debug/kprobes/list"

// Tracefs drives kprobe_events.
type Tracefs struct {
	Dir string
}

// CheckRoot returns ErrNotRoot unless the process runs as root.
func CheckRoot() error {
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	return nil
}

// OpenTracefs finds a mounted tracefs with kprobe_events (root only). The
// error names the first cause: no kprobes in the kernel (ErrNoKprobes),
// not root, tracefs not mounted (ErrNoTracefs), or mounted without
// kprobe_events (ErrNoKprobeEvents).
func OpenTracefs() (*Tracefs, error) {
	if err := CheckKprobes(); err != nil {
		return nil, err
	}
	return OpenTracefsWith(KprobeEvents, ErrNoKprobeEvents)
}

// OpenTracefsWith finds a mounted tracefs that has the dynamic-event file
// (kprobe_events, uprobe_events); missing is the error when a mounted
// tracefs lacks it, ErrNoTracefs when none is mounted.
func OpenTracefsWith(file string, missing error) (*Tracefs, error) {
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	mounted := ""
	for _, d := range TracefsDirs {
		if _, err := os.Stat(filepath.Join(d, file)); err == nil {
			return &Tracefs{Dir: d}, nil
		}
		// every tracefs has available_events
		if _, err := os.Stat(filepath.Join(d, "available_events")); err == nil && mounted == "" {
			mounted = d
		}
	}
	if mounted != "" {
		return nil, fmt.Errorf("%w (at %s)", missing, mounted)
	}
	return nil, ErrNoTracefs
}

// ReadKprobesList reads and parses debugfs' kprobes/list.
func ReadKprobesList() ([]ListEntry, error) {
	b, err := os.ReadFile(KprobesList)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoDebugfs
	}
	if err != nil {
		return nil, err
	}
	return ParseKprobesList(b), nil
}

func (t *Tracefs) path(p ...string) string { return filepath.Join(append([]string{t.Dir}, p...)...) }

// AppendLine writes line and a newline to the tracefs file at path (opened
// for appending, as the dynamic-event files must be) and closes it.
func AppendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, werr := f.Write([]byte(line + "\n"))
	cerr := f.Close()
	if werr != nil {
		return werr
	}
	return cerr
}

// lastErrorLog returns the newest error_log message without its timestamp.
func (t *Tracefs) lastErrorLog() string {
	b, err := os.ReadFile(t.path("error_log"))
	if err != nil {
		return ""
	}
	return LastErrorLog(b)
}

// Add registers the probe (not enabled) and returns the normalized spec.
func (t *Tracefs) Add(s Spec) (Spec, error) {
	s, err := s.Normalize()
	if err != nil {
		return s, err
	}
	def, _ := s.Definition()
	return s, t.Register(KprobeEvents, def, s.Point())
}

// Register appends a definition (already validated) to a dynamic-event file;
// a refusal carries the newest error_log line.
func (t *Tracefs) Register(file, def, point string) error {
	if f, err := os.OpenFile(t.path("error_log"), os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		f.Close()
	}
	if err := AppendLine(t.path(file), def); err != nil {
		return &KernelError{Op: "register", Point: point, Errno: err, ErrorLog: t.lastErrorLog()}
	}
	return nil
}

// Enable turns the event on or off.
func (t *Tracefs) Enable(group, event string, on bool) error {
	if !ValidName(group) || !ValidName(event) {
		return &SpecError{"event", group + "/" + event, "not a valid group/event name"}
	}
	v := "0\n"
	if on {
		v = "1\n"
	}
	if err := os.WriteFile(t.path("events", group, event, "enable"), []byte(v), 0); err != nil {
		return &KernelError{Op: "enable", Point: group + "/" + event, Errno: err}
	}
	return nil
}

// Remove disables and deletes one kboost event.
func (t *Tracefs) Remove(group, event string) error { return t.RemoveFrom(KprobeEvents, group, event) }

// RemoveFrom disables and deletes one kboost event of a dynamic-event file.
func (t *Tracefs) RemoveFrom(file, group, event string) error {
	if !strings.HasPrefix(group, GroupPrefix) || !ValidName(group) || !ValidName(event) {
		return &SpecError{"group", group, "kboost removes only its own groups (" + GroupPrefix + "*)"}
	}
	_ = t.Enable(group, event, false)
	if err := AppendLine(t.path(file), "-:"+group+"/"+event); err != nil {
		return &KernelError{Op: "remove", Point: group + "/" + event, Errno: err, ErrorLog: t.lastErrorLog()}
	}
	return nil
}

// Events lists kprobe_events entries in kboost groups.
func (t *Tracefs) Events() ([]Event, error) { return t.EventsOf(KprobeEvents) }

// EventsOf lists the entries of a dynamic-event file in kboost groups.
func (t *Tracefs) EventsOf(file string) ([]Event, error) {
	b, err := os.ReadFile(t.path(file))
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, e := range ParseEvents(b) {
		if strings.HasPrefix(e.Group, GroupPrefix) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Sweep removes every event of every kboost group and returns what it removed.
func (t *Tracefs) Sweep() ([]Event, error) { return t.SweepOf(KprobeEvents) }

// SweepOf is Sweep for a dynamic-event file.
func (t *Tracefs) SweepOf(file string) ([]Event, error) {
	evs, err := t.EventsOf(file)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, e := range evs {
		if err := t.RemoveFrom(file, e.Group, e.Event); err != nil {
			errs = append(errs, err)
		}
	}
	return evs, errors.Join(errs...)
}

// ReadFile reads a file of the tracefs (uprobe_profile...).
func (t *Tracefs) ReadFile(name string) ([]byte, error) { return os.ReadFile(t.path(name)) }

// Profile reads kprobe_profile.
func (t *Tracefs) Profile() ([]Profile, error) {
	b, err := os.ReadFile(t.path("kprobe_profile"))
	if err != nil {
		return nil, err
	}
	return ParseProfile(b), nil
}

// Hits returns the hit count of one event from kprobe_profile.
func (t *Tracefs) Hits(group, event string) (uint64, error) {
	ps, err := t.Profile()
	if err != nil {
		return 0, err
	}
	for _, p := range ps {
		if p.Event == group+"/"+event || p.Event == event {
			return p.Hits, nil
		}
	}
	return 0, fmt.Errorf("loader: %s/%s not in kprobe_profile", group, event)
}
