//go:build linux && amd64

package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/internal/procattr"
	"golang.org/x/sys/unix"
)

// Sandbox is the hardware Backend: a ptrace-started process running the
// generated runner (see x86_runner.go) in the given mode. The process is killed
// when the Sandbox is closed and, through PR_SET_PDEATHSIG, when the thread
// that started it (the sandbox's owner thread) or the whole tracer dies.
type Sandbox struct {
	arch  *kernelsim.Arch
	t     *target
	rc    *runnerCode
	image []byte
	stub  []byte

	// Watchdog is how long a batch may run without finishing a case before
	// the runner is sent SIGUSR1 (the case is reported TimedOut); after three
	// such periods without progress the sandbox is killed and restarted.
	Watchdog time.Duration
	// CaseTimeout is how much user CPU time one case may take before the
	// runner's own case timer stops it (reported TimedOut), about: the
	// kernel checks the timer at its scheduler tick. Zero means 10 ms on
	// the CPU and 60 ms under an emulator. A change applies from the next
	// batch on.
	CaseTimeout time.Duration

	opts  kernelsim.Options
	emu   string      // path of the user-mode emulator in use, "" on the CPU
	owner chan func() // work for the locked owner thread
	exeFD int         // memfd holding the ELF
	data  []byte      // the shared memfd, mapped in the tracer
	pid   int
	seq   uint32
	// per batch: the distinct memory images and each case's image
	imgKeys []memKey
	imgOf   []int
	// deadCPU is the CPU time of sandbox processes already reaped
	deadCPU time.Duration
	// Restarts counts how often the sandbox was restarted after a crash, and
	// LastCrash says why it last was.
	Restarts  int
	LastCrash string
	closed    bool
}

var _ kernelsim.Backend = (*Sandbox)(nil)

// New starts a sandbox for a (X86_64 or I386) with default options.
func New(a *kernelsim.Arch) (*Sandbox, error) { return NewWithOptions(a, kernelsim.Options{}) }

// NewWithOptions starts a sandbox for a.
func NewWithOptions(a *kernelsim.Arch, o kernelsim.Options) (*Sandbox, error) {
	t := targetOf(a)
	if t == nil {
		return nil, fmt.Errorf("kernelsim: no hardware sandbox for %v: %w", a, errNotSupported)
	}
	if o.Layout != (kernelsim.Layout{}) {
		if err := o.Layout.Check(a); err != nil {
			return nil, err
		}
		c := *a
		c.Layout = o.Layout
		a = &c
	}
	s := &Sandbox{arch: a, t: t, Watchdog: 200 * time.Millisecond, CaseTimeout: o.CaseTimeout, exeFD: -1, opts: o}
	emu, err := chooseEmulator(a, o)
	if err != nil {
		return nil, err
	}
	s.emu = emu
	s.rc, s.image = s.t.runnerImage(a.Layout, s.emu != "")
	s.stub = s.t.returnStub(s.rc.done)
	s.owner = make(chan func())
	go s.ownerLoop()
	s.do(func() { err = s.spawn() })
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// ownerLoop runs on one locked OS thread for the sandbox's whole life: the
// sandbox's parent-death signal is tied to this thread, and ptrace requests
// must come from the thread that is the tracer.
func (s *Sandbox) ownerLoop() {
	runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
	for f := range s.owner {
		f()
	}
}

func (s *Sandbox) do(f func()) {
	done := make(chan struct{})
	s.owner <- func() { f(); close(done) }
	<-done
}

// Arch implements Backend.
func (s *Sandbox) Arch() *kernelsim.Arch { return s.arch }

// Pid is the sandbox process id (0 when not running).
func (s *Sandbox) Pid() int { return s.pid }

// Emulator is the path of the user-mode emulator running the cases, or ""
// when they run on the CPU.
func (s *Sandbox) Emulator() string { return s.emu }

func (s *Sandbox) hdr32(off int) *uint32 {
	return (*uint32)(unsafe.Pointer(&s.data[offHdr+off]))
}

func (s *Sandbox) setupErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s sandbox: %w", kernelsim.ErrSandbox, s.arch.Name, fmt.Errorf(format, args...))
}

var setupSteps = map[int]string{
	1: "mmap of the shared area", 2: "prctl(PR_SET_PDEATHSIG)", 3: "parent check (tracer already gone)",
	4: "mmap of the code page", 5: "mmap of the slot page", 6: "mmap of the scratch page",
	7: "mmap of the stack page", 8: "sigaltstack", 20: "prctl(PR_SET_NO_NEW_PRIVS)", 21: "seccomp filter",
	setupTimer: "setitimer(ITIMER_VIRTUAL)", setupUnmap: "munmap of the vDSO and the stack's lower part",
}

func init() {
	for i, sig := range caughtSignals {
		setupSteps[9+i] = fmt.Sprintf("rt_sigaction(%s)", kernelsim.SignalName(sig))
	}
}

// chooseEmulator says which qemu-user binary runs a's cases under o, or ""
// for the CPU.
func chooseEmulator(a *kernelsim.Arch, o kernelsim.Options) (string, error) {
	lookup := func() (string, error) {
		if o.Emulator != "" {
			return o.Emulator, nil
		}
		q, err := exec.LookPath(targetOf(a).qemu)
		if err != nil {
			return "", fmt.Errorf("kernelsim: %s under an emulator needs %s (install qemu-user-static): %w", a.Name, targetOf(a).qemu, errNotSupported)
		}
		return q, nil
	}
	switch o.Exec {
	case kernelsim.ExecQEMU:
		return lookup()
	case kernelsim.ExecCPU:
		if o.Emulator != "" {
			return "", fmt.Errorf("kernelsim: an emulator (%s) was given with execution on the CPU: %w", o.Emulator, kernelsim.ErrBadCase)
		}
		if err := NativeExec(a); err != nil {
			return "", fmt.Errorf("%w; run it under %s instead (--exec qemu)", err, targetOf(a).qemu)
		}
		return "", nil
	}
	if o.Emulator != "" {
		return o.Emulator, nil
	}
	if err := NativeExec(a); err != nil {
		if q, lerr := lookup(); lerr == nil {
			return q, nil
		}
		return "", fmt.Errorf("%w (and no %s to emulate it: install qemu-user-static)", err, targetOf(a).qemu)
	}
	return "", nil
}

var nativeProbe = map[*target]*struct {
	once sync.Once
	err  error
}{target64: {}, target32: {}}

// NativeExec reports whether this kernel runs a's executables on the CPU: nil
// if so, else an error wrapping errNotSupported that says why. The answer
// comes from running a minimal static executable of a's mode once per
// process (hosts differ: some kernels, or hypervisors without compat mode,
// refuse 32-bit executables with ENOEXEC).
func NativeExec(a *kernelsim.Arch) error {
	if targetOf(a) == nil {
		return fmt.Errorf("kernelsim: no hardware sandbox for %v: %w", a, errNotSupported)
	}
	p := nativeProbe[targetOf(a)]
	p.once.Do(func() { p.err = probeNative(a) })
	return p.err
}

// probeNative runs "exit(0)" as a static executable of a's mode.
func probeNative(a *kernelsim.Arch) error {
	t := targetOf(a)
	code := []byte{0xB8, 60, 0, 0, 0, 0x31, 0xFF, 0x0F, 0x05} // mov $60,%eax; xor %edi,%edi; syscall
	if !t.is64 {
		code = []byte{0xB8, 1, 0, 0, 0, 0x31, 0xDB, 0xCD, 0x80} // mov $1,%eax; xor %ebx,%ebx; int $0x80
	}
	fd, err := unix.MemfdCreate("kboost-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("kernelsim: probing %s execution: memfd_create: %v", a.Name, err)
	}
	defer unix.Close(fd)
	if _, err := unix.Pwrite(fd, t.buildELF(t.codeBase, code), 0); err != nil {
		return fmt.Errorf("kernelsim: probing %s execution: %v", a.Name, err)
	}
	pid, err := syscall.ForkExec(fmt.Sprintf("/proc/self/fd/%d", fd), []string{"kboost-probe-" + a.Name},
		&syscall.ProcAttr{Env: []string{}, Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	if errors.Is(err, unix.ENOEXEC) {
		return fmt.Errorf("kernelsim: this kernel refuses %s executables (ENOEXEC: no IA32 emulation, or a hypervisor without compat mode): %w", a.Name, errNotSupported)
	}
	if err != nil {
		return fmt.Errorf("kernelsim: probing %s execution: %v", a.Name, err)
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
		return fmt.Errorf("kernelsim: probing %s execution: wait4: %v", a.Name, err)
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("kernelsim: a minimal %s executable did not exit cleanly (%s): %w", a.Name, describeStatus(ws), errNotSupported)
	}
	return nil
}

func describeStatus(ws unix.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	case ws.Signaled():
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("wait status %#x", uint32(ws))
}

// runnerFDs is how many fds the runner starts with (stdin, stdout, stderr,
// the shared memory).
const runnerFDs = 4

// spawn creates the shared memory, starts the runner under ptrace, lets
// it set itself up, checks where it stopped and detaches. Runs on the owner
// thread.
func (s *Sandbox) spawn() error {
	if s.exeFD < 0 {
		fd, err := unix.MemfdCreate("kboost-runner", unix.MFD_CLOEXEC)
		if err != nil {
			return s.setupErr("memfd_create: %v", err)
		}
		// The child execs /proc/self/fd/<exeFD> after its fds 0-3 are set
		// (ProcAttr.Files): a lower exeFD would name the shared memory
		// instead, and exec fails with ENOEXEC. That happens in a process
		// started with few fds open (a VM's /init, seen on Debian 6.12).
		if fd < runnerFDs {
			hi, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, runnerFDs)
			unix.Close(fd)
			if err != nil {
				return s.setupErr("fcntl(F_DUPFD_CLOEXEC): %v", err)
			}
			fd = hi
		}
		s.exeFD = fd
		if _, err := unix.Pwrite(fd, s.image, 0); err != nil {
			return s.setupErr("writing the runner executable: %v", err)
		}
	}
	mfd, err := unix.MemfdCreate("kboost-sandbox", unix.MFD_CLOEXEC)
	if err != nil {
		return s.setupErr("memfd_create: %v", err)
	}
	defer unix.Close(mfd)
	if err := unix.Ftruncate(mfd, dataLen); err != nil {
		return s.setupErr("ftruncate: %v", err)
	}
	data, err := unix.Mmap(mfd, 0, dataLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return s.setupErr("mmap: %v", err)
	}
	if s.data != nil {
		unix.Munmap(s.data)
	}
	s.data = data
	s.seq = 0
	if s.emu != "" {
		return s.spawnEmu(mfd)
	}
	s.t.initHeader(data, s.rc, os.Getpid(), s.caseTimeout())

	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return s.setupErr("open /dev/null: %v", err)
	}
	defer unix.Close(null)
	nf := uintptr(null)
	pid, err := syscall.ForkExec(fmt.Sprintf("/proc/self/fd/%d", s.exeFD), s.argv(),
		&syscall.ProcAttr{
			Env:   []string{},
			Files: []uintptr{nf, nf, nf, uintptr(mfd)},
			Sys: &syscall.SysProcAttr{
				Ptrace:    true,            // PTRACE_TRACEME: stops at exec
				Pdeathsig: syscall.SIGKILL, // set before exec, re-checked against getppid by Go and by the runner
				Setpgid:   true,            // own process group, killed as a whole
			},
		})
	if err != nil {
		return s.setupErr("starting the runner: %w", err)
	}
	s.pid = pid
	fail := func(e error) error {
		s.kill()
		return e
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		return fail(s.setupErr("wait4: %v", err))
	}
	if !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		return fail(s.setupErr("runner did not stop at exec (status %#x)", ws))
	}
	// While attached, the tracee dies with the tracer even before PDEATHSIG.
	unix.PtraceSetOptions(pid, unix.PTRACE_O_EXITKILL)
	if err := unix.PtraceCont(pid, 0); err != nil {
		return fail(s.setupErr("PTRACE_CONT: %v", err))
	}
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
		return fail(s.setupErr("wait4: %v", err))
	}
	switch {
	case ws.Exited():
		step := ws.ExitStatus()
		val := int64(binary.LittleEndian.Uint64(s.data[offHdr+hErrVal:]))
		s.pid = 0
		return s.setupErr("set-up step %d (%s) failed: %v", step, setupSteps[step], syscall.Errno(-val))
	case ws.Signaled():
		s.pid = 0
		return s.setupErr("runner killed by %v during set-up", ws.Signal())
	case !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP:
		return fail(s.setupErr("unexpected stop %#x during set-up", ws))
	}
	pc, err := tracedPC(pid)
	if err != nil {
		return fail(s.setupErr("%v", err))
	}
	if pc != s.rc.int3At || atomic.LoadUint32(s.hdr32(hState)) != 1 {
		return fail(s.setupErr("runner stopped at %#x (state %d), want the set-up breakpoint at %#x",
			pc, atomic.LoadUint32(s.hdr32(hState)), s.rc.int3At))
	}
	// Batches run without ptrace: every signal would otherwise stop the tracee.
	if err := unix.PtraceDetach(pid); err != nil {
		return fail(s.setupErr("PTRACE_DETACH: %v", err))
	}
	return nil
}

// spawnEmu starts the runner under a qemu-user emulator. The emulator passes
// system calls of the emulated code to the host, and seccomp cannot filter
// them without filtering the emulator itself, so the emulator runs isolated:
// in new PID, network and IPC namespaces and, when we are root, as nobody.
func (s *Sandbox) spawnEmu(mfd int) error {
	s.t.initHeader(s.data, s.rc, 0, s.caseTimeout()) // getppid is 0 in a new PID namespace
	null, err := unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return s.setupErr("open /dev/null: %v", err)
	}
	defer unix.Close(null)
	nf := uintptr(null)
	sys := procattr.Sandboxed()
	pid, err := syscall.ForkExec(s.emu, append([]string{s.emu, "-0", "kboost-sandbox-" + s.arch.Name, "/proc/self/fd/4"}, s.argv()[1:]...),
		&syscall.ProcAttr{Env: []string{}, Files: []uintptr{nf, nf, nf, uintptr(mfd), uintptr(s.exeFD)}, Sys: sys})
	if err != nil {
		return s.setupErr("starting %s: %w", s.emu, err)
	}
	s.pid = pid
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadUint32(s.hdr32(hState)) != 1 {
		futex(s.hdr32(hState), futexWait, 0, 50*time.Millisecond)
		var ws unix.WaitStatus
		if p, _ := unix.Wait4(pid, &ws, unix.WNOHANG|unix.WALL, nil); p == pid {
			s.pid = 0
			step := binary.LittleEndian.Uint64(s.data[offHdr+hErrStep:])
			val := int64(binary.LittleEndian.Uint64(s.data[offHdr+hErrVal:]))
			return s.setupErr("%s: runner set-up failed (%s; step %d %s: %v)", s.emu, describeWait(ws, s), step, setupSteps[int(step)], syscall.Errno(-val))
		}
		if time.Now().After(deadline) {
			s.kill()
			return s.setupErr("%s: runner not ready after 10s", s.emu)
		}
	}
	return nil
}

// inspect attaches to a runner that stopped making progress and says where
// it is (for the crash report). Runs on the owner thread; the caller kills
// the process afterwards (PTRACE_O_EXITKILL does so too if we die first).
func (s *Sandbox) inspect() string {
	if err := unix.PtraceSeize(s.pid); err != nil {
		return ""
	}
	unix.PtraceInterrupt(s.pid)
	var ws unix.WaitStatus
	if _, err := unix.Wait4(s.pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		return ""
	}
	pc, err := tracedPC(s.pid)
	if err != nil {
		return ""
	}
	return fmt.Sprintf(" at pc %#x (case %d)", pc, atomic.LoadUint32(s.hdr32(hIdx)))
}

// argv is the runner's command line: its name and the tag.
func (s *Sandbox) argv() []string {
	a := []string{"kboost-sandbox-" + s.arch.Name}
	if s.opts.Tag != "" {
		a = append(a, s.opts.Tag)
	}
	return a
}

// kill kills the sandbox's process group and reaps it.
func (s *Sandbox) kill() {
	if s.pid <= 0 {
		return
	}
	unix.Kill(-s.pid, unix.SIGKILL)
	unix.Kill(s.pid, unix.SIGKILL)
	var ws unix.WaitStatus
	var ru unix.Rusage
	for {
		_, err := unix.Wait4(s.pid, &ws, unix.WALL, &ru)
		if err != unix.EINTR {
			break
		}
	}
	s.reaped(&ru)
	s.pid = 0
}

// caseTimeout is CaseTimeout or its default.
func (s *Sandbox) caseTimeout() time.Duration {
	switch {
	case s.CaseTimeout > 0:
		return s.CaseTimeout
	case s.emu != "":
		return 60 * time.Millisecond
	}
	return 10 * time.Millisecond
}

// reaped adds the CPU time of a reaped sandbox process to deadCPU.
func (s *Sandbox) reaped(ru *unix.Rusage) {
	s.deadCPU += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Close implements Backend.
func (s *Sandbox) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.do(func() {
		s.kill()
		if s.exeFD >= 0 {
			unix.Close(s.exeFD)
			s.exeFD = -1
		}
	})
	close(s.owner)
	if s.data != nil {
		unix.Munmap(s.data)
		s.data = nil
	}
	return nil
}

func futex(addr *uint32, op int, val uint32, d time.Duration) {
	var ts *unix.Timespec
	if d > 0 {
		t := unix.NsecToTimespec(int64(d))
		ts = &t
	}
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), uintptr(op), uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

const (
	futexWait = 0
	futexWake = 1
)

// Run implements Backend.
func (s *Sandbox) Run(cases []kernelsim.Case, results []kernelsim.Result) error {
	if s.closed {
		return kernelsim.ErrClosed
	}
	if len(results) < len(cases) {
		return fmt.Errorf("kernelsim: %d results for %d cases", len(results), len(cases))
	}
	for i := range cases {
		if err := cases[i].Check(s.arch); err != nil {
			return fmt.Errorf("case %d: %w", i, err)
		}
	}
	for len(cases) > 0 {
		n := min(len(cases), maxBatch)
		done, err := s.runBatch(cases[:n], results[:n], 0)
		if err != nil {
			return err
		}
		cases, results = cases[done:], results[done:]
	}
	return nil
}

// memKey identifies a case's memory image by the slices that hold it: the
// cases of a batch usually share a few trial states.
type memKey struct {
	scratch, stack *byte
	ns, nk         int
}

func memKeyOf(c *kernelsim.Case) memKey {
	k := memKey{ns: len(c.Scratch), nk: len(c.Stack)}
	if k.ns > 0 {
		k.scratch = &c.Scratch[0]
	}
	if k.nk > 0 {
		k.stack = &c.Stack[0]
	}
	return k
}

// writeImages writes the batch's distinct memory images to the image area
// and notes each case's image in s.imgOf.
func (s *Sandbox) writeImages(cases []kernelsim.Case) {
	s.imgKeys = s.imgKeys[:0]
	s.imgOf = s.imgOf[:0]
	last := -1
	for i := range cases {
		c := &cases[i]
		if c.NoMemory {
			s.imgOf = append(s.imgOf, -1)
			continue
		}
		k := memKeyOf(c)
		j := -1
		if last >= 0 && s.imgKeys[last] == k {
			j = last
		} else {
			for n, o := range s.imgKeys {
				if o == k {
					j = n
					break
				}
			}
		}
		if j < 0 {
			j = len(s.imgKeys)
			s.imgKeys = append(s.imgKeys, k)
			img := s.data[offImgs+j*imgStride : offImgs+(j+1)*imgStride]
			fill(img[copy(img[:kernelsim.ScratchSize], c.Scratch):kernelsim.ScratchSize], 0)
			fill(img[kernelsim.ScratchSize+copy(img[kernelsim.ScratchSize:], c.Stack):], 0)
		}
		last = j
		s.imgOf = append(s.imgOf, j)
	}
	// image addresses are reused from batch to batch: the live pages hold
	// none of them now
	binary.LittleEndian.PutUint64(s.data[offHdr+hLiveImg:], 0)
}

// writeCase fills record i.
func (s *Sandbox) writeCase(i int, c *kernelsim.Case, flags uint32) {
	le := binary.LittleEndian
	r := s.data[offRecs+i*recStride:]
	l := s.arch.Layout
	for k := range 16 { // the record has room for the 16 x86-64 registers
		v := c.Regs.GPR[k] & s.arch.RegMask
		if k >= s.arch.NumGPR() {
			v = 0
		}
		le.PutUint64(r[rRegs+8*k:], v)
	}
	le.PutUint64(r[rFlags:], c.Regs.Flags&s.arch.RegMask|0x2)
	le.PutUint64(r[rEntry:], c.Entry(l))
	origOff := c.CodeOffset
	if flags&cfTrap != 0 {
		// length probe: the image is the page's last ImageSize bytes, the
		// code (at CodeOffset) ending at the page end
		origOff = kernelsim.PageSize - kernelsim.ImageSize
	}
	le.PutUint32(r[rOrigOff:], uint32(origOff))
	le.PutUint32(r[rSlotOff:], uint32(c.SlotOffset))
	if c.Slot != nil {
		flags |= cfSlot
	}
	if c.NoMemory {
		flags |= cfNoMem
	}
	le.PutUint32(r[rCFlags:], flags)
	img := r[rOrigImg : rOrigImg+kernelsim.ImageSize]
	if flags&cfTrap != 0 {
		// length probe: the code ends exactly at the page end, no stub
		fill(img, 0xCC)
		copy(img[kernelsim.ImageSize-len(c.Code):], c.Code)
	} else {
		n := copy(img, c.Code)
		n += copy(img[n:], s.stub)
		fill(img[n:], 0xCC)
	}
	if c.Slot != nil {
		img := r[rSlotImg : rSlotImg+kernelsim.ImageSize]
		n := copy(img, c.Slot)
		fill(img[n:], 0xCC)
	}
	if j := s.imgOf[i]; j >= 0 {
		le.PutUint64(r[rImg:], s.t.dataBase+offImgs+uint64(j)*imgStride)
	}
}

func fill(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

// readResult decodes record i.
func (s *Sandbox) readResult(i int, c *kernelsim.Case, res *kernelsim.Result, flags uint32) {
	le := binary.LittleEndian
	r := s.data[offRecs+i*recStride:]
	o := r[rOut:]
	m := s.arch.RegMask
	res.Regs.GPR = [32]uint64{}
	for k := range s.arch.NumGPR() {
		res.Regs.GPR[k] = le.Uint64(o[8*k:]) & m
	}
	res.Regs.Flags = le.Uint64(o[oFlags:]) & s.arch.FlagsMask
	res.Fault = kernelsim.Fault{}
	if le.Uint32(o[oStatus:]) == stSuccess {
		res.Outcome = kernelsim.Completed
		res.Regs.PC = c.ReturnAddr(s.arch.Layout)
	} else {
		res.Outcome = kernelsim.Faulted
		res.Regs.PC = le.Uint64(o[oIP:]) & m
		res.Fault = kernelsim.Fault{
			Signal:    int(le.Uint32(o[oSig:])),
			Code:      int32(le.Uint32(o[oCode:])),
			Addr:      le.Uint64(o[oAddr:]) & m,
			Trap:      int(int32(le.Uint32(o[oTrap:]))),
			ErrorCode: le.Uint64(o[oErr:]) & m,
		}
		if res.Fault.Signal == kernelsim.SIGUSR1 || res.Fault.Signal == SIGVTALRM {
			res.Outcome = kernelsim.TimedOut
		}
	}
	if c.NoMemory || flags&cfTrap != 0 {
		res.Scratch, res.Stack = nil, nil
		return
	}
	n := le.Uint32(o[oNDirty:])
	if n == dirtyAll {
		res.Scratch = append(res.Scratch[:0], r[rScratch:rScratch+kernelsim.ScratchSize]...)
		res.Stack = append(res.Stack[:0], r[rStack:rStack+kernelsim.StackSize]...)
		return
	}
	// the image, with the words the case changed
	img := s.data[offImgs+s.imgOf[i]*imgStride:]
	res.Scratch = append(res.Scratch[:0], img[:kernelsim.ScratchSize]...)
	res.Stack = append(res.Stack[:0], img[kernelsim.ScratchSize:imgStride]...)
	w := s.t.ptr
	for k := range int(min(n, maxDirty)) {
		e := r[rDirty+16*k:]
		off := int(le.Uint32(e))
		if off < 0 || off+w > imgStride {
			continue
		}
		dst := res.Scratch
		if off >= kernelsim.ScratchSize {
			dst, off = res.Stack, off-kernelsim.ScratchSize
		}
		copy(dst[off:off+w], e[8:8+w])
	}
}

// runBatch runs up to maxBatch cases; it returns how many cases have results
// (all of them, unless the sandbox crashed and had to be restarted, in which
// case the crashing case is marked Crashed and counted).
func (s *Sandbox) runBatch(cases []kernelsim.Case, results []kernelsim.Result, flags uint32) (int, error) {
	if s.pid == 0 {
		var err error
		s.do(func() { err = s.spawn() })
		if err != nil {
			return 0, err
		}
	}
	s.writeImages(cases)
	s.t.putItimer(s.data, s.caseTimeout())
	for i := range cases {
		s.writeCase(i, &cases[i], flags)
	}
	atomic.StoreUint32(s.hdr32(hN), uint32(len(cases)))
	s.seq++
	atomic.StoreUint32(s.hdr32(hGo), s.seq)
	futex(s.hdr32(hGo), futexWake, 1, 0)

	// The watchdog counts the sandbox's CPU time, not wall time, so a loaded
	// machine that does not schedule the sandbox does not time cases out.
	lastIdx, kicks := uint32(0), 0
	lastProgress, cpuMark := time.Now(), time.Duration(-1)
	for atomic.LoadUint32(s.hdr32(hDone)) != s.seq {
		futex(s.hdr32(hDone), futexWait, s.seq-1, 20*time.Millisecond)
		if atomic.LoadUint32(s.hdr32(hDone)) == s.seq {
			break
		}
		idx := atomic.LoadUint32(s.hdr32(hIdx))
		if idx != lastIdx {
			lastIdx, lastProgress, kicks, cpuMark = idx, time.Now(), 0, -1
			continue
		}
		var ws unix.WaitStatus
		var ru unix.Rusage
		if p, _ := unix.Wait4(s.pid, &ws, unix.WNOHANG|unix.WALL, &ru); p == s.pid {
			s.reaped(&ru)
			s.pid = 0
			return s.crashed(cases, results, flags, int(idx), fmt.Sprintf("runner died (%s)", describeWait(ws, s)))
		}
		if time.Since(lastProgress) < s.Watchdog {
			continue
		}
		cpu := procCPU(s.pid)
		if cpuMark < 0 {
			cpuMark = cpu
		}
		stalled := time.Since(lastProgress) > 50*s.Watchdog // not running at all
		// Under an emulator case code makes real system calls (no seccomp):
		// one that sleeps (pause, a wait) uses no CPU time; wake it.
		asleep := s.emu != "" && atomic.LoadUint32(s.hdr32(hInCase)) == 1 && procState(s.pid) == 'S'
		if cpu-cpuMark < s.Watchdog && !stalled && !asleep {
			continue
		}
		if kicks >= 3 || stalled {
			var where string
			s.do(func() { where = s.inspect(); s.kill() })
			return s.crashed(cases, results, flags, int(idx), "runner hung"+where)
		}
		unix.Kill(s.pid, unix.SIGUSR1)
		kicks++
		cpuMark = cpu
	}
	for i := range cases {
		s.readResult(i, &cases[i], &results[i], flags)
	}
	return len(cases), nil
}

func describeWait(ws unix.WaitStatus, s *Sandbox) string {
	switch {
	case ws.Exited() && ws.ExitStatus() == 99:
		return fmt.Sprintf("signal %d in the runner at %#x",
			binary.LittleEndian.Uint32(s.data[offHdr+hRFSig:]), binary.LittleEndian.Uint64(s.data[offHdr+hRFIP:]))
	}
	return describeStatus(ws)
}

// crashed records the results before the crashing case, marks it Crashed and
// restarts the sandbox.
func (s *Sandbox) crashed(cases []kernelsim.Case, results []kernelsim.Result, flags uint32, idx int, why string) (int, error) {
	if idx >= len(cases) {
		idx = len(cases) - 1
	}
	for i := 0; i < idx; i++ {
		s.readResult(i, &cases[i], &results[i], flags)
	}
	results[idx] = kernelsim.Result{Outcome: kernelsim.Crashed, Fault: kernelsim.Fault{}}
	s.LastCrash = why
	s.Restarts++
	var err error
	s.do(func() { err = s.spawn() })
	if err != nil {
		return 0, errors.Join(fmt.Errorf("%w: restart after %s", kernelsim.ErrSandbox, why), err)
	}
	return idx + 1, nil
}
