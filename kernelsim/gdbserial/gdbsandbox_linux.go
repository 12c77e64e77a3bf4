//go:build linux

package gdbserial

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/internal/procattr"

	"github.com/kboost/kboost/internal/procstat"
	"golang.org/x/sys/unix"
)

// GDB is the emulator Backend: a generated runner under a qemu-user binary,
// controlled through qemu's gdb stub (see gdbrunner_arm64.go for the runner
// and gdbrsp.go for the protocol). Case records travel through a memfd that
// both kboost and the guest map; the gdb connection starts each batch and
// forwards the signals cases raise to the runner's handlers.
//
// The emulator runs in new PID, network and IPC namespaces and, as root, as
// nobody; it is killed when the GDB is closed and, through
// PR_SET_PDEATHSIG, when kboost dies. A case that would make a system call
// (SVC) is not run and reported as a SIGSYS fault.
type GDB struct {
	arch *kernelsim.Arch
	t    *emuTarget
	r    *emuRunner
	opts kernelsim.Options
	qemu string

	// Watchdog is how long a batch may run without finishing a case before
	// the runner is sent SIGUSR1 (the case is reported TimedOut); after two
	// more such periods without progress the emulator is killed and
	// restarted.
	Watchdog time.Duration

	data    []byte
	dataFD  int
	exeFD   int
	dir     string
	cmd     *exec.Cmd
	cmdDone chan struct{}
	files   []*os.File // dataFD and exeFD as files for the child (kept: a collected os.File closes its fd)
	conn    *rspConn
	nc      net.Conn
	lastSig int // signal of the stop the runner waits in (its idle BRK)
	// Restarts counts restarts after crashes; LastCrash says why.
	Restarts  int
	LastCrash string
	// Stops counts gdb stops handled (batch ends and forwarded signals).
	Stops int
	// TargetRegs is the stub's register layout (from its target description).
	TargetRegs []TargetReg
	mode       GDBMode
	deadCPU    time.Duration // CPU time of emulators that were restarted
	closed     bool
}

// GDBMode says how much of a run goes through the gdb stub.
type GDBMode uint8

const (
	// GDBDetached (the default) uses the stub to load, start and check the
	// runner, then detaches: batches are handed over with futexes on the
	// shared memory and the runner's own handlers catch faults without a
	// round trip to kboost (much faster on a loaded machine: no process
	// switch per fault).
	GDBDetached GDBMode = iota
	// GDBAttached keeps the stub attached: each batch is one continue and
	// every fault is a stop reply that kboost delivers back to the runner.
	GDBAttached
)

func (m GDBMode) String() string {
	if m == GDBAttached {
		return "attached"
	}
	return "detached"
}

var _ kernelsim.Backend = (*GDB)(nil)

// NewGDB starts the emulator backend for a (ARM64) in GDBDetached mode.
// Options.Emulator names the qemu-user binary ("" looks up the
// architecture's default in PATH); Options.Tag is appended to the guest's
// command line.
func New(a *kernelsim.Arch, o kernelsim.Options) (*GDB, error) {
	return NewMode(a, o, GDBDetached)
}

func init() {
	for a := range targets {
		kernelsim.RegisterBackend(a, func(a *kernelsim.Arch, o kernelsim.Options) (kernelsim.EmulatedBackend, error) { return New(a, o) })
	}
}

// NewGDBMode is NewGDB with a choice of mode.
func NewMode(a *kernelsim.Arch, o kernelsim.Options, mode GDBMode) (*GDB, error) {
	if targets[a] == nil {
		return nil, fmt.Errorf("kernelsim: no emulator backend for %v: %w", a, errNotSupported)
	}
	if o.Layout != (kernelsim.Layout{}) {
		if err := o.Layout.Check(a); err != nil {
			return nil, err
		}
		c := *a
		c.Layout = o.Layout
		a = &c
	}
	g := &GDB{arch: a, t: targets[a], opts: o, Watchdog: 50 * time.Millisecond, dataFD: -1, exeFD: -1, mode: mode}
	if o.Exec == kernelsim.ExecCPU {
		return nil, fmt.Errorf("kernelsim: %s code runs only under %s here, not on the CPU: %w", a.Name, g.t.qemu, errNotSupported)
	}
	g.qemu = o.Emulator
	if g.qemu == "" {
		p, err := exec.LookPath(g.t.qemu)
		if err != nil {
			return nil, fmt.Errorf("kernelsim: %s not found (install qemu-user-static): %w", g.t.qemu, errNotSupported)
		}
		g.qemu = p
	}
	var err error
	if g.r, err = g.t.gen(a.Layout); err != nil {
		return nil, err
	}
	if err := g.start(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Arch implements Backend.
func (g *GDB) Arch() *kernelsim.Arch { return g.arch }

// Emulator is the path of the qemu-user binary.
func (g *GDB) Emulator() string { return g.qemu }

// Pid is the emulator's process id (0 when not running).
func (g *GDB) Pid() int {
	if g.cmd == nil || g.cmd.Process == nil {
		return 0
	}
	return g.cmd.Process.Pid
}

// CPUTime is the CPU time used by kboost and the emulator so far.
func (g *GDB) CPUTime() time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) + g.deadCPU + emuProcCPU(g.Pid())
}

func emuProcCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	st, _ := procstat.Read(pid)
	return st.CPU
}

func (g *GDB) setupErr(f string, args ...any) error {
	return fmt.Errorf("kernelsim: %s sandbox: %s: %w", g.arch.Name, fmt.Sprintf(f, args...), kernelsim.ErrSandbox)
}

// start creates the shared memory and the executable (once) and starts the
// emulator, connects to its stub and runs the runner's set-up.
func (g *GDB) start() error {
	if g.data == nil {
		fd, err := unix.MemfdCreate("kboost-"+g.arch.Name+"-data", 0)
		if err != nil {
			return g.setupErr("memfd_create: %v", err)
		}
		g.dataFD = fd
		if err := unix.Ftruncate(fd, emDataSize); err != nil {
			return g.setupErr("ftruncate: %v", err)
		}
		if g.data, err = unix.Mmap(fd, 0, emDataSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
			return g.setupErr("mmap: %v", err)
		}
		efd, err := unix.MemfdCreate("kboost-"+g.arch.Name+"-runner", 0)
		if err != nil {
			return g.setupErr("memfd_create: %v", err)
		}
		g.exeFD = efd
		if _, err := unix.Write(efd, g.r.elf); err != nil {
			return g.setupErr("writing the runner: %v", err)
		}
		g.files = []*os.File{os.NewFile(uintptr(g.dataFD), "data"), os.NewFile(uintptr(g.exeFD), "runner")}
	}
	for i := range emRecords {
		g.data[i] = 0
	}
	emuHeaderInit(g.data, g.t, g.r.handler)
	// The stub's socket lives in a private directory only until kboost has
	// connected: then both go, so that nothing is left in /tmp even when
	// kboost is killed later.
	var err error
	if g.dir, err = os.MkdirTemp("", "kboost-gdb-"); err != nil {
		return g.setupErr("%v", err)
	}
	if os.Geteuid() == 0 {
		os.Chown(g.dir, 65534, 65534)
	}
	sock := filepath.Join(g.dir, "gdb")
	args := []string{"-g", sock, "-0", "kboost-sandbox-" + g.arch.Name, "/proc/self/fd/4"}
	if g.opts.Tag != "" {
		args = append(args, g.opts.Tag)
	}
	cmd := exec.Command(g.qemu, args...)
	cmd.Env = []string{}
	cmd.ExtraFiles = g.files
	sys := procattr.Sandboxed()
	cmd.SysProcAttr = sys
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return g.setupErr("starting %s: %v", g.qemu, err)
	}
	g.cmd = cmd
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	g.cmdDone = exited
	deadline := time.Now().Add(10 * time.Second)
	var nc net.Conn
	for {
		var err error
		if nc, err = net.Dial("unix", sock); err == nil {
			break
		}
		select {
		case <-exited:
			return g.setupErr("%s exited before its gdb stub listened: %s", g.qemu, strings.TrimSpace(stderr.String()))
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return g.setupErr("%s: no gdb stub at %s after 10s", g.qemu, sock)
		}
	}
	os.RemoveAll(g.dir)
	g.dir = ""
	g.nc = nc
	g.conn = newRSPConn(nc)
	if err := g.conn.handshake(); err != nil {
		return g.setupErr("gdb handshake: %v", err)
	}
	// reading the target description also enables qemu's 'P' packet
	if regs, err := g.conn.readTargetRegs(); err == nil {
		g.TargetRegs = regs
	}
	if _, err := g.conn.cmd("?"); err != nil {
		return g.setupErr("gdb '?': %v", err)
	}
	if err := g.conn.resume(false, 0); err != nil {
		return g.setupErr("gdb continue: %v", err)
	}
	st, err := g.conn.wait(time.Now().Add(10 * time.Second))
	if err != nil {
		return g.setupErr("runner set-up: %v", err)
	}
	le := binary.LittleEndian
	if st.Kind != StopSignal || le.Uint64(g.data[emHReady:]) != 1 {
		return g.setupErr("runner set-up failed at step %d (value %#x); stop %+v", le.Uint64(g.data[emHErrStep:]), le.Uint64(g.data[emHErrVal:]), st)
	}
	g.lastSig = st.Signal
	if g.mode == GDBDetached {
		// the runner resumes in its futex idle loop (x19 still holds the
		// data address), wakes kboost and sleeps until the first batch
		g.setHdr(emHDetached, 1)
		g.setHdr(emHN, 0)
		g.setHdr(emHState, 1)
		var pc [8]byte
		binary.LittleEndian.PutUint64(pc[:], g.r.fidle)
		pcReg, pcLen := 32, 8
		if g.t.pcReg != 0 {
			pcReg, pcLen = g.t.pcReg, g.t.regBytes
		}
		if err := g.conn.writeReg(pcReg, pc[:pcLen]); err != nil {
			return g.setupErr("gdb: setting the PC: %v", err)
		}
		if _, err := g.conn.cmd("D"); err != nil {
			return g.setupErr("gdb detach: %v", err)
		}
		// qemu-user's stub still reports signals while the connection is
		// open; once it reads EOF it delivers them to the guest itself
		g.nc.Close()
		g.nc, g.conn = nil, nil
		deadline := time.Now().Add(10 * time.Second)
		for atomic.LoadUint32(g.word(emHState)) != 0 {
			emuFutexWait(g.word(emHState), 1, 50*time.Millisecond)
			select {
			case <-g.cmdDone:
				return g.setupErr("%s exited after the debugger detached: %s", g.qemu, strings.TrimSpace(stderr.String()))
			default:
			}
			if time.Now().After(deadline) {
				return g.setupErr("the runner did not reach its futex after the debugger detached (state %d, batches %d, ready %d, err %d): %s", g.hdr(emHState), g.hdr(emHBatches), g.hdr(emHReady), g.hdr(emHErrStep), stderr.String())
			}
		}
	}
	return nil
}

// word is the 32-bit word at off in the shared memory.
func (g *GDB) word(off int) *uint32 { return (*uint32)(unsafe.Pointer(&g.data[off])) }

// emuFutexWait sleeps while *w == val, at most d (shared futex: the guest
// waits and wakes on the same memfd page).
func emuFutexWait(w *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), 0 /* FUTEX_WAIT */, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

func emuFutexWake(w *uint32) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(w)), 1 /* FUTEX_WAKE */, 1, 0, 0, 0)
}

// kill stops the emulator and forgets the connection.
func (g *GDB) kill() {
	if g.nc != nil {
		g.nc.Close()
		g.nc, g.conn = nil, nil
	}
	if g.cmd != nil && g.cmd.Process != nil {
		g.deadCPU += emuProcCPU(g.cmd.Process.Pid)
		syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		g.cmd.Process.Kill()
		if g.cmdDone != nil {
			<-g.cmdDone
		}
	}
	g.cmd = nil
	if g.dir != "" { // a start that failed before connecting
		os.RemoveAll(g.dir)
		g.dir = ""
	}
}

// Close implements Backend.
func (g *GDB) Close() error {
	if g.closed {
		return nil
	}
	g.closed = true
	g.kill()
	if g.data != nil {
		unix.Munmap(g.data)
		g.data = nil
	}
	for _, f := range g.files {
		f.Close()
	}
	if len(g.files) == 0 {
		for _, fd := range []int{g.dataFD, g.exeFD} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
	}
	return nil
}

// checkCase reports why c does not fit the emulator's layout.
func (g *GDB) checkCase(c *kernelsim.Case) error {
	stub, al := 4, 4
	if g.t.stubMax != 0 {
		stub = g.t.stubMax
	}
	if g.t.align != 0 {
		al = g.t.align
	}
	l := g.arch.Layout
	switch {
	case len(c.Code)%al != 0 || len(c.Slot)%al != 0:
		return fmt.Errorf("%w: %s code and slot must be whole %d-byte units", kernelsim.ErrBadCase, g.arch.Name, al)
	case len(c.Code)+stub > kernelsim.ImageSize:
		return fmt.Errorf("%w: code is %d bytes, at most %d fit before the return stub", kernelsim.ErrBadCase, len(c.Code), kernelsim.ImageSize-stub)
	case c.CodeOffset < 0 || c.CodeOffset%4 != 0 || c.CodeOffset+kernelsim.ImageSize > kernelsim.PageSize:
		return fmt.Errorf("%w: code offset %d not a multiple of 4 in 0..%d", kernelsim.ErrBadCase, c.CodeOffset, kernelsim.PageSize-kernelsim.ImageSize)
	case len(c.Slot) > kernelsim.ImageSize:
		return fmt.Errorf("%w: slot is %d bytes, at most %d", kernelsim.ErrBadCase, len(c.Slot), kernelsim.ImageSize)
	case c.SlotOffset < 0 || c.SlotOffset%4 != 0 || c.SlotOffset+kernelsim.ImageSize > kernelsim.PageSize:
		return fmt.Errorf("%w: slot offset %d not a multiple of 4 in 0..%d", kernelsim.ErrBadCase, c.SlotOffset, kernelsim.PageSize-kernelsim.ImageSize)
	case c.EntrySlot && c.Slot == nil:
		return fmt.Errorf("%w: EntrySlot without a slot", kernelsim.ErrBadCase)
	case len(c.Scratch) > kernelsim.ScratchSize || len(c.Stack) > kernelsim.StackSize:
		return fmt.Errorf("%w: scratch or stack contents larger than %d bytes", kernelsim.ErrBadCase, kernelsim.PageSize)
	}
	spReg := kernelsim.A64RegSP
	if g.t.spReg != 0 {
		spReg = g.t.spReg
	}
	sp := c.Regs.GPR[spReg] & g.arch.RegMask
	if sp < l.Stack+16 || sp > l.Stack+kernelsim.StackSize {
		return fmt.Errorf("%w: stack pointer %#x outside the stack page %#x..%#x (use Layout.InitialSP)", kernelsim.ErrBadCase, sp, l.Stack+16, l.Stack+kernelsim.StackSize)
	}
	return nil
}

// gdbSIGUSR1 is SIGUSR1 in gdb's signal numbering.
const gdbSIGUSR1 = 30

// Run implements Backend.
func (g *GDB) Run(cases []kernelsim.Case, results []kernelsim.Result) error {
	if g.closed {
		return kernelsim.ErrClosed
	}
	if len(results) < len(cases) {
		return fmt.Errorf("%w: %d results for %d cases", kernelsim.ErrBadCase, len(results), len(cases))
	}
	for i := range cases {
		if err := g.checkCase(&cases[i]); err != nil {
			return fmt.Errorf("case %d: %w", i, err)
		}
	}
	for lo := 0; lo < len(cases); lo += emMaxBatch {
		hi := min(lo+emMaxBatch, len(cases))
		if err := g.batch(cases[lo:hi], results[lo:hi]); err != nil {
			return err
		}
	}
	return nil
}

func (g *GDB) rec(i int) []byte {
	o := emRecords + i*emRecStride
	return g.data[o : o+emRecStride]
}

func (g *GDB) hdr(off int) uint64 { return binary.LittleEndian.Uint64(g.data[off:]) }

func (g *GDB) setHdr(off int, v uint64) { binary.LittleEndian.PutUint64(g.data[off:], v) }

// fill writes case c into record i; false when the case is not run (its
// result is written instead).
func (g *GDB) fill(i int, c *kernelsim.Case, r *kernelsim.Result) (bool, error) {
	le := binary.LittleEndian
	l := g.arch.Layout
	d := g.rec(i)
	for _, img := range [][]byte{c.Code, c.Slot} {
		if j := g.sysCallAt(img); j >= 0 {
			*r = kernelsim.Result{Outcome: kernelsim.Faulted, Regs: c.Regs, Fault: kernelsim.Fault{Signal: kernelsim.SIGSYS, Addr: c.CodeAddr(l) + uint64(j), Trap: -1}}
			r.Regs.PC = c.Entry(l)
			le.PutUint64(d[emRSkip:], 1)
			return false, nil
		}
	}
	le.PutUint64(d[emRSkip:], 0)
	for k := 0; k < 32; k++ {
		le.PutUint64(d[emRRegs+8*k:], c.Regs.GPR[k])
	}
	le.PutUint64(d[emRNZCV:], c.Regs.Flags&g.arch.FlagsMask)
	le.PutUint64(d[emRLaunch:], g.t.launch(g.r, l, c.Entry(l)))
	le.PutUint64(d[emRCodeAt:], c.CodeAddr(l))
	img := d[emRCode : emRCode+kernelsim.ImageSize]
	clear(img)
	stub, err := g.t.stub(g.r, c.ReturnAddr(l))
	if err != nil {
		return false, err
	}
	if g.t.codeFill != 0 {
		for j := (len(c.Code) + len(stub) + 3) &^ 3; j+4 <= kernelsim.ImageSize; j += 4 {
			le.PutUint32(img[j:], g.t.codeFill)
		}
	}
	copy(img, c.Code)
	copy(img[len(c.Code):], stub)
	simg := d[emRSlot : emRSlot+kernelsim.ImageSize]
	for j := 0; j < kernelsim.ImageSize; j += 4 {
		le.PutUint32(simg[j:], g.t.slotFill)
	}
	if c.Slot != nil {
		le.PutUint64(d[emRSlotAt:], c.SlotAddr(l))
		copy(simg, c.Slot)
	} else {
		le.PutUint64(d[emRSlotAt:], 0)
	}
	if c.NoMemory {
		le.PutUint64(d[emRNoMem:], 1)
	} else {
		le.PutUint64(d[emRNoMem:], 0)
		copy(d[emRScrIn:emRScrIn+kernelsim.ScratchSize], c.Scratch)
		clear(d[emRScrIn+len(c.Scratch) : emRScrIn+kernelsim.ScratchSize])
		copy(d[emRStkIn:emRStkIn+kernelsim.StackSize], c.Stack)
		clear(d[emRStkIn+len(c.Stack) : emRStkIn+kernelsim.StackSize])
	}
	le.PutUint64(d[emROutcome:], 0xff)
	return true, nil
}

// sysCallAt is the offset of the first system call in img, or -1.
func (g *GDB) sysCallAt(img []byte) int {
	if g.t.sysCallAt != nil {
		return g.t.sysCallAt(img)
	}
	for j := 0; j+4 <= len(img); j += 4 {
		if g.t.systemCall(binary.LittleEndian.Uint32(img[j:])) {
			return j
		}
	}
	return -1
}

// batch runs up to emMaxBatch cases.
func (g *GDB) batch(cases []kernelsim.Case, results []kernelsim.Result) error {
	ran := make([]bool, len(cases))
	for i := range cases {
		ok, err := g.fill(i, &cases[i], &results[i])
		if err != nil {
			return err
		}
		ran[i] = ok
	}
	g.setHdr(emHN, uint64(len(cases)))
	for attempt := 0; ; attempt++ {
		crashed, err := g.runBatch()
		if err != nil {
			return err
		}
		if crashed < 0 {
			break
		}
		// a case may have overwritten the header (a 32-bit guest reaches it
		// through register arithmetic): keep the index in the batch
		crashed = min(crashed, len(cases)-1)
		// the case at crashed killed or hung the emulator: report it, skip
		// it and everything before it, and run the rest on a new one
		results[crashed] = kernelsim.Result{Outcome: kernelsim.Crashed, Regs: cases[crashed].Regs}
		ran[crashed] = false
		for j := 0; j <= crashed; j++ {
			binary.LittleEndian.PutUint64(g.rec(j)[emRSkip:], 1)
		}
		g.Restarts++
		g.kill()
		if err := g.start(); err != nil {
			return err
		}
		g.setHdr(emHN, uint64(len(cases)))
		if attempt > len(cases) {
			return g.setupErr("emulator keeps crashing: %s", g.LastCrash)
		}
	}
	le := binary.LittleEndian
	l := g.arch.Layout
	for i := range cases {
		if !ran[i] {
			continue
		}
		d := g.rec(i)
		c, r := &cases[i], &results[i]
		r.Fault = kernelsim.Fault{}
		for k := 0; k < 32; k++ {
			r.Regs.GPR[k] = le.Uint64(d[emROut+8*k:])
		}
		r.Regs.PC = le.Uint64(d[emROut+256:])
		r.Regs.Flags = le.Uint64(d[emROut+264:]) & g.arch.FlagsMask
		switch le.Uint64(d[emROutcome:]) {
		case emOutcomeOK:
			r.Outcome = kernelsim.Completed
			r.Regs.PC = c.ReturnAddr(l)
		case emOutcomeFa:
			r.Outcome = kernelsim.Faulted
			r.Fault = kernelsim.Fault{Signal: int(le.Uint32(d[emROutSig:])), Code: int32(le.Uint32(d[emROutSig+4:])), Addr: le.Uint64(d[emROutAddr:]), Trap: -1}
		case emOutcomeTO:
			r.Outcome = kernelsim.TimedOut
		default:
			r.Outcome = kernelsim.Crashed
		}
		if r.Outcome == kernelsim.Completed || r.Outcome == kernelsim.Faulted {
			if len(r.Vec) != emVecSize {
				r.Vec = make([]byte, emVecSize)
			}
			copy(r.Vec, d[emRVec:emRVec+emVecSize])
		} else {
			r.Vec = nil
		}
		if c.NoMemory {
			r.Scratch, r.Stack = nil, nil
			continue
		}
		if len(r.Scratch) != kernelsim.ScratchSize {
			r.Scratch = make([]byte, kernelsim.ScratchSize)
		}
		if len(r.Stack) != kernelsim.StackSize {
			r.Stack = make([]byte, kernelsim.StackSize)
		}
		copy(r.Scratch, d[emRScrOut:emRScrOut+kernelsim.ScratchSize])
		copy(r.Stack, d[emRStkOut:emRStkOut+kernelsim.StackSize])
	}
	return nil
}

// runBatch starts the batch in the shared memory and handles stops until
// the runner is back on its idle BRK. It returns the index of a case that
// crashed or hung the emulator (-1 when the batch completed).
func (g *GDB) runBatch() (int, error) {
	if g.mode == GDBDetached {
		return g.runBatchDetached()
	}
	if g.conn == nil {
		return 0, kernelsim.ErrClosed
	}
	if err := g.conn.resume(false, g.lastSig); err != nil {
		return g.crash("resume: %v", err), nil
	}
	last, since, signalled := g.hdr(emHCur), time.Now(), time.Time{}
	for {
		st, err := g.conn.wait(time.Now().Add(g.Watchdog))
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return g.crash("gdb connection: %v", err), nil
			}
			if cur := g.hdr(emHCur); cur != last {
				last, since, signalled = cur, time.Now(), time.Time{}
				continue
			}
			if signalled.IsZero() && g.hdr(emHInCase) == 1 {
				g.setHdr(emHTimeout, 1)
				syscall.Kill(g.Pid(), syscall.SIGUSR1)
				signalled = time.Now()
				continue
			}
			if g.hung(since, signalled) {
				return g.crash("no progress for %v at case %d", time.Since(since).Round(time.Millisecond), last), nil
			}
			continue
		}
		g.Stops++
		switch st.Kind {
		case StopExited, StopKilled:
			return g.crash("emulator ended (%c%02x)", "WX"[st.Kind-1], st.Signal), nil
		}
		if g.hdr(emHState) == 0 && g.hdr(emHInCase) == 0 {
			g.lastSig = st.Signal
			g.setHdr(emHTimeout, 0)
			return -1, nil
		}
		sig := st.Signal
		switch {
		case sig == gdbSIGUSR1 && g.hdr(emHTimeout) == 1 && g.hdr(emHInCase) != 1:
			// the watchdog fired just after the case ended: drop it
			g.setHdr(emHTimeout, 0)
			sig = 0
		case sig == 2: // SIGINT from a stray interrupt: deliver nothing
			sig = 0
		case g.hdr(emHInCase) != 1:
			return g.crash("the runner itself stopped with gdb signal %d", st.Signal), nil
		}
		if err := g.conn.resume(false, sig); err != nil {
			return g.crash("resume: %v", err), nil
		}
	}
}

// crash records why the emulator is being restarted and returns the case
// it was running.
func (g *GDB) crash(f string, args ...any) int {
	g.LastCrash = fmt.Sprintf(f, args...)
	return int(min(g.hdr(emHCur), g.hdr(emHN)-1))
}

// runBatchDetached is runBatch without the debugger: the go word starts
// the batch, the runner clears the state word and wakes kboost at its end.
func (g *GDB) runBatchDetached() (int, error) {
	if g.cmd == nil {
		return 0, kernelsim.ErrClosed
	}
	g.setHdr(emHTimeout, 0)
	atomic.StoreUint32(g.word(emHState), 1)
	atomic.StoreUint32(g.word(emHGo), 1)
	emuFutexWake(g.word(emHGo))
	last, since, signalled := g.hdr(emHCur), time.Now(), time.Time{}
	for {
		if atomic.LoadUint32(g.word(emHState)) == 0 {
			return -1, nil
		}
		emuFutexWait(g.word(emHState), 1, g.Watchdog/4)
		if atomic.LoadUint32(g.word(emHState)) == 0 {
			return -1, nil
		}
		select {
		case <-g.cmdDone:
			return g.crash("the emulator exited"), nil
		default:
		}
		if cur := g.hdr(emHCur); cur != last {
			last, since, signalled = cur, time.Now(), time.Time{}
			continue
		}
		switch {
		case time.Since(since) < g.Watchdog:
		case signalled.IsZero() && g.hdr(emHInCase) == 1:
			g.setHdr(emHTimeout, 1)
			syscall.Kill(g.Pid(), syscall.SIGUSR1)
			signalled = time.Now()
		case g.hung(since, signalled):
			return g.crash("no progress for %v at case %d", time.Since(since).Round(time.Millisecond), last), nil
		}
	}
}

// emuSignalGrace is how long the emulator may take to act on the
// watchdog's SIGUSR1 before it is deemed hung: qemu-user delivers a guest
// signal between translation blocks, and on a loaded host (tens of runnable
// threads per core) that took longer than three watchdog periods.
const emuSignalGrace = time.Second

// hung: no case has ended for 4 watchdog periods since the last progress
// and, when the watchdog has signalled, for emuSignalGrace since then.
func (g *GDB) hung(since, signalled time.Time) bool {
	if time.Since(since) < 4*g.Watchdog {
		return false
	}
	return signalled.IsZero() || time.Since(signalled) >= emuSignalGrace
}
