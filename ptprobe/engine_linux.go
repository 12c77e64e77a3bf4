//go:build linux && amd64

package ptprobe

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/procstat"
	"github.com/kboost/kboost/internal/ptregs"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/tracer"
	"github.com/kboost/kboost/uprobe"
	"golang.org/x/sys/unix"
)

// Engine is one `kboost trace` run: a tracer whose Handler plants and
// serves the probes.
type Engine struct {
	opt     Options
	targets []Target
	bin     string // the probed binary, absolute, symlinks resolved
	pol     *boost.Policy
	emu     *kernelsim.Arch
	tr      *tracer.Tracer
	procs   map[int]*proc
	tidPid  map[int]int
	reports []Report
	errs    []string
	rec     *recorder     // per-hit records (Options.Hits)
	fsBase  bool          // the record routine may read the thread pointer with rdfsbase
	ready   chan struct{} // closed at the first install
	// The jump counters live in a memfd that kboost maps too and every
	// probed process maps (MAP_SHARED) as its counters' page: one count per
	// probe for the whole tree, read without a stop, kept across exec.
	// With Hits, the ring of jump hit records follows (ring.go).
	ctrFd int
	ctr   []byte
}

// proc is one probed address space.
type proc struct {
	pid   int
	mem   *os.File
	slot  uint64 // the slot pages (code page, then the counters' page)
	ring  uint64 // the hit records' ring (0: none)
	sites []Site
	at    map[uint64]int // point address -> site index (int3 sites)
	int3  map[uint64]int // singlestep slots' int3 address -> site index
	tids  map[int]bool
	done  bool
	tr    *tracer.Tracer // for exits its own waits take
}

// New validates the points and starts (or attaches to) the tree.
func New(opt Options) (*Engine, error) {
	bin := opt.Binary
	if bin == "" {
		var err error
		if bin, err = defaultBinary(opt); err != nil {
			return nil, err
		}
	}
	abs, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPoint, bin, err)
	}
	if abs, err = filepath.Abs(abs); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPoint, err)
	}
	ts, err := Resolve(abs, opt.Points)
	if err != nil {
		return nil, err
	}
	pol, err := boost.Lookup(PolicyName)
	if err != nil {
		return nil, err
	}
	emu, err := kernelsim.ArchFor(decode.Mode64)
	if err != nil {
		return nil, err
	}
	e := &Engine{opt: opt, targets: ts, bin: abs, pol: pol, emu: emu, procs: map[int]*proc{}, tidPid: map[int]int{}, ready: make(chan struct{})}
	for _, t := range ts {
		e.reports = append(e.reports, Report{Point: t.Point, Func: t.Func, Off: t.Off, Want: opt.Mode})
	}
	size := PageSize
	if opt.Args {
		opt.Hits = true
		e.opt.Hits = true
	}
	if opt.Hits && opt.Out != nil {
		size += RingBytes
	}
	if e.ctrFd, err = unix.MemfdCreate("kboost-trace-counters", unix.MFD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("%w: memfd for the counters: %w", ErrEngine, err)
	}
	if err := unix.Ftruncate(e.ctrFd, int64(size)); err != nil {
		unix.Close(e.ctrFd)
		return nil, fmt.Errorf("%w: memfd for the counters: %w", ErrEngine, err)
	}
	if e.ctr, err = unix.Mmap(e.ctrFd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		unix.Close(e.ctrFd)
		return nil, fmt.Errorf("%w: memfd for the counters: %w", ErrEngine, err)
	}
	if size > PageSize {
		pts := make([]string, len(ts))
		for i, t := range ts {
			pts[i] = t.Point
		}
		e.rec = &recorder{w: bufio.NewWriterSize(opt.Out, 64<<10), json: opt.JSON, args: opt.Args, pts: pts,
			n: make([]uint64, len(ts)), fsTid: map[[2]uint64]int{}, nthreads: map[int]int{},
			ctr: e.ctr[:PageSize], ring: e.ctr[PageSize:]}
		e.fsBase = fsBaseAllowed()
	}
	e.tr, err = tracer.New(tracer.Config{Argv: opt.Argv, Pid: opt.Pid, Env: opt.Env, Stdio: opt.Stdio,
		Filter: map[uint32]map[uint64]bool{}, NoSyscalls: true})
	if err != nil {
		e.closeCounters()
		return nil, err
	}
	return e, nil
}

func defaultBinary(opt Options) (string, error) {
	if opt.Pid != 0 {
		p, err := os.Readlink("/proc/" + strconv.Itoa(opt.Pid) + "/exe")
		if err != nil {
			return "", fmt.Errorf("%w: --pid %d: %w", ErrPoint, opt.Pid, err)
		}
		return p, nil
	}
	if len(opt.Argv) == 0 {
		return "", fmt.Errorf("%w: give a command or a pid", ErrPoint)
	}
	return lookPath(opt.Argv[0])
}

func lookPath(name string) (string, error) {
	if filepath.Base(name) != name {
		return name, nil
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s: not found in PATH (give --binary FILE)", ErrPoint, name)
}

// Run serves the probes until the tree ends or Detach released it.
func (e *Engine) Run() (Summary, error) {
	var stop, drained chan struct{}
	if e.rec != nil {
		stop, drained = make(chan struct{}), make(chan struct{})
		go e.rec.run(stop, drained)
	}
	res, err := e.tr.Run(e)
	sum := Summary{Status: res.Status, Detached: res.Detached, Threads: res.Threads, Processes: res.Processes}
	if e.rec != nil {
		close(stop)
		<-drained
		e.rec.flush()
		for i := range e.reports {
			e.reports[i].Records = e.rec.n[i]
		}
		sum.Dropped, sum.Lost = e.rec.dropped, e.rec.lost
	}
	for _, p := range e.procs {
		e.finish(p)
	}
	for i := range e.reports {
		e.reports[i].Hits += binary.LittleEndian.Uint64(e.ctr[8*i:])
	}
	e.closeCounters()
	sum.Probes, sum.Errors = e.reports, e.errs
	if err == nil && len(e.errs) > 0 {
		err = fmt.Errorf("%w: %s", ErrEngine, e.errs[0])
	}
	return sum, err
}

func (e *Engine) closeCounters() {
	unix.Munmap(e.ctr)
	unix.Close(e.ctrFd)
}

// Installed is closed once the probes are planted in a first process.
func (e *Engine) Installed() <-chan struct{} { return e.ready }

// Detach restores every process and releases the tree; safe from any goroutine.
func (e *Engine) Detach() { e.tr.Detach() }

func (e *Engine) fail(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// Enter, Exit: no system call is monitored (Config.NoSyscalls).
func (e *Engine) Enter(*tracer.Call) uintptr { return 0 }
func (e *Engine) Exit(*tracer.Call)          {}

// Event follows the processes: exec installs the probes into a process
// executing the binary, fork copies its parent's probes (the child
// inherits the patched text and slot pages), exit ends them.
func (e *Engine) Event(ev tracer.Event) {
	var cr creation
	if e.rec != nil && ev.Kind == tracer.EvNewThread && ev.Tid != ev.Parent {
		cr = created(ev.Parent)
	}
	if e.rec != nil {
		switch {
		case ev.Kind == tracer.EvNewThread && ev.Tid != ev.Parent:
			e.rec.newThread(ev, cr)
		case ev.Kind == tracer.EvExec:
			e.rec.mu.Lock()
			e.rec.nthreads[ev.Pid] = 1
			e.rec.mu.Unlock()
		}
	}
	switch ev.Kind {
	case tracer.EvExec:
		if p := e.procs[ev.Pid]; p != nil {
			e.finish(p)
			delete(e.procs, ev.Pid)
		}
		e.tidPid[ev.Tid] = ev.Pid
		if e.isBinary(ev.Pid) {
			e.install(ev.Pid, []int{ev.Tid})
		}
	case tracer.EvNewThread:
		if ev.Tid == ev.Parent {
			return
		}
		e.tidPid[ev.Tid] = ev.Pid
		ppid := e.tidPid[ev.Parent]
		if p := e.procs[ev.Pid]; p != nil {
			p.tids[ev.Tid] = true
			return
		}
		if parent := e.procs[ppid]; parent != nil && ppid != ev.Pid && !parent.done {
			e.forked(parent, ev.Pid, ev.Tid, ev.VFork || cr.sharesMem)
		}
	case tracer.EvExit, tracer.EvKilled:
		pid := e.tidPid[ev.Tid]
		delete(e.tidPid, ev.Tid)
		if p := e.procs[pid]; p != nil {
			delete(p.tids, ev.Tid)
			if len(p.tids) == 0 {
				e.finish(p)
				delete(e.procs, pid)
			}
		}
	}
}

func (e *Engine) isBinary(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	r, err := filepath.EvalSymlinks(exe)
	return err == nil && r == e.bin
}

// Attached installs the probes into every process of an attached tree.
func (e *Engine) Attached(tids []int) {
	by := map[int][]int{}
	for _, tid := range tids {
		pid := tgid(tid)
		e.tidPid[tid] = pid
		by[pid] = append(by[pid], tid)
		if e.rec != nil {
			if regs, err := ptregs.Get(tid); err == nil && regs.L == ptregs.X86_64 {
				e.rec.thread(pid, tid, regs.Word(wFSBase), true)
			}
		}
	}
	pids := make([]int, 0, len(by))
	for pid := range by {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		if e.isBinary(pid) {
			e.install(pid, by[pid])
		}
	}
}

// allStopped says whether every task of pid is among tids or has exited
// (a jump's five bytes are written, and written back, while no thread runs).
func allStopped(pid int, tids []int) bool {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return false
	}
	in := map[int]bool{}
	for _, t := range tids {
		in[t] = true
	}
	for _, d := range ents {
		if n, err := strconv.Atoi(d.Name()); err == nil && !in[n] {
			if st, err := procstat.Read(n); err == nil && st.Zombie() {
				continue // an exited leader runs no code
			}
			return false
		}
	}
	return true
}

// Trap serves an int3 of a probe (or of a singlestep slot).
func (e *Engine) Trap(tid, pid int) bool {
	p := e.procs[pid]
	if p == nil || p.done {
		return false
	}
	regs, err := ptregs.Get(tid)
	if err != nil || regs.L != ptregs.X86_64 {
		return false
	}
	ip := regs.PC() - 1
	if i, ok := p.int3[ip]; ok {
		s := &p.sites[i]
		e.reports[i].Stops++
		regs.SetWord(regs.L.PC, s.Addr+uint64(s.Len))
		return regs.Set(tid) == nil
	}
	i, ok := p.at[ip]
	if !ok {
		return false
	}
	s := &p.sites[i]
	e.reports[i].Hits++
	e.reports[i].Stops++
	if e.rec != nil {
		var args []uint64
		for _, w := range argWords {
			args = append(args, regs.Word(w))
		}
		e.rec.hit(i, pid, tid, 0, args)
	}
	switch s.Mode {
	case Emulate:
		if err := e.emulate(p, tid, regs, s); err != nil {
			e.fail("%s: emulation at %#x: %v", e.targets[i].Point, s.Addr, err)
			return false
		}
		return true
	default:
		regs.SetWord(regs.L.PC, s.CodeAddr)
	}
	return regs.Set(tid) == nil
}

// Release restores every probed process whose threads are all stopped.
func (e *Engine) Release(tids []int) {
	by := map[int][]int{}
	for _, tid := range tids {
		pid, ok := e.tidPid[tid]
		if !ok {
			pid = tgid(tid)
		}
		by[pid] = append(by[pid], tid)
	}
	for pid, p := range e.procs {
		if p.done {
			continue
		}
		ts := by[pid]
		for _, tid := range ts {
			e.flushTrap(p, tid)
			e.stepOut(p, tid)
		}
		if !allStopped(pid, ts) {
			// A thread did not stop for the detach (collect gave up on it):
			// a jump's bytes written back, or the slot pages unmapped, under
			// it could leave it inside an instruction or in unmapped memory.
			// The one-byte int3s go back (written at once); the jumps and
			// their pages stay, and run on correctly.
			e.restoreInt3(p)
			e.fail("pid %d: a thread did not stop for the detach: its jump probes and slot pages stay", pid)
			e.finish(p)
			continue
		}
		e.restore(p)
		unmapped := p.slot == 0 // nothing was mapped
		for _, tid := range ts {
			if unmapped {
				break
			}
			if _, err := inject(p, tid, unix.SYS_MUNMAP, p.slot, SlotPages*PageSize); err == nil {
				unmapped = true
				break
			}
		}
		if !unmapped && len(ts) > 0 {
			e.fail("pid %d: could not unmap the slot pages at %#x", pid, p.slot)
		}
		if p.ring != 0 && len(ts) > 0 {
			if _, err := inject(p, ts[0], unix.SYS_MUNMAP, p.ring, RingBytes); err != nil {
				e.fail("pid %d: could not unmap the hit records' ring at %#x", pid, p.ring)
			}
		}
		e.finish(p)
	}
}

// x86-64 user_regs_struct word indexes (arch/x86/include/asm/user_64.h).
const (
	wR15, wR14, wR13, wR12, wRBP, wRBX, wR11, wR10, wR9, wR8, wRAX, wRCX, wRDX, wRSI, wRDI, wOrigRAX, wRIP = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
	wFlags, wRSP                                                                                           = 18, 19
)

// argWords are the System V argument registers, in order.
var argWords = []int{wRDI, wRSI, wRDX, wRCX, wR8, wR9}

// gprWord maps kernelsim's encoding-order GPRs to user_regs_struct words.
var gprWord = [16]int{wRAX, wRCX, wRDX, wRBX, wRSP, wRBP, wRSI, wRDI, wR8, wR9, wR10, wR11, wR12, wR13, wR14, wR15}

// emulate runs the kernel's emulation of the instruction (kernelsim's model
// of 6.1's int3 handler) on the thread's registers and stack.
func (e *Engine) emulate(p *proc, tid int, regs *ptregs.Regs, s *Site) error {
	var r kernelsim.Regs
	for i, w := range gprWord {
		r.GPR[i] = regs.Word(w)
	}
	r.Flags = regs.Word(wFlags)
	sp := r.GPR[4]
	a := *e.emu
	a.Layout.Stack = sp - kernelsim.StackSize + 64 // pushes below sp, a ret's pop above it
	stack := make([]byte, kernelsim.StackSize)
	if _, err := p.mem.ReadAt(stack, int64(a.Layout.Stack)); err != nil {
		return fmt.Errorf("read the stack at %#x: %w", a.Layout.Stack, err)
	}
	out, st, err := a.Emulate6_1(s.Inst(), r, stack)
	if err != nil {
		return err
	}
	for i := 0; i < len(st); i += 8 {
		if binary.LittleEndian.Uint64(st[i:]) != binary.LittleEndian.Uint64(stack[i:]) {
			if _, err := p.mem.WriteAt(st[i:i+8], int64(a.Layout.Stack)+int64(i)); err != nil {
				return err
			}
		}
	}
	for i, w := range gprWord {
		regs.SetWord(w, out.GPR[i])
	}
	regs.SetWord(wFlags, out.Flags)
	regs.SetWord(wRIP, out.PC)
	return regs.Set(tid)
}

// install maps the slot pages into pid (an mmap injected into one of its
// stopped threads), plans every probe there, writes the slots and patches
// the points. Every other thread of the process is stopped.
func (e *Engine) install(pid int, tids []int) {
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return // killed before its event was served: nothing to probe, its exit follows
	}
	if err != nil {
		e.fail("pid %d: %v", pid, err)
		return
	}
	p := &proc{pid: pid, mem: mem, at: map[uint64]int{}, int3: map[uint64]int{}, tids: map[int]bool{}, tr: e.tr}
	for _, t := range tids {
		p.tids[t] = true
	}
	maps, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		e.fail("pid %d: %v", pid, err)
		mem.Close()
		return
	}
	ms := uprobe.ParseMaps(maps)
	text, ok := e.textOf(ms)
	if !ok {
		e.fail("pid %d: %s is not mapped executable", pid, e.bin)
		mem.Close()
		return
	}
	p.sites = make([]Site, len(e.targets)) // index = target index; Patch nil: not installed
	running := !allStopped(pid, tids)
	if err := e.mapSlot(p, tids[0], text); err != nil {
		e.fail("pid %d: %v", pid, err)
		mem.Close()
		return
	}
	for i, t := range e.targets {
		fnAddr, ok := runtimeAddr(ms, e.bin, t.FileOffset-t.Off)
		if !ok {
			e.fail("%s: file offset %#x is not mapped in pid %d", t.Point, t.FileOffset, pid)
			continue
		}
		b := make([]byte, t.FuncSize)
		if _, err := mem.ReadAt(b, int64(fnAddr)); err != nil {
			e.fail("%s: read %#x in pid %d: %v", t.Point, fnAddr, pid, err)
			continue
		}
		fn := boost.Func{Name: t.Func, Addr: fnAddr, Size: t.FuncSize, Bytes: b}
		sl := Slots{Code: p.slot + uint64(i)*AreaSize, Counter: p.slot + PageSize + uint64(i)*8, Probe: i}
		if p.ring != 0 {
			sl.Record = p.slot + RecordAt
		}
		s, err := PlanAt(e.pol, fn, t.Off, e.opt.Mode, sl)
		if err == nil && s.Mode == Jump {
			s, err = e.checkJump(p, fn, s, tids, running)
		}
		if err != nil {
			e.fail("%s: %v", t.Point, err)
			continue
		}
		p.sites[i] = s
	}
	// Jumps are demoted where another probe falls among their displaced bytes.
	for i := range p.sites {
		s := &p.sites[i]
		if s.Mode != Jump {
			continue
		}
		for j := range p.sites {
			if o := p.sites[j].Addr; j != i && o > s.Addr && o < s.Addr+uint64(s.Displaced) {
				fn, _ := e.funcAt(p, ms, i)
				if d, err := Demote(e.pol, fn, s, "ptprobe.jump_overlap", fmt.Sprintf("probe %s lies among the displaced bytes", e.targets[j].Point)); err == nil {
					*s = d
				}
				break
			}
		}
	}
	for i := range p.sites {
		s := &p.sites[i]
		if s.Patch == nil {
			continue
		}
		if _, err := mem.WriteAt(s.Code, int64(s.CodeAddr)); err != nil {
			e.fail("%s: write the slot: %v", e.targets[i].Point, err)
			s.Patch = nil
			continue
		}
		if _, err := mem.WriteAt(s.Patch, int64(s.Addr)); err != nil {
			e.fail("%s: patch %#x: %v", e.targets[i].Point, s.Addr, err)
			s.Patch = nil
			continue
		}
		switch s.Mode {
		case Jump:
		case SingleStep:
			p.at[s.Addr] = i
			p.int3[s.Int3At()] = i
		default:
			p.at[s.Addr] = i
		}
		r := &e.reports[i]
		if r.Installs == 0 {
			r.Mode, r.Addr, r.Reasons, r.Details, r.Displaced = s.Mode, Hex(s.Addr), s.Reasons, s.Details, s.Displaced
		}
		r.Installs++
	}
	e.procs[pid] = p
	e.plan(p)
	select {
	case <-e.ready:
	default:
		close(e.ready)
	}
}

func (e *Engine) funcAt(p *proc, ms []uprobe.Mapping, i int) (boost.Func, bool) {
	t := e.targets[i]
	a, ok := runtimeAddr(ms, e.bin, t.FileOffset-t.Off)
	if !ok {
		return boost.Func{}, false
	}
	b := make([]byte, t.FuncSize)
	if _, err := p.mem.ReadAt(b, int64(a)); err != nil {
		return boost.Func{}, false
	}
	return boost.Func{Name: t.Func, Addr: a, Size: t.FuncSize, Bytes: b}, true
}

// checkJump demotes a jump when a stopped thread's IP lies among the
// displaced bytes after the first (it would resume in the middle of the
// jmp).
func (e *Engine) checkJump(p *proc, fn boost.Func, s Site, tids []int, running bool) (Site, error) {
	if running {
		return Demote(e.pol, fn, &s, "ptprobe.threads_running", "a thread of the process did not stop: a jump is written only while none runs")
	}
	for _, tid := range tids {
		ip, err := ptregs.PC(tid)
		if err == nil && ip > s.Addr && ip < s.Addr+uint64(s.Displaced) {
			return Demote(e.pol, fn, &s, "ptprobe.thread_inside", fmt.Sprintf("thread %d is stopped at %#x, among the displaced bytes", tid, ip))
		}
	}
	return s, nil
}

func (e *Engine) plan(p *proc) {
	if e.opt.Out == nil {
		return
	}
	var w io.Writer = e.opt.Out
	if e.rec != nil { // after the records so far, in the same stream
		e.rec.mu.Lock()
		defer e.rec.mu.Unlock()
		w = e.rec.w
	}
	for i := range p.sites {
		if p.sites[i].Patch != nil {
			writePlan(w, e.opt.JSON, p.pid, e.targets[i], &p.sites[i])
		}
	}
}

// textOf finds the lowest executable mapping of the binary.
func (e *Engine) textOf(ms []uprobe.Mapping) (uprobe.Mapping, bool) {
	for _, m := range ms {
		if m.Name == e.bin && len(m.Perms) > 2 && m.Perms[2] == 'x' {
			return m, true
		}
	}
	return uprobe.Mapping{}, false
}

// runtimeAddr turns a file offset of path into its address in a process.
func runtimeAddr(ms []uprobe.Mapping, path string, off uint64) (uint64, bool) {
	for _, m := range ms {
		if m.Name == path && off >= m.Off && off < m.Off+(m.End-m.Start) {
			return m.Start + off - m.Off, true
		}
	}
	return 0, false
}

// mapSlot maps the two slot pages within rel32 reach of text: the code page
// (r-x, written through /proc/PID/mem) and the counters' page (rw-).
func (e *Engine) mapSlot(p *proc, tid int, text uprobe.Mapping) error {
	size := uint64(SlotPages * PageSize)
	hints := []uint64{text.Start - 16*size, text.End + 64<<20, text.Start - 1<<30}
	for _, h := range hints {
		h &^= PageSize - 1
		a, err := inject(p, tid, unix.SYS_MMAP, h, size, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uint64(0), 0)
		if err != nil {
			return fmt.Errorf("%w: mmap of the slot pages: %w", ErrEngine, err)
		}
		if int64(a) < 0 && int64(a) > -4096 {
			continue // EEXIST: something lives there
		}
		if d := int64(a) - int64(text.Start); d > 1<<31-int64(size)-(1<<24) || d < -(1<<31)+(1<<24) {
			inject(p, tid, unix.SYS_MUNMAP, a, size)
			continue
		}
		p.slot = a
		if err := e.mapCounters(p, tid); err != nil {
			inject(p, tid, unix.SYS_MUNMAP, a, size)
			p.slot = 0
			return err
		}
		if r, err := inject(p, tid, unix.SYS_MPROTECT, a, PageSize, unix.PROT_READ|unix.PROT_EXEC); err != nil || r != 0 {
			inject(p, tid, unix.SYS_MUNMAP, a, size)
			p.slot = 0
			return fmt.Errorf("%w: mprotect of the slot page failed (%#x, %v)", ErrEngine, r, err)
		}
		return nil
	}
	return fmt.Errorf("%w: no free place for the slot pages within 2 GiB of %#x", ErrEngine, text.Start)
}

// mapCounters maps kboost's counters memfd over the second slot page:
// the tracee opens it as /proc/KBOOST/fd/N (the path written into that
// page first), maps it MAP_SHARED|MAP_FIXED and closes the descriptor.
func (e *Engine) mapCounters(p *proc, tid int) error {
	at := p.slot + PageSize
	path := fmt.Sprintf("/proc/%d/fd/%d\x00", os.Getpid(), e.ctrFd)
	if _, err := p.mem.WriteAt([]byte(path), int64(at)); err != nil {
		return fmt.Errorf("%w: %w", ErrEngine, err)
	}
	const atFDCWD = ^uint64(99) // -100
	fd, err := inject(p, tid, unix.SYS_OPENAT, atFDCWD, at, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil || int64(fd) < 0 {
		return fmt.Errorf("%w: the tracee could not open the counters (%s): %d %v", ErrEngine, path[:len(path)-1], int64(fd), err)
	}
	r, err := inject(p, tid, unix.SYS_MMAP, at, PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_FIXED, fd, 0)
	if err != nil || r != at {
		inject(p, tid, unix.SYS_CLOSE, fd)
		return fmt.Errorf("%w: the tracee could not map the counters: %#x %v", ErrEngine, r, err)
	}
	if e.rec != nil {
		err = e.mapRing(p, tid, fd)
	}
	inject(p, tid, unix.SYS_CLOSE, fd)
	return err
}

// mapRing maps the hit records' ring (the memfd after its first page)
// anywhere in the tracee and writes the record routine and the process's
// words (the ring's address, its pid) into the code page.
func (e *Engine) mapRing(p *proc, tid int, fd uint64) error {
	r, err := inject(p, tid, unix.SYS_MMAP, 0, RingBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED, fd, PageSize)
	if err != nil || int64(r) < 0 && int64(r) > -4096 {
		return fmt.Errorf("%w: the tracee could not map the hit records' ring: %#x %v", ErrEngine, r, err)
	}
	code := routine(p.slot, p.slot+PageSize, e.fsBase)
	words := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r), uint64(p.pid))
	if _, err := p.mem.WriteAt(code, int64(p.slot+RecordAt)); err != nil {
		return fmt.Errorf("%w: %w", ErrEngine, err)
	}
	if _, err := p.mem.WriteAt(words, int64(p.slot+ringPtrAt)); err != nil {
		return fmt.Errorf("%w: %w", ErrEngine, err)
	}
	p.ring = r
	return nil
}

// inject makes stopped thread tid execute one system call: a syscall
// instruction written at its IP, executed by PTRACE_SINGLESTEP, then its
// bytes and registers put back (orig_rax -1 so no restart logic applies to
// the injected call; the saved registers restart an interrupted one).
func inject(p *proc, tid int, nr uint64, args ...uint64) (uint64, error) {
	saved, err := ptregs.Get(tid)
	if err != nil {
		return 0, err
	}
	if saved.L != ptregs.X86_64 {
		return 0, fmt.Errorf("%w: thread %d runs 32-bit code", decode.ErrNotSupported, tid)
	}
	regs, _ := ptregs.Get(tid)
	ip := saved.PC()
	var orig [2]byte
	if _, err := p.mem.ReadAt(orig[:], int64(ip)); err != nil {
		return 0, err
	}
	if _, err := p.mem.WriteAt([]byte{0x0f, 0x05}, int64(ip)); err != nil {
		return 0, err
	}
	defer p.mem.WriteAt(orig[:], int64(ip))
	defer saved.Set(tid)
	argw := []int{wRDI, wRSI, wRDX, wR10, wR8, wR9}
	for i, a := range args {
		regs.SetWord(argw[i], a)
	}
	regs.SetWord(wRAX, nr)
	regs.SetWord(wOrigRAX, ^uint64(0))
	regs.SetWord(wRIP, ip)
	if err := regs.Set(tid); err != nil {
		return 0, err
	}
	var sigs []int
	defer func() {
		for _, s := range sigs { // signals that arrived meanwhile: pending again
			unix.Tgkill(p.pid, tid, unix.Signal(s))
		}
	}()
	for range 16 {
		if err := unix.PtraceSingleStep(tid); err != nil {
			return 0, err
		}
		ws, err := waitStep(p, tid)
		if err != nil {
			return 0, fmt.Errorf("%w: during an injected system call: %w", ErrEngine, err)
		}
		if ws.StopSignal() != unix.SIGTRAP {
			sigs = append(sigs, int(ws.StopSignal()))
			continue
		}
		r, err := ptregs.Get(tid)
		if err != nil {
			return 0, err
		}
		if r.PC() == ip+2 {
			return r.Word(wRAX), nil
		}
		// A step reported at the exit of the system call the thread stopped
		// in (exec) comes before the instruction runs.
	}
	return 0, fmt.Errorf("%w: thread %d did not complete the injected system call", ErrEngine, tid)
}

// errEnded: the thread ended during a step kboost made it take.
var errEnded = errors.New("the thread ended")

// waitStep waits for tid's stop after a step or continue kboost asked for.
// A blocking wait4 on tid never returns for a killed group leader while
// other threads of its group are not yet reaped (the tracer's loop reaps
// them, and it is waiting here), and an exit it takes is lost to the loop,
// which then waits for that thread for ever: it polls, hands an exit it
// took to the tracer, and gives up on a zombie.
func waitStep(p *proc, tid int) (unix.WaitStatus, error) {
	delay := 2 * time.Microsecond
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(tid, &ws, unix.WALL|unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return ws, err
		case got == tid && ws.Stopped():
			return ws, nil
		case got == tid:
			if p.tr != nil {
				p.tr.Reaped(tid, ws)
			}
			return ws, fmt.Errorf("thread %d: %w", tid, errEnded)
		}
		if st, err := procstat.Read(tid); err != nil || st.Zombie() {
			return ws, fmt.Errorf("thread %d: %w", tid, errEnded)
		}
		time.Sleep(delay)
		if delay < time.Millisecond {
			delay *= 2
		}
	}
}

// flushTrap handles a thread stopped (by the detach's interrupt) right
// after one of kboost's int3s, its SIGTRAP still pending: the interrupt is
// reported before a signal is dequeued. Released like that, the SIGTRAP
// would kill the process. The thread is let run just far enough to dequeue
// it (signals are taken before any user instruction runs) and stops again
// at its signal-delivery-stop, where the detach discards it; its IP is
// then moved as Trap would. A SIGTRAP bit in /proc's SigPnd tells this
// from a thread that legitimately is at the same IP (after a one-byte
// instruction's slot).
func (e *Engine) flushTrap(p *proc, tid int) {
	regs, err := ptregs.Get(tid)
	if err != nil || regs.L != ptregs.X86_64 {
		return
	}
	ip := regs.PC() - 1
	i, site := p.at[ip]
	j, slot := p.int3[ip]
	if !site && !slot || !trapPending(tid) {
		return
	}
	if err := unix.PtraceCont(tid, 0); err != nil {
		return
	}
	ws, err := waitStep(p, tid)
	if err != nil {
		return
	}
	if sig := ws.StopSignal(); sig != unix.SIGTRAP {
		unix.Tgkill(p.pid, tid, sig) // another signal came first: pending again
	}
	if regs, err = ptregs.Get(tid); err != nil {
		return
	}
	if site {
		e.reports[i].Hits++
		regs.SetWord(wRIP, p.sites[i].Addr) // the original instruction runs after the restore
	} else {
		regs.SetWord(wRIP, p.sites[j].Addr+uint64(p.sites[j].Len))
	}
	regs.Set(tid)
}

// trapPending reads whether SIGTRAP is pending for the thread itself.
func trapPending(tid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return false
	}
	for _, l := range splitLines(b) {
		if v, ok := strings.CutPrefix(l, "SigPnd:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && m&(1<<(unix.SIGTRAP-1)) != 0
		}
	}
	return false
}

// stepOut single-steps tid until its IP leaves the slot page.
func (e *Engine) stepOut(p *proc, tid int) {
	var sigs []int
	defer func() {
		for _, s := range sigs {
			unix.Tgkill(p.pid, tid, unix.Signal(s))
		}
	}()
	for range 256 {
		regs, err := ptregs.Get(tid)
		if err != nil {
			return
		}
		ip := regs.PC()
		if i, ok := p.int3[ip-1]; ok && p.sites[i].Mode == SingleStep {
			regs.SetWord(wRIP, p.sites[i].Addr+uint64(p.sites[i].Len))
			regs.Set(tid)
			return
		}
		if ip < p.slot || ip >= p.slot+PageSize {
			return
		}
		if err := unix.PtraceSingleStep(tid); err != nil {
			return
		}
		ws, err := waitStep(p, tid)
		if err != nil {
			return
		}
		if ws.StopSignal() != unix.SIGTRAP {
			sigs = append(sigs, int(ws.StopSignal()))
		}
	}
	e.fail("pid %d thread %d: still in the slot page after 256 steps", p.pid, tid)
}

func (e *Engine) restore(p *proc) {
	for i := range p.sites {
		s := &p.sites[i]
		if s.Patch == nil {
			continue
		}
		if _, err := p.mem.WriteAt(s.Orig, int64(s.Addr)); err != nil {
			e.fail("%s: restore %#x in pid %d: %v", e.targets[i].Point, s.Addr, p.pid, err)
		}
	}
}

// restoreInt3 writes back the bytes of the int3 probes only.
func (e *Engine) restoreInt3(p *proc) {
	for i := range p.sites {
		if s := &p.sites[i]; len(s.Patch) == 1 {
			if _, err := p.mem.WriteAt(s.Orig, int64(s.Addr)); err != nil {
				e.fail("%s: restore %#x in pid %d: %v", e.targets[i].Point, s.Addr, p.pid, err)
			}
		}
	}
}

// forked gives a fork child its parent's probes: same addresses, same slot
// pages (copied with the address space), the same counters (shared).
// A fork child's records carry its own pid (written into its copy of the
// code page); a vfork or CLONE_VM child shares its parent's page, and its
// records carry its parent's pid.
func (e *Engine) forked(parent *proc, pid, tid int, shared bool) {
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return // killed (the stress test's SIGKILLed fork child) before its event was served
	}
	if err != nil {
		e.fail("pid %d: %v", pid, err)
		return
	}
	c := &proc{pid: pid, mem: mem, slot: parent.slot, ring: parent.ring, sites: parent.sites, at: parent.at, int3: parent.int3,
		tids: map[int]bool{tid: true}, tr: e.tr}
	if c.ring != 0 && !shared {
		if _, err := mem.WriteAt(binary.LittleEndian.AppendUint64(nil, uint64(pid)), int64(c.slot+PidAt)); err != nil {
			e.fail("pid %d: the pid word of its records: %v", pid, err)
		}
	}
	e.procs[pid] = c
}

// finish closes a process that ended or was released.
func (e *Engine) finish(p *proc) {
	if p.done {
		return
	}
	p.done = true
	if p.mem != nil {
		p.mem.Close()
	}
}

func tgid(tid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return tid
	}
	var pid int
	for _, l := range splitLines(b) {
		if n, err := fmt.Sscanf(l, "Tgid: %d", &pid); n == 1 && err == nil {
			return pid
		}
	}
	return tid
}

func splitLines(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == '\n' {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	return out
}
