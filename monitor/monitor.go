package monitor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/sysent"
	"github.com/kboost/kboost/tracer"
)

// ErrUnknownSyscall marks a --syscalls name no table has.
var ErrUnknownSyscall = errors.New("monitor: unknown system call")

// Options configure a run.
type Options struct {
	Argv      []string // command to start, or
	Pid       int      // tree to attach to
	Syscalls  []string // names to record; nil: every call
	Policy    *Policy
	JSON      bool
	Out       io.Writer // records (nil: none)
	NoSeccomp bool      // stop at every call even when kboost starts the tree
	Backtrace bool
	// NoSymbols leaves backtrace frames as addresses and files (no symbol
	// table is read: the seed's "no resolve" measurement).
	NoSymbols bool
	// ExecMaps records (and stops at) mmap, mmap2, mprotect and
	// pkey_mprotect only with PROT_EXEC: the mappings a reference monitor
	// mediates.
	ExecMaps  bool
	MaxFrames int
	// OneStop lets x86-64 calls of a tree kboost started return through
	// kboost's result stub (one stop per call) instead of stopping at their
	// exit as well (tracer.Config.OneStop; kboost monitor's default).
	OneStop bool
	// Pin runs kboost's tracer and the started tree on CPU (see
	// tracer.Config.Pin).
	Pin   bool
	CPU   int
	Poll  time.Duration // see tracer.Config.Poll
	Stdio [3]*os.File   // the started command's stdin, stdout, stderr (nil: kboost's)
	// syncWalks makes every walk at its stop (tests: snapshots unwound
	// later must give the same frames).
	syncWalks bool
}

// Record is one system call, as written to Out (--json).
type Record struct {
	Pid       int            `json:"pid"`
	Tid       int            `json:"tid"`
	Arch      string         `json:"arch"`
	Syscall   string         `json:"syscall"`
	Nr        uint64         `json:"nr"`
	Args      []sysent.Value `json:"args"`
	Ret       string         `json:"ret"`
	Errno     string         `json:"errno,omitempty"`
	Denied    bool           `json:"denied,omitempty"`
	Rule      string         `json:"rule,omitempty"`
	Backtrace []Frame        `json:"backtrace,omitempty"`
}

// EventRecord is a process event, as written to Out (--json).
type EventRecord struct {
	Event  string `json:"event"` // new_thread, exec, exit, killed, signal, group_stop
	Pid    int    `json:"pid"`
	Tid    int    `json:"tid"`
	Parent int    `json:"parent,omitempty"`
	Status int    `json:"status,omitempty"`
	Signal string `json:"signal,omitempty"`
	Former int    `json:"former_tid,omitempty"` // exec: the thread that called execve
}

// Summary is the run's totals (the last JSON line with --json).
type Summary struct {
	Calls     int            `json:"calls"`
	Errors    int            `json:"errors"`
	Denied    int            `json:"denied"`
	BySyscall map[string]int `json:"by_syscall"`
	Processes int            `json:"processes"`
	Threads   int            `json:"threads"`
	Status    int            `json:"status"`
	Detached  bool           `json:"detached,omitempty"`
}

// Monitor is one run.
type Monitor struct {
	opt     Options
	tr      *tracer.Tracer
	w       *bufio.Writer
	enc     *json.Encoder
	queue   []any                    // records and events to write at the next Idle
	pending map[*tracer.Call]*Record // entered, not yet returned (a thread may have two: a deferred call and one in a signal handler)
	sum     Summary
	bt      *backtracer
	werr    error
	// needStack: the policy names callers, so a call's walk is made at
	// its stop; otherwise walks are snapshots unwound at the next Idle.
	needStack bool
	walks     []walkJob
}

type walkJob struct {
	rec  *Record
	snap *snap
}

// filterFor turns call names into per-arch number sets (nil: all).
func filterFor(names []string) (map[uint32]map[uint64]bool, error) {
	if names == nil {
		return nil, nil
	}
	f := map[uint32]map[uint64]bool{}
	for _, tab := range tracees {
		f[tab.Audit] = map[uint64]bool{}
	}
	for _, n := range names {
		if n == "*" {
			return nil, nil
		}
		found := false
		for _, tab := range tracees {
			if e, ok := tab.ByName(n); ok {
				f[tab.Audit][uint64(e.Nr)] = true
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w %q (names as in the kernel's tables: openat, execve, mmap2...)", ErrUnknownSyscall, n)
		}
	}
	// execve always stops (and is recorded only when selected): the tracer
	// starts reporting at the tracee's own execve, and a new image must be
	// re-read.
	for _, tab := range tracees {
		for _, n := range []string{"execve", "execveat"} {
			if e, ok := tab.ByName(n); ok {
				f[tab.Audit][uint64(e.Nr)] = true
			}
		}
	}
	return f, nil
}

// New prepares a run and starts or attaches to its tree.
func New(opt Options) (*Monitor, error) {
	names := opt.Syscalls
	if names != nil && opt.Policy != nil {
		names = append(append([]string{}, names...), opt.Policy.Names()...)
	}
	// The calls whose every invocation stops (the others of protCalls only
	// with PROT_EXEC, if at all).
	all := map[string]bool{}
	if !opt.ExecMaps {
		for _, n := range names {
			all[n] = true
		}
	}
	if names != nil && (opt.Backtrace || opt.Policy.NeedsStack()) { // the address-space view follows the mapping calls
		names = append([]string{}, names...)
		for n := range viewCalls {
			names = append(names, n)
		}
	}
	filter, err := filterFor(names)
	if err != nil {
		return nil, err
	}
	when := map[uint32]map[uint64]tracer.ArgTest{}
	for _, tab := range tracees {
		when[tab.Audit] = map[uint64]tracer.ArgTest{}
		for _, n := range protCalls {
			if e, ok := tab.ByName(n); ok && !all[n] {
				when[tab.Audit][uint64(e.Nr)] = tracer.ArgTest{Arg: 2, Mask: protExec}
			}
		}
	}
	m := &Monitor{opt: opt, pending: map[*tracer.Call]*Record{}, sum: Summary{BySyscall: map[string]int{}}}
	if opt.Out != nil {
		m.w = bufio.NewWriterSize(opt.Out, 64<<10)
		m.enc = json.NewEncoder(m.w)
	}
	if opt.Backtrace || opt.Policy.NeedsStack() {
		m.bt = newBacktracer(opt.MaxFrames)
		m.bt.noSyms = opt.NoSymbols
		m.needStack = opt.Policy.NeedsStack()
		m.bt.sync = opt.syncWalks
	}
	m.tr, err = tracer.New(tracer.Config{Argv: opt.Argv, Pid: opt.Pid, Filter: filter, When: when, UseSeccomp: !opt.NoSeccomp, Stdio: opt.Stdio,
		FramePointer: m.bt != nil, OneStop: opt.OneStop, Pin: opt.Pin, CPU: opt.CPU, Poll: opt.Poll})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Detach releases the tree (safe from a signal goroutine).
func (m *Monitor) Detach() { m.tr.Detach() }

// Run monitors until the tree ends or is released.
func (m *Monitor) Run() (Summary, error) {
	res, err := m.tr.Run(m)
	m.Idle()
	m.sum.Processes, m.sum.Threads, m.sum.Status, m.sum.Detached = res.Processes, res.Threads, res.Status, res.Detached
	if m.w != nil {
		if m.opt.JSON {
			m.enc.Encode(map[string]Summary{"summary": m.sum})
		}
		if ferr := m.w.Flush(); ferr != nil && m.werr == nil {
			m.werr = ferr
		}
	}
	if err == nil && m.werr != nil {
		err = fmt.Errorf("monitor: writing records: %w", m.werr)
	}
	return m.sum, err
}

type mem struct{ pid int }

func (r mem) ReadString(addr uint64, max int) (string, bool, error) {
	return tracer.ReadString(r.pid, addr, max)
}

func tableFor(audit uint32) *sysent.Table {
	if t := sysent.ForAudit(audit); t != nil {
		return t
	}
	return tracees[0]
}

// Enter implements tracer.Handler.
func (m *Monitor) Enter(c *tracer.Call) uintptr {
	tab := tableFor(c.Audit)
	rec := &Record{Pid: c.Pid, Tid: c.Tid, Arch: tab.Arch.Name, Syscall: tab.Name(c.Nr), Nr: c.Nr}
	e, known := tab.ByNr(c.Nr)
	var paths []string
	if known {
		rec.Args = tab.Decode(e, c.Args, mem{c.Tid})
		for _, v := range rec.Args {
			if v.Kind == "path" && v.Path != "" {
				paths = append(paths, v.Path)
			}
		}
	}
	var callers []string
	switch {
	case m.bt == nil:
	case m.needStack || m.bt.sync:
		frames := m.bt.walk(c, tab)
		for _, f := range frames {
			callers = append(callers, f.Sym)
		}
		if m.opt.Backtrace {
			rec.Backtrace = frames
		}
	default:
		// Only the record needs the frames: the walk is made after the
		// thread is resumed, from a snapshot of its stack (the unwind
		// then runs while the tracee does), where the thread's walks so
		// far say what to read.
		if j := m.bt.snapshot(c, tab); j != nil {
			m.walks = append(m.walks, walkJob{rec, j})
		} else {
			rec.Backtrace = m.bt.walk(c, tab)
		}
	}
	m.pending[c] = rec
	if r := m.opt.Policy.Decide(rec.Syscall, paths, callers); r != nil && r.Deny {
		rec.Denied, rec.Rule = true, r.String()
		return uintptr(syscall.EPERM)
	}
	return 0
}

// Exit implements tracer.Handler.
func (m *Monitor) Exit(c *tracer.Call) {
	rec := m.pending[c]
	delete(m.pending, c)
	if rec == nil {
		return
	}
	tab := tableFor(c.Audit)
	if c.NoReturn {
		rec.Ret = "?"
	} else {
		rec.Ret, rec.Errno = tab.Result(c.Ret, c.IsError)
		if addrResult[rec.Syscall] && !c.IsError {
			rec.Ret = "0x" + strconv.FormatUint(uint64(c.Ret), 16)
		}
	}
	if m.bt != nil {
		m.bt.after(rec.Syscall, c)
	}
	m.sum.Calls++
	m.sum.BySyscall[rec.Syscall]++
	if rec.Errno != "" {
		m.sum.Errors++
	}
	if rec.Denied {
		m.sum.Denied++
	}
	if m.opt.Syscalls != nil && !contains(m.opt.Syscalls, rec.Syscall) && !rec.Denied {
		return // stopped for the policy only
	}
	m.queue = append(m.queue, rec)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// addrResult are the calls that return an address (printed in hex).
var addrResult = map[string]bool{"mmap": true, "mmap2": true, "brk": true, "mremap": true, "shmat": true}

var eventNames = map[tracer.EventKind]string{
	tracer.EvNewThread: "new_thread", tracer.EvExec: "exec", tracer.EvExit: "exit",
	tracer.EvKilled: "killed", tracer.EvSignal: "signal", tracer.EvGroupStop: "group_stop",
}

// Event implements tracer.Handler.
func (m *Monitor) Event(e tracer.Event) {
	if m.bt != nil {
		switch e.Kind {
		case tracer.EvExec:
			m.bt.invalidate(e.Pid)
			m.bt.forget(e.Tid)
			m.bt.forget(e.FormerTid)
		case tracer.EvExit, tracer.EvKilled:
			m.bt.forget(e.Tid)
		}
	}
	if e.Kind == tracer.EvNewThread && e.Tid == e.Parent {
		return // the creator's half of the event
	}
	r := EventRecord{Event: eventNames[e.Kind], Pid: e.Pid, Tid: e.Tid, Parent: e.Parent, Status: e.Status, Former: e.FormerTid}
	if e.Signal != 0 {
		r.Signal = sysent.SignalName(e.Signal)
	}
	m.queue = append(m.queue, r)
}

// Idle implements tracer.Idler: the stacks snapshotted at the stops just
// served are unwound and the records written while the tracees run
// (formatting them was a tenth of kboost's time on a build, unwinding
// another, and each stop waited for both).
func (m *Monitor) Idle() {
	for i, w := range m.walks {
		w.rec.Backtrace = m.bt.unwindSnap(w.snap)
		m.walks[i] = walkJob{}
	}
	m.walks = m.walks[:0]
	for i, v := range m.queue {
		m.write(v)
		m.queue[i] = nil
	}
	m.queue = m.queue[:0]
}

func (m *Monitor) write(v any) {
	if m.w == nil {
		return
	}
	var err error
	if m.opt.JSON {
		err = m.enc.Encode(v)
	} else {
		_, err = m.w.WriteString(text(v))
	}
	if err != nil && m.werr == nil {
		m.werr = err
	}
}

// text renders a record strace-style: [pid N] name(args) = ret.
func text(v any) string {
	var b strings.Builder
	switch r := v.(type) {
	case *Record:
		fmt.Fprintf(&b, "[pid %d] %s(", r.Tid, r.Syscall)
		for i, a := range r.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.Text)
		}
		fmt.Fprintf(&b, ") = %s", r.Ret)
		if r.Denied {
			fmt.Fprintf(&b, " (denied by %s)", r.Rule)
		}
		b.WriteByte('\n')
		for _, f := range r.Backtrace {
			fmt.Fprintf(&b, "    > %s\n", f.text())
		}
	case EventRecord:
		fmt.Fprintf(&b, "[pid %d] +++ %s", r.Tid, r.Event)
		if r.Parent != 0 {
			fmt.Fprintf(&b, " of %d", r.Parent)
		}
		if r.Signal != "" {
			b.WriteString(" " + r.Signal)
		}
		if r.Former != 0 {
			fmt.Fprintf(&b, " by %d", r.Former)
		}
		if r.Event == "exit" {
			b.WriteString(" " + strconv.Itoa(r.Status))
		}
		b.WriteString(" +++\n")
	}
	return b.String()
}

// WriteSummary prints the totals as a table.
func WriteSummary(w io.Writer, s Summary) {
	names := make([]string, 0, len(s.BySyscall))
	for n := range s.BySyscall {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if s.BySyscall[names[i]] != s.BySyscall[names[j]] {
			return s.BySyscall[names[i]] > s.BySyscall[names[j]]
		}
		return names[i] < names[j]
	})
	fmt.Fprintf(w, "kboost monitor: %d calls (%d failed, %d denied) in %d processes, %d threads; exit status %d\n",
		s.Calls, s.Errors, s.Denied, s.Processes, s.Threads, s.Status)
	for i, n := range names {
		if i == 15 {
			fmt.Fprintf(w, "  ... %d more\n", len(names)-i)
			break
		}
		fmt.Fprintf(w, "  %8d %s\n", s.BySyscall[n], n)
	}
}
