//go:build linux && (amd64 || 386 || arm64 || arm)

package tracer

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/kboost/kboost/internal/procstat"

	"github.com/kboost/kboost/internal/ptregs"
	"github.com/kboost/kboost/sysent"
	"golang.org/x/sys/unix"
)

const (
	ptraceGetSyscallInfo = 0x420e
	infoEntry            = 1
	infoExit             = 2
	infoSeccomp          = 3
	eventStop            = 128 // PTRACE_EVENT_STOP
)

// isExecve says whether nr is execve in the calling mode audit (the
// kernel's own tables, package sysent).
func isExecve(audit uint32, nr uint64) bool {
	t := sysent.ForAudit(audit)
	if t == nil {
		return false
	}
	e, ok := t.ByName("execve")
	return ok && uint64(e.Nr) == nr
}

// thread is one traced task.
type thread struct {
	tid, pid  int
	call      *Call // inside a monitored call (entry seen)
	hidden    bool  // kboost's own start-up helper, before the tracee's execve
	listening bool
	// One stop per call (defer_linux.go): the call returning through the
	// thread's stub, the thread's slot, and a call of kboost's own made in
	// place of one of the thread's.
	def    *deferred
	slot   int
	slotMM *stubMM
	inj    *injection
	execed bool // since it was created: its creator's pages are not in it
}

// Tracer is one trace, owned by a locked OS thread.
type Tracer struct {
	cfg     Config
	owner   chan func()
	threads map[int]*thread
	// reaped are tasks whose end the loop has seen: a creator's event
	// reported after its new task already ran and ended (a thread that
	// executed, killing its creator in its clone event stop) must not bring
	// it back.
	reaped    map[int]bool
	pids      map[int]bool
	root      int
	seccomp   bool
	armed     bool // the tracee proper is running (its execve was entered)
	sentinel  int
	sentinelW *os.File
	detachMu  sync.Once
	detaching bool
	// detachAsked: the sentinel exited while collect held every thread.
	detachAsked bool
	quiet       bool
	res         Result
	h           Handler
	// taken are exits a Prober's own wait4 took (Reaped), for the loop.
	taken []takenExit
	// Stub pages per process (nil: no call is deferred), the calls never
	// deferred per calling mode, and the last sequence number given.
	mms   map[int]*stubMM
	never map[uint32]map[uint64]bool
	seq   uint64
	// Config.Pin: the one CPU, and the mask the tracer had before it.
	pin              bool
	pinned, unpinned unix.CPUSet
	poll             *poller
}

type takenExit struct {
	tid int
	ws  unix.WaitStatus
}

// Reaped hands the loop the exit of tid that a Prober's own wait4 took
// (the thread ended during a step the prober made it take): the loop
// processes it as if it had waited for it, at its next turn, so the trace
// does not wait for that thread for ever. Tracer thread only.
func (t *Tracer) Reaped(tid int, ws unix.WaitStatus) {
	t.taken = append(t.taken, takenExit{tid, ws})
}

func (t *Tracer) goneTaken() {
	for len(t.taken) > 0 {
		x := t.taken[0]
		t.taken = t.taken[1:]
		if th := t.threads[x.tid]; th != nil {
			t.gone(th, x.ws)
		}
	}
}

func ptrace(req int, pid int, addr, data uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// New starts or attaches to the tree cfg names. All ptrace requests of the
// trace come from one OS thread locked for the Tracer's life.
func New(cfg Config) (*Tracer, error) {
	if (len(cfg.Argv) == 0) == (cfg.Pid == 0) {
		return nil, fmt.Errorf("%w: give either a command or a pid", ErrTracer)
	}
	if cfg.Pin && cfg.Pid != 0 {
		return nil, fmt.Errorf("%w: pinning to a CPU needs a command kboost starts (a running tree keeps its own affinity)", ErrCPU)
	}
	t := &Tracer{cfg: cfg, owner: make(chan func()), threads: map[int]*thread{}, pids: map[int]bool{}, reaped: map[int]bool{}}
	t.poll = newPoller(cfg.Poll)
	go t.ownerLoop()
	var err error
	t.do(func() {
		if err = t.startSentinel(); err != nil {
			return
		}
		if len(cfg.Argv) > 0 {
			err = t.spawn()
		} else {
			err = t.attach()
		}
	})
	if err != nil {
		t.stopSentinel()
		close(t.owner)
		return nil, err
	}
	return t, nil
}

func (t *Tracer) ownerLoop() {
	runtime.LockOSThread() // never unlocked: ptrace's tracer is this thread
	for f := range t.owner {
		f()
	}
}

func (t *Tracer) do(f func()) {
	done := make(chan struct{})
	t.owner <- func() { f(); close(done) }
	<-done
}

// Run traces until every tracee is gone (or released by Detach).
func (t *Tracer) Run(h Handler) (Result, error) {
	var err error
	t.h = h
	t.do(func() {
		if p := t.prober(); p != nil && t.cfg.Pid != 0 {
			t.attachedBarrier(p)
		}
		err = t.loop()
	})
	t.stopSentinel()
	close(t.owner)
	return t.res, err
}

// Detach asks the trace to release every tracee; safe from any goroutine.
func (t *Tracer) Detach() {
	t.detachMu.Do(func() { t.sentinelW.Close() })
}

// The sentinel is a child that exits when its pipe closes: its exit wakes
// the tracer's wait4 when Detach is asked from another goroutine (ptrace
// requests cannot come from there).
func (t *Tracer) startSentinel() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	pid, err := syscall.ForkExec("/proc/self/exe", []string{"kboost-tracer-sentinel"}, &syscall.ProcAttr{
		Env: []string{envSentinel + "=1"}, Files: []uintptr{r.Fd(), ^uintptr(0), 2},
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		w.Close()
		return fmt.Errorf("%w: sentinel: %w", ErrTracer, err)
	}
	t.sentinel, t.sentinelW = pid, w
	return nil
}

func (t *Tracer) stopSentinel() {
	t.Detach()
	if t.sentinel > 0 {
		var ws unix.WaitStatus
		unix.Wait4(t.sentinel, &ws, 0, nil)
		t.sentinel = 0
	}
}

const baseOpts = unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE |
	unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACESYSGOOD

func (t *Tracer) spawn() error {
	t.seccomp = t.cfg.UseSeccomp
	t.deferSetup()
	var prog []byte
	if t.seccomp {
		prog = buildFilter(t.cfg.Filter, t.cfg.When)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	defer w.Close()
	if t.cfg.Pin {
		if err := t.pinSelf(); err != nil {
			return err
		}
	}
	env := t.cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env = helperEnv(env)
	pid, err := syscall.ForkExec("/proc/self/exe", append([]string{"kboost-tracee", "--"}, t.cfg.Argv...), &syscall.ProcAttr{
		Env: env, Files: append(stdio(t.cfg.Stdio), r.Fd()),
	})
	if err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrTracer, t.cfg.Argv[0], err)
	}
	opts := baseOpts | unix.PTRACE_O_EXITKILL
	if t.seccomp {
		opts |= unix.PTRACE_O_TRACESECCOMP
	}
	if t.mms != nil {
		opts |= unix.PTRACE_O_TRACEEXIT // a deferred call's result is read before the task's memory goes
	}
	if err := ptrace(unix.PTRACE_SEIZE, pid, 0, uintptr(opts)); err != nil {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		return fmt.Errorf("%w: PTRACE_SEIZE %d: %w", ErrTracer, pid, err)
	}
	t.root = pid
	t.addThread(pid, pid, true)
	ptrace(unix.PTRACE_INTERRUPT, pid, 0, 0) // stop once, so even its first call can stop
	// The helper waits for the filter and a final 'g' (it exits on EOF
	// without it, so a dead kboost starts nothing).
	msg := binary.LittleEndian.AppendUint32(nil, uint32(len(prog)))
	msg = append(append(msg, prog...), 'g')
	if _, err := w.Write(msg); err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrTracer, t.cfg.Argv[0], err)
	}
	return nil
}

func stdio(f [3]*os.File) []uintptr {
	fds := []uintptr{0, 1, 2}
	for i, x := range f {
		if x != nil {
			fds[i] = x.Fd()
		}
	}
	return fds
}

// attach seizes every thread of pid and of its descendants, then
// interrupts each so its next stop can be restarted with PTRACE_SYSCALL.
func (t *Tracer) attach() error {
	t.root = t.cfg.Pid
	t.armed = true
	for round := 0; round < 3; round++ { // threads created while attaching
		pids := append([]int{t.cfg.Pid}, descendants(t.cfg.Pid)...)
		for _, p := range pids {
			tids, err := tasks(p)
			if err != nil {
				if p == t.cfg.Pid {
					return fmt.Errorf("%w: attach %d: %w", ErrTracer, p, err)
				}
				continue
			}
			for _, tid := range tids {
				if t.threads[tid] != nil {
					continue
				}
				if err := ptrace(unix.PTRACE_SEIZE, tid, 0, baseOpts); err != nil {
					if p == t.cfg.Pid && tid == p {
						return fmt.Errorf("%w: PTRACE_SEIZE %d: %w", ErrTracer, tid, err)
					}
					continue
				}
				t.addThread(tid, p, false)
				ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0)
			}
		}
	}
	return nil
}

func tasks(pid int) ([]int, error) { return procstat.Threads(pid) }

// descendants lists the processes below pid, from /proc/*/stat.
func descendants(pid int) []int { return procstat.Descendants(pid) }

func (t *Tracer) addThread(tid, pid int, hidden bool) *thread {
	th := &thread{tid: tid, pid: pid, hidden: hidden || !t.armed, slot: -1}
	t.threads[tid] = th
	if !th.hidden {
		t.count(th)
	}
	return th
}

// count adds a reported thread (and its process) to the result.
func (t *Tracer) count(th *thread) {
	t.res.Threads++
	if !t.pids[th.pid] {
		t.pids[th.pid] = true
		t.res.Processes++
	}
}

// tgid reads a task's process id.
func tgid(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return tid
}

// beforeWait and afterWait, when set (by tests only), run on the tracer
// thread before the loop's wait4 and after it returned a stop or exit,
// before that is processed: a delay there is the tracer being preempted
// at that point.
//
// exitStopsAlways (tests only) resumes every stop with PTRACE_SYSCALL, as
// a resume that waits for an exit stop which never comes does: each call
// under the filter then stops at its entry before its seccomp stop.
var (
	exitStopsAlways bool
	beforeWait      func()
	afterWait       func(tid int, ws unix.WaitStatus)
)

func (t *Tracer) loop() error {
	idler, _ := t.h.(Idler)
	for {
		t.goneTaken()
		if len(t.threads) == 0 {
			return nil
		}
		var ws unix.WaitStatus
		if beforeWait != nil {
			beforeWait()
		}
		if idler != nil {
			idler.Idle()
		}
		tid, err := t.poll.wait(&ws)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if err == unix.ECHILD {
				return nil
			}
			return fmt.Errorf("%w: wait4: %w", ErrTracer, err)
		}
		if tid == t.sentinel {
			t.sentinel = 0
			t.beginDetach()
			continue
		}
		if afterWait != nil {
			afterWait(tid, ws)
		}
		th := t.threads[tid]
		if th == nil { // a new task's first stop before its creator's event
			delete(t.reaped, tid) // (a new task with a reaped one's number)
			th = t.addThread(tid, tgid(tid), false)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			t.gone(th, ws)
		case ws.Stopped():
			if t.detaching {
				t.detachStopped(th, ws)
			} else {
				t.stopped(th, ws)
			}
		}
	}
}

func (t *Tracer) report(th *thread) bool { return !th.hidden && !t.quiet && t.h != nil }

func (t *Tracer) event(th *thread, e Event) {
	if t.report(th) {
		e.Tid, e.Pid = th.tid, th.pid
		t.h.Event(e)
	}
}

func (t *Tracer) resume(th *thread, sig int) {
	req := unix.PTRACE_SYSCALL
	if th.call == nil && (t.seccomp || t.cfg.NoSyscalls && t.armed) && !exitStopsAlways {
		req = unix.PTRACE_CONT
	}
	ptrace(req, th.tid, 0, uintptr(sig)) // ESRCH: killed meanwhile, its exit follows
}

func isStopSignal(sig syscall.Signal) bool {
	return sig == unix.SIGSTOP || sig == unix.SIGTSTP || sig == unix.SIGTTIN || sig == unix.SIGTTOU
}

func (t *Tracer) stopped(th *thread, ws unix.WaitStatus) {
	sig := ws.StopSignal()
	ev := int(ws) >> 16
	switch {
	case sig == unix.SIGTRAP|0x80, ev == unix.PTRACE_EVENT_SECCOMP:
		t.syscallStop(th)
	case ev == unix.PTRACE_EVENT_FORK || ev == unix.PTRACE_EVENT_VFORK || ev == unix.PTRACE_EVENT_CLONE:
		msg, err := unix.PtraceGetEventMsg(th.tid)
		if err != nil {
			// Killed after wait4 reported the event (the new thread executed
			// at once, killing its creator): the new task is unknown here,
			// and it is added at its own first stop or exit. Taking 0 for it
			// made a thread that never reports: the trace waited for ever.
			t.resume(th, 0)
			return
		}
		child := int(msg)
		pid := child
		if ev == unix.PTRACE_EVENT_CLONE {
			pid = tgid(child)
		}
		if t.reaped[child] { // it ran and ended before this event was reported
			t.resume(th, 0)
			return
		}
		if t.threads[child] == nil {
			t.addThread(child, pid, th.hidden)
		}
		t.inheritMM(th, child, pid, ev == unix.PTRACE_EVENT_VFORK)
		t.event(th, Event{Kind: EvNewThread, Parent: th.tid})
		if c := t.threads[child]; t.report(c) {
			t.h.Event(Event{Kind: EvNewThread, Tid: child, Pid: pid, Parent: th.tid, VFork: ev == unix.PTRACE_EVENT_VFORK})
		}
		t.resume(th, 0)
	case ev == unix.PTRACE_EVENT_EXEC:
		former := th.tid
		if msg, err := unix.PtraceGetEventMsg(th.tid); err == nil {
			former = int(msg)
		} else if f := t.formerOf(th); f != 0 {
			former = f // killed after wait4 reported the exec
		}
		if f := t.threads[former]; former != th.tid && f != nil {
			if th.call != nil && t.report(th) {
				th.call.NoReturn = true
				t.h.Exit(th.call)
			}
			delete(t.threads, former)
			f.tid = th.tid
			t.threads[th.tid] = f
			th = f
		}
		// Seized while its own exec (of kboost's helper) was finishing, the
		// helper may report that exec too: only the tracee's counts.
		th.hidden = th.hidden && !t.armed
		if t.mms != nil { // a new address space: no stub pages yet
			th.execed = true
			th.def = nil
			t.releaseSlot(th)
			delete(t.mms, th.pid)
		}
		t.event(th, Event{Kind: EvExec, FormerTid: former})
		t.resume(th, 0)
	case ev == unix.PTRACE_EVENT_EXIT:
		t.settle(th)
		t.resume(th, 0)
	case ev == eventStop:
		t.settleStopped(th)
		if isStopSignal(sig) {
			th.listening = true
			t.event(th, Event{Kind: EvGroupStop, Signal: int(sig)})
			ptrace(unix.PTRACE_LISTEN, th.tid, 0, 0)
			return
		}
		th.listening = false
		t.resume(th, 0)
	default: // signal-delivery-stop: deliver it unchanged
		t.leaveStub(th)
		if p := t.prober(); p != nil && sig == unix.SIGTRAP && p.Trap(th.tid, th.pid) {
			t.resume(th, 0)
			return
		}
		t.event(th, Event{Kind: EvSignal, Signal: int(sig)})
		t.resume(th, int(sig))
	}
}

// formerOf names the thread that executed in th's process when the exec
// event's message cannot be read: the other threads ended (and were
// reaped) before the exec event, so the one other thread of the process
// left is the caller (0: none, or not only one).
func (t *Tracer) formerOf(th *thread) int {
	former := 0
	for tid, o := range t.threads {
		if o.pid == th.pid && tid != th.tid {
			if former != 0 {
				return 0
			}
			former = tid
		}
	}
	return former
}

// syscallInfo is struct ptrace_syscall_info (linux/ptrace.h).
type syscallInfo struct {
	Op     uint8
	_      [3]uint8
	Arch   uint32
	IP, SP uint64
	U      [7]uint64 // entry/seccomp: nr, args[6]; exit: rval, is_error
	_      uint32
}

func getInfo(tid int) (syscallInfo, error) {
	var si syscallInfo
	err := ptrace(ptraceGetSyscallInfo, tid, unsafe.Sizeof(si), uintptr(unsafe.Pointer(&si)))
	return si, err
}

func (t *Tracer) monitored(audit uint32, nr uint64, args []uint64) bool {
	if t.cfg.Filter == nil {
		return true
	}
	set, ok := t.cfg.Filter[audit]
	if !ok {
		return false
	}
	if w, ok := t.cfg.When[audit][nr]; ok && w.Arg >= 0 && w.Arg < len(args) && uint32(args[w.Arg])&w.Mask == 0 {
		return false
	}
	return set == nil || set[nr]
}

func (t *Tracer) syscallStop(th *thread) {
	si, err := getInfo(th.tid)
	if err != nil {
		t.resume(th, 0)
		return
	}
	switch si.Op {
	case infoEntry, infoSeccomp:
		if th.inj != nil { // kboost's own call: on to its exit
			ptrace(unix.PTRACE_SYSCALL, th.tid, 0, 0)
			return
		}
		if si.Op == infoEntry && t.seccomp {
			// Under the filter a call's stop is its seccomp stop, which
			// follows this one when the filter traces the call. An entry
			// stop means the thread was resumed for an exit stop that
			// never came: taking the call here too made it two calls, and
			// with one stop per call the second entry read the stub's
			// own address as the return address (the thread then looped
			// in its stub).
			if th.call != nil && t.report(th) {
				th.call.NoReturn = true
				t.h.Exit(th.call)
			}
			th.call = nil
			t.resume(th, 0)
			return
		}
		nr := si.U[0]
		if !t.armed && th.tid == t.root && isExecve(si.Arch, nr) {
			th.hidden = false // kboost's helper execs the tracee: report from here
			t.armed = true
			t.count(th)
		}
		restarted := false
		if rs := deferSpecs[si.Arch]; rs != nil && t.mms != nil {
			restarted = th.restartedHere(rs, si.IP)
		}
		t.settle(th) // a restarted call's earlier attempt is reported unfinished
		if !t.report(th) || !t.monitored(si.Arch, nr, si.U[1:7]) {
			th.call = nil
			t.resume(th, 0)
			return
		}
		s := t.deferrable(th, si.Arch, nr, si.IP)
		if s != nil && !restarted {
			if mm := t.mmOf(th); mm.state != mmReady && t.startInjection(th, s, mm) {
				return // the call is made again once kboost's own is done
			}
		}
		c := &Call{Tid: th.tid, Pid: th.pid, Audit: si.Arch, Nr: nr, IP: si.IP, SP: si.SP}
		copy(c.Args[:], si.U[1:7])
		var regs *ptregs.Regs
		if t.cfg.FramePointer {
			if regs, err = ptregs.Get(th.tid); err == nil {
				c.FP, c.Regs = regs.FP(), regs.Dwarf()
			}
		}
		th.call = c
		if errno := t.h.Enter(c); errno != 0 {
			if regs == nil {
				regs, err = ptregs.Get(th.tid)
			}
			if regs != nil && err == nil {
				c.Denied = errno
				regs.SetWord(regs.L.Rv, uint64(-int64(errno)))
				regs.Skip(th.tid)
			}
		} else if restarted {
			if seq, ok := t.restartSeq(th, deferSpecs[si.Arch]); ok {
				th.call, th.def = nil, &deferred{call: c, seq: seq}
			}
		} else if s != nil && t.deferCall(th, c, s, regs) {
			th.call = nil
		}
		t.resume(th, 0)
	case infoExit:
		if th.inj != nil {
			t.endInjection(th, si.U[0], si.U[1]&0xff != 0)
			t.resume(th, 0)
			return
		}
		c := th.call
		th.call = nil
		if c != nil {
			if c.Denied != 0 {
				if regs, err := ptregs.Get(th.tid); err == nil {
					regs.SetWord(regs.L.Rv, uint64(-int64(c.Denied)))
					regs.Set(th.tid)
				}
				c.Ret, c.IsError = -int64(c.Denied), true
			} else {
				c.Ret, c.IsError = int64(si.U[0]), si.U[1]&0xff != 0
			}
			if t.report(th) {
				t.h.Exit(c)
			}
		}
		t.resume(th, 0)
	default:
		t.resume(th, 0)
	}
}

func (t *Tracer) gone(th *thread, ws unix.WaitStatus) {
	if th.call != nil && t.report(th) {
		th.call.NoReturn = true
		t.h.Exit(th.call)
	}
	if d := th.def; d != nil && t.report(th) {
		d.call.NoReturn = true
		t.h.Exit(d.call)
	}
	th.def = nil
	t.releaseSlot(th)
	if t.mms != nil {
		t.forgetMM(th)
	}
	if ws.Signaled() {
		t.event(th, Event{Kind: EvKilled, Signal: int(ws.Signal())})
		if th.tid == t.root {
			t.res.Status = 128 + int(ws.Signal())
		}
	} else {
		t.event(th, Event{Kind: EvExit, Status: ws.ExitStatus()})
		if th.tid == t.root {
			t.res.Status = ws.ExitStatus()
		}
	}
	delete(t.threads, th.tid)
	t.reaped[th.tid] = true
}

// beginDetach releases the tree: every thread is interrupted and detached
// at its next stop. A tree under kboost's seccomp filter is served quietly
// instead (see the package contract).
func (t *Tracer) beginDetach() {
	if t.seccomp {
		t.quiet = true
		return
	}
	t.detaching = true
	t.res.Detached = true
	if p := t.prober(); p != nil {
		t.releaseAll(p)
		return
	}
	for tid := range t.threads {
		ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0)
	}
}

func (t *Tracer) detachStopped(th *thread, ws unix.WaitStatus) {
	t.detachStoppedAs(th, ws, false)
}

// detachStoppedAs releases th from its stop ws; consumed says a Prober
// took the stop's SIGTRAP as its own (it is not delivered).
func (t *Tracer) detachStoppedAs(th *thread, ws unix.WaitStatus, consumed bool) {
	sig := ws.StopSignal()
	ev := int(ws) >> 16
	deliver := 0
	switch {
	case ev == unix.PTRACE_EVENT_FORK || ev == unix.PTRACE_EVENT_VFORK || ev == unix.PTRACE_EVENT_CLONE:
		if msg, err := unix.PtraceGetEventMsg(th.tid); err == nil && t.threads[int(msg)] == nil && !t.reaped[int(msg)] {
			t.addThread(int(msg), tgid(int(msg)), true) // detached at its first stop
		}
	case sig == unix.SIGTRAP|0x80 || ev != 0:
	case consumed:
	default:
		deliver = int(sig) // a signal on its way in: let it arrive
	}
	if c := th.call; c != nil && c.Denied != 0 {
		if si, err := getInfo(th.tid); err == nil && si.Op == infoExit {
			if regs, err := ptregs.Get(th.tid); err == nil {
				regs.SetWord(regs.L.Rv, uint64(-int64(c.Denied)))
				regs.Set(th.tid)
			}
		}
	}
	t.unpin(th.tid)
	ptrace(unix.PTRACE_DETACH, th.tid, 0, uintptr(deliver))
	delete(t.threads, th.tid)
}

// ReadString reads a NUL-terminated string of at most max bytes from pid's
// memory (process_vm_readv, page by page so a string that ends before an
// unmapped page still reads).
func ReadString(pid int, addr uint64, max int) (string, bool, error) {
	var out []byte
	buf := make([]byte, 4096)
	for len(out) < max {
		n := 4096 - int(addr%4096)
		if n > max-len(out) {
			n = max - len(out)
		}
		got, err := ReadMem(pid, addr, buf[:n])
		if err != nil || got == 0 {
			if len(out) == 0 {
				if err == nil {
					err = unix.EFAULT
				}
				return "", false, err
			}
			return string(out), true, nil
		}
		if i := indexByte(buf[:got], 0); i >= 0 {
			return string(append(out, buf[:i]...)), false, nil
		}
		out = append(out, buf[:got]...)
		addr += uint64(got)
	}
	return string(out), true, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// ReadMem reads pid's memory at addr into buf.
func ReadMem(pid int, addr uint64, buf []byte) (int, error) {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	return unix.ProcessVMReadv(pid, local, remote, 0)
}

func (t *Tracer) prober() Prober {
	p, _ := t.h.(Prober)
	return p
}

// stop is one thread held in ptrace-stop by collect.
type stop struct {
	th *thread
	ws unix.WaitStatus
}

// collectWait bounds how long collect waits for a thread that never stops
// (a zombie group leader whose exit is reported only with its group's).
const collectWait = 10 * time.Second

// collect waits until every thread in want, and every task they create
// meanwhile, is in ptrace-stop, and returns those stops unprocessed (none
// of the threads runs until the caller resumes or detaches it). Exits are
// processed as the loop would.
func (t *Tracer) collect(want []int) []stop {
	pending, seen := map[int]bool{}, map[int]bool{}
	for _, tid := range want {
		pending[tid] = true
	}
	var out []stop
	deadline := time.Now().Add(collectWait)
	for len(pending) > 0 {
		var ws unix.WaitStatus
		tid, err := unix.Wait4(-1, &ws, unix.WALL|unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break
		}
		if tid == 0 {
			if time.Now().After(deadline) {
				break
			}
			for p := range pending {
				if zombie(p) {
					delete(pending, p)
				}
			}
			time.Sleep(200 * time.Microsecond)
			continue
		}
		if tid == t.sentinel {
			t.sentinel = 0
			t.detachAsked = true
			continue
		}
		th := t.threads[tid]
		if th == nil {
			th = t.addThread(tid, tgid(tid), false)
		}
		delete(pending, tid)
		if ws.Exited() || ws.Signaled() {
			t.gone(th, ws)
			continue
		}
		if !ws.Stopped() {
			continue
		}
		seen[tid] = true
		if ev := int(ws) >> 16; ev == unix.PTRACE_EVENT_FORK || ev == unix.PTRACE_EVENT_VFORK || ev == unix.PTRACE_EVENT_CLONE {
			if msg, err := unix.PtraceGetEventMsg(tid); err == nil && !seen[int(msg)] {
				pending[int(msg)] = true
			}
		}
		out = append(out, stop{th, ws})
	}
	return out
}

// zombie says whether tid has exited but is not yet reaped.
func zombie(tid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

func (t *Tracer) tids() []int {
	tids := make([]int, 0, len(t.threads))
	for tid := range t.threads {
		tids = append(tids, tid)
	}
	sort.Ints(tids)
	return tids
}

func stopTids(stops []stop) []int {
	tids := make([]int, len(stops))
	for i, s := range stops {
		tids[i] = s.th.tid
	}
	return tids
}

// attachedBarrier holds every thread of an attached tree at its first stop
// while the Prober plants its probes, then processes those stops.
func (t *Tracer) attachedBarrier(p Prober) {
	stops := t.collect(t.tids())
	p.Attached(stopTids(stops))
	for _, s := range stops {
		t.stopped(s.th, s.ws)
	}
	if t.detachAsked {
		t.beginDetach()
	}
}

// releaseAll is Detach for a Prober: every thread is stopped at once, the
// prober's own traps are consumed, the prober restores the tracees, then
// every thread is released.
func (t *Tracer) releaseAll(p Prober) {
	for tid := range t.threads {
		ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0)
	}
	stops := t.collect(t.tids())
	consumed := make([]bool, len(stops))
	for i, s := range stops {
		if s.ws.StopSignal() == unix.SIGTRAP && int(s.ws)>>16 == 0 {
			consumed[i] = p.Trap(s.th.tid, s.th.pid)
		}
	}
	p.Release(stopTids(stops))
	for i, s := range stops {
		t.detachStoppedAs(s.th, s.ws, consumed[i])
	}
	for tid := range t.threads { // never stopped (zombie leaders): released as they are
		t.unpin(tid)
		ptrace(unix.PTRACE_DETACH, tid, 0, 0)
		delete(t.threads, tid)
	}
}
