package tracer

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrTracer marks a tracer failure (attach, spawn, ptrace).
var ErrTracer = errors.New("tracer")

// ErrCPU marks a Config.CPU kboost may not run on.
var ErrCPU = errors.New("tracer: CPU not available")

// Config says what to trace.
type Config struct {
	// Argv starts a new tree (kboost is its tracer from its first
	// instruction); Pid attaches to the running tree rooted at Pid. Exactly
	// one is set.
	Argv []string
	Env  []string // nil: kboost's environment
	// Stdio are the started command's stdin, stdout and stderr (nil: kboost's).
	Stdio [3]*os.File
	Pid   int
	// Filter selects the system calls that stop, per AUDIT_ARCH value (a
	// nil set stops every call of that arch). With Argv and UseSeccomp, a
	// seccomp-bpf filter installed before exec makes only those calls stop
	// (SECCOMP_RET_TRACE); otherwise every call stops and the rest are
	// passed on without a report.
	Filter map[uint32]map[uint64]bool
	// When narrows a selected call to the invocations whose argument
	// register Arg has a bit of Mask set (in its low 32 bits), per AUDIT_ARCH
	// value and number: mmap and mprotect only with PROT_EXEC. The seccomp
	// filter tests it, so the other invocations never stop.
	When       map[uint32]map[uint64]ArgTest
	UseSeccomp bool
	// FramePointer fills Call.FP and Call.Regs at each monitored call's
	// entry (one more ptrace request per call: backtraces need it).
	FramePointer bool
	// OneStop lets an x86-64 call under the seccomp filter return through
	// a stub of kboost's instead of stopping at its exit too (one stop per
	// call: defer_linux.go).
	OneStop bool
	// NoSyscalls resumes tracees with PTRACE_CONT once the traced command
	// runs: no system call stops at all (a breakpoint engine needs none).
	NoSyscalls bool
	// Pin runs the tracer's thread and the started tree (Argv only) on
	// CPU: a stop and its resumption then switch tasks on one CPU, with no
	// wake-up sent to another CPU and no wait for the tracee to leave it
	// (ptrace_check_attach). The tree's affinity is that one CPU (what
	// sched_getaffinity and nproc report to it); threads still on it when
	// detached get the mask the tree started with back.
	Pin bool
	CPU int
	// Poll is the longest the tracer asks wait4 for the next stop without
	// blocking before it blocks (the window adapts within it; 0: it blocks
	// at once). A tracer asleep in wait4 is woken by the stop, and on a
	// machine whose idle CPUs halt (a virtual machine's) that wake-up
	// costs more than serving the stop; polling spends the tracer's CPU on
	// it instead.
	Poll time.Duration
}

// ArgTest selects the calls whose argument Arg (0-5) has a bit of Mask set.
type ArgTest struct {
	Arg  int
	Mask uint32
}

// Prober is what a Handler that plants breakpoints in tracees (kboost
// trace) implements besides Handler. Its methods run on the tracer thread
// with the named threads in ptrace-stop.
type Prober interface {
	// Trap is called at a SIGTRAP signal-delivery-stop; it returns true
	// when the trap was the prober's own (it is then not delivered and the
	// thread resumes from the registers the prober left).
	Trap(tid, pid int) bool
	// Attached is called once, with every thread of an attached (--pid)
	// tree stopped, before any of them runs again.
	Attached(tids []int)
	// Release is called when Detach has stopped every thread, before any is
	// released: the prober puts back everything it changed.
	Release(tids []int)
}

// Call is one system call of one thread.
type Call struct {
	Tid, Pid int
	Audit    uint32 // AUDIT_ARCH_* of the calling mode
	Nr       uint64
	Args     [6]uint64
	IP, SP   uint64
	FP       uint64 // frame pointer at entry (Config.FramePointer)
	// Regs are the general registers at entry by DWARF column of the
	// calling mode (Config.FramePointer): a CFI unwinder's first frame.
	Regs     []uint64
	Ret      int64
	IsError  bool
	NoReturn bool    // the thread left the call without an exit stop (exit, exec by another thread, killed)
	Denied   uintptr // errno the handler chose (0: allowed)
}

// EventKind names a process event.
type EventKind int

// Events a Handler sees.
const (
	EvNewThread EventKind = iota // a thread or process appeared (Parent set)
	EvExec                       // Pid executed a new image
	EvExit                       // Tid exited (Status)
	EvKilled                     // Tid was killed (Signal)
	EvSignal                     // Signal is being delivered to Tid
	EvGroupStop                  // Tid entered a group-stop (Signal)
)

// Event is one process event.
type Event struct {
	Kind      EventKind
	Tid, Pid  int
	Parent    int  // EvNewThread: the creating thread
	VFork     bool // EvNewThread: a vfork child (it shares its parent's memory until it executes or exits)
	Status    int
	Signal    int
	FormerTid int // EvExec: the thread that called execve
}

// Handler receives a trace. Its methods run on the tracer thread and may
// read tracee memory (ReadString); they must not block.
type Handler interface {
	// Enter is called at a monitored call's entry; a non-zero errno denies
	// the call (it is skipped and fails with that errno).
	Enter(c *Call) (errno uintptr)
	// Exit is called when the call returns (or, NoReturn, never will).
	Exit(c *Call)
	Event(e Event)
}

// Idler is what a Handler implements to do deferred work (writing its
// records) off the stops: Idle is called on the tracer thread after each
// stop is served, its tracee resumed, before the tracer waits for the next
// stop, so the tracees run meanwhile.
type Idler interface {
	Idle()
}

// Result summarises a finished trace.
type Result struct {
	Status    int  // exit status of the root process (128+signal if killed)
	Detached  bool // Detach released the tree before it ended
	Threads   int  // threads seen
	Processes int  // processes seen
}

func (e Event) String() string {
	return fmt.Sprintf("%d/%d kind=%d", e.Pid, e.Tid, e.Kind)
}
