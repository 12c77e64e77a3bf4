//go:build linux

package guest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// The pieces both verify recorders share (stepVerify, x86_verify_linux.go;
// stepVerifyFixed, a64_verify_linux.go): kprobe_events, and the wait for the
// kernel's delayed optimizer, whose per-arch parts are an OptimizerWait value.

// clearEvents removes every kprobe event (the guest has no others): opening
// kprobe_events with O_TRUNC unregisters them all.
func clearEvents(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "kprobe_events"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("clearing kprobe_events: %w", err)
	}
	return f.Close()
}

func readOr(path string) []byte {
	b, _ := os.ReadFile(path)
	return b
}

// eventWriter registers the verify recorders' probes as kprobe events
// p0, p1, ... of kprobeGroup, one write each (a write's error is that
// probe's refusal), into a kprobe_events cleared first.
type eventWriter struct {
	dir string
	f   *os.File
	n   int
	// ErrorLogs, when not nil, gets the tracefs error_log message of the
	// first refusal with each errno.
	ErrorLogs map[string]string
}

func openEvents(dir string) (*eventWriter, error) {
	if err := clearEvents(dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "kprobe_events"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	return &eventWriter{dir: dir, f: f}, nil
}

func (w *eventWriter) Close() error { return w.f.Close() }

// Register defines a probe at r's function and offset; when the kernel
// refuses it, r.Kernel.Errno is the errno's name and Register returns false.
func (w *eventWriter) Register(r *VerifyRecord) bool {
	def := fmt.Sprintf("p:%s/p%d %s+0x%x\n", kprobeGroup, w.n, r.Func, r.Off)
	w.n++
	if _, err := w.f.Write([]byte(def)); err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			r.Kernel.Errno = unix.ErrnoName(errno)
		} else {
			r.Kernel.Errno = err.Error()
		}
		if _, seen := w.ErrorLogs[r.Kernel.Errno]; w.ErrorLogs != nil && !seen {
			w.ErrorLogs[r.Kernel.Errno] = lastErrorLog(filepath.Join(w.dir, "error_log"))
		}
		return false
	}
	return true
}

// await reads kprobes/list (into byAddr) until the round settles, setting
// Kernel.Optimized of the accepted records ok; read (nil: none) reads
// kernel memory for the jumps. It returns the note of a round that did not
// settle, else "".
func (w *OptimizerWait) await(round int, ok []*VerifyRecord, byAddr map[uint64]*ListEntry, read func(addr uint64, n int) ([]byte, error)) string {
	start := time.Now()
	last, stable := -1, time.Time{}
	for {
		list := ParseKprobesList(readOr(kprobesList))
		for i := range list {
			byAddr[list[i].Addr] = &list[i]
		}
		n, pending := 0, 0
		for _, r := range ok {
			le := byAddr[r.Kernel.Addr]
			if le == nil || r.Kernel.Addr == 0 {
				continue
			}
			r.Kernel.Optimized = le.Has("OPTIMIZED")
			if !r.Kernel.Optimized {
				continue
			}
			n++
			if read != nil {
				if b, err := read(le.Addr&^(w.Align-1), w.Len); err != nil || !w.Jumped(b) {
					pending++
				}
			}
		}
		now := time.Now()
		if n != last {
			last, stable = n, now
		}
		settled := now.Sub(start) >= w.Min && now.Sub(stable) >= w.Stable && pending == 0
		if settled || now.Sub(start) > w.Max {
			if !settled {
				return w.Note(round, n, pending, w.Max)
			}
			return ""
		}
		time.Sleep(w.Poll)
	}
}

// setEnabled enables or disables the events of a round (a disabled kprobe is
// never optimized; kprobe_events cannot be cleared while they are enabled);
// a failure is a note.
func setEnabled(dir string, on bool, round int, notes *[]string) bool {
	v, what := "0\n", "disabling"
	if on {
		v, what = "1\n", "enabling"
	}
	if err := os.WriteFile(filepath.Join(dir, "events", kprobeGroup, "enable"), []byte(v), 0); err != nil {
		*notes = append(*notes, fmt.Sprintf("round %d: %s: %v", round, what, err))
		return false
	}
	return true
}
