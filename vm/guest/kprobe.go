package guest

import (
	"fmt"
	"strconv"
	"strings"
)

// KprobeCheckArgs are the "kprobe-check" step's arguments.
type KprobeCheckArgs struct {
	Points []string `json:"points"` // "sym" or "sym+off" (decimal or 0x hex)
	// OptimizeWaitMS bounds the wait for [OPTIMIZED] after enabling a probe that
	// is not on an ftrace site; 0 means 500 ms.
	OptimizeWaitMS int `json:"optimize_wait_ms,omitempty"`
}

// ProbeCheck is what the kernel did with one point (kprobe-check.json holds a list).
type ProbeCheck struct {
	Point     string   `json:"point"`
	Event     string   `json:"event"`                // "kboost/pN"
	Accepted  bool     `json:"accepted"`             // the kprobe_events write succeeded
	Errno     int      `json:"errno,omitempty"`      // the write's errno when refused
	ErrnoName string   `json:"errno_name,omitempty"` // "EILSEQ"
	ErrorLog  string   `json:"error_log,omitempty"`  // newest tracefs error_log message
	Enabled   bool     `json:"enabled,omitempty"`
	List      string   `json:"list,omitempty"`  // the kprobes/list line while enabled
	Flags     []string `json:"flags,omitempty"` // FTRACE, OPTIMIZED, DISABLED, GONE

	EnableError string `json:"enable_error,omitempty"`
	RemoveError string `json:"remove_error,omitempty"`
}

// PointError reports a probe point that is not "symbol[+offset]".
type PointError struct {
	Point  string
	Reason string
}

func (e *PointError) Error() string {
	return fmt.Sprintf("guest: bad probe point %q: %s (want symbol or symbol+offset, e.g. vfs_read+0x4)", e.Point, e.Reason)
}

// ParsePoint splits "sym+off" into its parts. Only characters valid in kernel
// symbols are allowed, so nothing can be injected into kprobe_events.
func ParsePoint(point string) (sym string, off uint64, err error) {
	sym, offs, hasOff := strings.Cut(point, "+")
	if sym == "" || len(sym) > 256 {
		return "", 0, &PointError{point, "empty or overlong symbol"}
	}
	for i, c := range sym {
		ok := c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return "", 0, &PointError{point, fmt.Sprintf("character %q not allowed in a symbol", c)}
		}
	}
	if hasOff {
		// Decimal or 0x hex only: the kernel reads a leading 0 as octal, and Go's
		// prefixes and underscores mean something else again.
		digits, base := offs, 10
		if h, ok := strings.CutPrefix(offs, "0x"); ok {
			digits, base = h, 16
		} else if len(offs) > 1 && offs[0] == '0' {
			return "", 0, &PointError{point, "decimal offset with a leading zero (octal to the kernel)"}
		}
		if digits == "" || strings.ContainsAny(digits, "+-_") {
			return "", 0, &PointError{point, "offset is not a number"}
		}
		off, err = strconv.ParseUint(digits, base, 32)
		if err != nil {
			return "", 0, &PointError{point, "offset is not a number"}
		}
	}
	return sym, off, nil
}
