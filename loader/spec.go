package loader

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GroupPrefix starts every tracefs group kboost creates.
const GroupPrefix = "kboost"

// Sentinel errors; see the package documentation.
var (
	ErrNotRoot   = errors.New("loader: kprobes need root (CAP_SYS_ADMIN / CAP_PERFMON)")
	ErrNoTracefs = errors.New("loader: tracefs is not mounted (mount it: mount -t tracefs nodev /sys/kernel/tracing)")
	// ErrNoKprobes: the running kernel has no kprobes at all (kallsyms has
	// no register_kprobe): nothing kboost can mount or enable helps.
	ErrNoKprobes = errors.New("loader: the running kernel has no kprobes (built without CONFIG_KPROBES: no register_kprobe in /proc/kallsyms); boot a kernel with CONFIG_KPROBES=y, or use 'kboost vm verify'")
	// ErrNoKprobeEvents: tracefs is mounted but has no kprobe_events.
	ErrNoKprobeEvents = errors.New("loader: tracefs has no kprobe_events (the kernel was built without CONFIG_KPROBE_EVENTS)")
	ErrNoDebugfs      = errors.New("loader: no kprobes directory in debugfs (mount it: mount -t debugfs nodev /sys/kernel/debug; the kernel needs CONFIG_KPROBES and CONFIG_DEBUG_FS)")
	ErrNoKprobePMU    = errors.New("loader: no perf kprobe PMU (/sys/bus/event_source/devices/kprobe/type missing: kernel before 4.17 or without CONFIG_KPROBE_EVENTS)")
)

// Spec is one probe request: a symbol and offset, or a raw kernel address.
type Spec struct {
	Symbol string // kernel symbol, optionally "module:symbol"; "" with Addr
	Offset uint64 // bytes from the symbol start
	// Addr is a raw kernel address (Symbol empty, Offset 0): tracefs gets
	// "p:GROUP/EVENT 0xADDR", perf config1 = 0 and config2 = Addr. The kernel
	// resolves it to symbol+offset with kallsyms and then treats it as such.
	Addr   uint64
	Return bool   // a return probe (kretprobe); Offset must be 0
	Group  string // tracefs group; "" means GroupPrefix
	Event  string // tracefs event name; "" means one derived from Symbol and Offset
}

// SpecError reports a request that cannot be written safely or cannot work.
type SpecError struct {
	Field, Value, Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("loader: bad %s %q: %s", e.Field, e.Value, e.Reason)
}

// ValidSymbol reports whether s is a kernel symbol name kboost will pass to the
// kernel: C identifier characters and '.', 1 to 127 bytes (KSYM_NAME_LEN is 128
// in 6.1), not starting with a digit, with an optional "module:" prefix.
func ValidSymbol(s string) bool {
	if mod, sym, ok := strings.Cut(s, ":"); ok {
		return validIdent(mod, 55, false) && validIdent(sym, 127, true)
	}
	return validIdent(s, 127, true)
}

func validIdent(s string, max int, dot bool) bool {
	if s == "" || len(s) > max || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || dot && c == '.' || !dot && c == '-') {
			return false
		}
	}
	return true
}

// ValidName reports whether s is a valid tracefs group or event name (the
// kernel's is_good_name: a letter or '_' then letters, digits and '_'; at most
// 63 bytes, MAX_EVENT_NAME_LEN - 1).
func ValidName(s string) bool {
	if s == "" || len(s) > 63 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Normalize fills in the default group and event name and validates the spec.
func (s Spec) Normalize() (Spec, error) {
	if s.Group == "" {
		s.Group = GroupPrefix
	}
	if s.Event == "" {
		sym := s.Symbol
		if _, after, ok := strings.Cut(sym, ":"); ok {
			sym = after
		}
		s.Event = strings.ReplaceAll(sym, ".", "_")
		if s.Addr != 0 {
			s.Event = fmt.Sprintf("%s%x", AddrEventPrefix, s.Addr)
		}
		if s.Offset != 0 {
			s.Event += fmt.Sprintf("_%x", s.Offset)
		}
		if s.Return {
			s.Event += "_ret"
		}
		if len(s.Event) > 63 {
			s.Event = s.Event[:63]
		}
	}
	return s, s.Validate()
}

// MinKernelAddr is the lowest x86-64 kernel-half address: raw addresses below
// it are refused before the kernel is asked.
const MinKernelAddr = 0xffff800000000000

// AddrEventPrefix starts the default event name of a raw-address probe
// ("addr_ffffffff81234567"); kprobe_events shows such a probe's address
// hashed, so the name is how `probe list` finds it in kprobes/list again.
const AddrEventPrefix = "addr_"

// Validate checks every field; see ValidSymbol and ValidName.
func (s Spec) Validate() error {
	if s.Addr != 0 {
		switch {
		case s.Symbol != "":
			return &SpecError{"address", fmt.Sprintf("%#x", s.Addr), "give a symbol or an address, not both"}
		case s.Addr < MinKernelAddr:
			return &SpecError{"address", fmt.Sprintf("%#x", s.Addr), fmt.Sprintf("not a kernel address (x86-64 kernel addresses start at %#x)", uint64(MinKernelAddr))}
		case s.Offset != 0:
			return &SpecError{"offset", strconv.FormatUint(s.Offset, 10), "an address takes no offset: add it to the address"}
		case s.Return:
			return &SpecError{"address", fmt.Sprintf("%#x", s.Addr), "a return probe goes on a function: give its name (SYMBOL%return)"}
		}
	} else if !ValidSymbol(s.Symbol) {
		return &SpecError{"symbol", s.Symbol, "want a kernel symbol: letters, digits, '_' and '.', optionally MODULE:SYMBOL"}
	}
	if s.Offset > 0xFFFFFFFF {
		return &SpecError{"offset", strconv.FormatUint(s.Offset, 10), "larger than the kernel accepts (UINT_MAX)"}
	}
	if s.Return && s.Offset != 0 {
		return &SpecError{"offset", strconv.FormatUint(s.Offset, 10), "a return probe goes on a function entry (offset 0)"}
	}
	if s.Group != "" && (!ValidName(s.Group) || !strings.HasPrefix(s.Group, GroupPrefix)) {
		return &SpecError{"group", s.Group, "want a name starting with " + GroupPrefix + " (letters, digits, '_')"}
	}
	if s.Event != "" && !ValidName(s.Event) {
		return &SpecError{"event", s.Event, "want letters, digits and '_' (at most 63, not starting with a digit)"}
	}
	return nil
}

// Point is "symbol+0xoff", or "0xaddr" for a raw address.
func (s Spec) Point() string {
	if s.Addr != 0 {
		return fmt.Sprintf("%#x", s.Addr)
	}
	return fmt.Sprintf("%s+%#x", s.Symbol, s.Offset)
}

// Definition is the kprobe_events line for the spec (after Normalize).
func (s Spec) Definition() (string, error) {
	s, err := s.Normalize()
	if err != nil {
		return "", err
	}
	kind := "p"
	if s.Return {
		kind = "r"
	}
	return fmt.Sprintf("%s:%s/%s %s", kind, s.Group, s.Event, s.Point()), nil
}

// EventAddr returns the address a default raw-address event name encodes
// ("addr_ffffffff81234567"), or 0.
func EventAddr(event string) uint64 {
	h, ok := strings.CutPrefix(event, AddrEventPrefix)
	if !ok || len(h) == 0 || len(h) > 16 {
		return 0
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil || v < MinKernelAddr {
		return 0
	}
	return v
}

// ParseSpec parses "SYMBOL[+OFF]" (OFF decimal or 0x hex) with an optional
// "%return" suffix for a return probe, or a raw kernel address "0xADDR" (also
// written "kernel:0xADDR"; 1 to 16 hex digits, in the kernel half).
func ParseSpec(point string) (Spec, error) {
	var s Spec
	if a, ok := strings.CutPrefix(point, "kernel:"); ok && strings.HasPrefix(a, "0x") {
		point = a
	}
	if h, ok := strings.CutPrefix(point, "0x"); ok {
		v, err := strconv.ParseUint(h, 16, 64)
		if err != nil || len(h) > 16 || strings.ContainsAny(h, "+-_") {
			return s, &SpecError{"address", point, "want 0x and at most 16 hex digits (a raw address takes no offset or %return)"}
		}
		if v == 0 {
			return s, &SpecError{"address", point, "not a kernel address"}
		}
		s.Addr = v
		return s, s.Validate()
	}
	if p, ok := strings.CutSuffix(point, "%return"); ok {
		point, s.Return = p, true
	}
	sym, off, hasOff := strings.Cut(point, "+")
	s.Symbol = sym
	if hasOff {
		digits, base := off, 10
		if h, ok := strings.CutPrefix(off, "0x"); ok {
			digits, base = h, 16
		} else if len(off) > 1 && off[0] == '0' {
			return s, &SpecError{"offset", off, "a leading zero means octal to the kernel: write decimal or 0x hex"}
		}
		v, err := strconv.ParseUint(digits, base, 32)
		if err != nil || strings.ContainsAny(digits, "+-_") {
			return s, &SpecError{"offset", off, "want decimal or 0x hex"}
		}
		s.Offset = v
	}
	return s, s.Validate()
}

// KernelError is the kernel refusing a probe.
type KernelError struct {
	Op       string // "register", "enable", "remove", "perf_event_open"
	Point    string
	Errno    error  // a syscall.Errno
	ErrorLog string // newest tracefs error_log message, if any
}

func (e *KernelError) Error() string {
	s := fmt.Sprintf("loader: kernel refused to %s %s: %v", e.Op, e.Point, e.Errno)
	if e.ErrorLog != "" {
		s += " (" + e.ErrorLog + ")"
	}
	return s
}

func (e *KernelError) Unwrap() error { return e.Errno }

// ListEntry is one line of /sys/kernel/debug/kprobes/list.
type ListEntry struct {
	Addr   uint64
	Kind   string // k (kprobe), r (kretprobe)
	Point  string // sym+0xoff as kallsyms names the address
	Module string
	Flags  []string // GONE, DISABLED, OPTIMIZED, FTRACE
}

// Has reports whether the entry carries flag (e.g. "OPTIMIZED").
func (e *ListEntry) Has(flag string) bool {
	for _, f := range e.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// ParseKprobesList parses kprobes/list ("ADDR  k  sym+0xoff  [mod] [FLAGS]";
// 6.1 prints the flags with no separator: "[DISABLED][FTRACE]"). Malformed
// lines are skipped.
func ParseKprobesList(b []byte) []ListEntry {
	var out []ListEntry
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		e := ListEntry{Addr: a, Kind: f[1], Point: f[2]}
		rest := f[3:]
		if len(rest) > 0 && !strings.HasPrefix(rest[0], "[") {
			e.Module, rest = rest[0], rest[1:]
		}
		r := strings.Join(rest, "")
		for {
			i := strings.IndexByte(r, '[')
			if i < 0 {
				break
			}
			j := strings.IndexByte(r[i:], ']')
			if j < 0 {
				break
			}
			e.Flags = append(e.Flags, r[i+1:i+j])
			r = r[i+j+1:]
		}
		out = append(out, e)
	}
	return out
}

// Event is one line of kprobe_events: "p:GROUP/EVENT POINT [args]".
type Event struct {
	Kind  string // p or r
	Group string
	Event string
	Point string
}

// ParseEvents parses kprobe_events.
func ParseEvents(b []byte) []Event {
	var out []Event
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		kind, name, ok := strings.Cut(f[0], ":")
		if !ok || kind == "" {
			continue
		}
		g, ev, ok := strings.Cut(name, "/")
		if !ok {
			continue
		}
		out = append(out, Event{Kind: kind[:1], Group: g, Event: ev, Point: f[1]})
	}
	return out
}

// Profile is one kprobe_profile line: hits and misses of an event.
type Profile struct {
	Event  string // GROUP/EVENT as printed ("kboost/vfs_read" or just the name)
	Hits   uint64
	Misses uint64
}

// ParseProfile parses kprobe_profile ("EVENT HITS MISSES" per line).
func ParseProfile(b []byte) []Profile {
	var out []Profile
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		h, err1 := strconv.ParseUint(f[1], 10, 64)
		m, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, Profile{Event: f[0], Hits: h, Misses: m})
	}
	return out
}

// LastErrorLog returns the newest message of a tracefs error_log without its
// timestamp, e.g. "trace_kprobe: error: Probe point is not an instruction
// boundary".
func LastErrorLog(b []byte) string {
	var last string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "[") {
			if _, msg, ok := strings.Cut(l, "] "); ok {
				last = strings.TrimSpace(msg)
			}
		}
	}
	return last
}
