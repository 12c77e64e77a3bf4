//go:build linux && (amd64 || 386 || arm64 || arm)

package tracer

import (
	"encoding/binary"

	"github.com/kboost/kboost/internal/ptregs"
	"github.com/kboost/kboost/sysent"
	"golang.org/x/sys/unix"
)

// One stop per call. A monitored call of a tree kboost started under its
// seccomp filter stops at its entry (the seccomp stop); to learn its result
// the tracer would resume it with PTRACE_SYSCALL and stop again at its exit.
// Where the calling mode allows it (deferSpecs), the entry stop instead
// points the thread's return at a stub of its own in pages kboost maps into
// the process; the stub stores the result and a sequence number into the
// thread's slot and jumps back, and the tracer reads the slot at the
// thread's next stop (a later call, a signal, its exit). Calls that create
// tasks, replace the image or do not return, denied calls, and calls made
// while the process has no stub pages yet take the exit stop as before.

// deferSpec is one calling mode's stub design (a per-arch definition).
type deferSpec struct {
	table              *sysent.Table
	slotCode, slotData int // bytes of one thread's stub and of its data slot
	// Offsets in a stub: restarted is where a call restarted through the
	// stub returns (its seccomp stop's ip), entry where the entry stop
	// points the thread, tail the end of the code.
	restarted, entry, tail int
	// saved is where the restart path has stored the return address in
	// the slot (before it, the address is still in the ret register).
	saved int
	words deferWords
	maxIP uint64 // calls from above it are not deferred
	stub  func(buf []byte, code, data uint64)
}

// stubPlace is where in its stub a thread's pc is: the one reading of a
// stub's offsets that settleStopped and leaveStub act on.
type stubPlace int

const (
	notInStub       stubPlace = iota
	restartUnsaved            // the restart path, the return address still in the ret register
	restartSaved              // the restart path at or before its call, the address saved in the slot
	restartReturned           // the restarted call returned (its result in the rv register)
	aboutToRestart            // the jump to the restart path before entry (where the kernel restarts a deferred call)
	returned                  // the call made from entry returned into the stub (its result in rv)
)

// place classifies off, a pc's offset in a thread's stub.
func (s *deferSpec) place(off uint64) stubPlace {
	switch {
	case off >= uint64(s.tail):
		return notInStub
	case off < uint64(s.saved):
		return restartUnsaved
	case off < uint64(s.restarted):
		return restartSaved
	case off < uint64(s.entry-2):
		return restartReturned
	case off < uint64(s.entry):
		return aboutToRestart
	}
	return returned
}

// deferWords are register word indexes (internal/ptregs) of the mode.
type deferWords struct {
	pc, ret, seq, rv, nr int
	args                 [6]int
}

// Slot data: the sequence number saved around a restarted call, the
// result and the sequence number the stub stores.
const (
	dataSavedRet = 0
	dataSavedSeq = 8
	dataResult   = 16
	dataSeq      = 24
	stubSlots    = 256 // threads of one address space that may defer at once
)

// neverDeferred are calls whose return cannot go through a stub: a new
// task would return into its creator's slot, exec replaces the pages,
// sigreturn restores every register, the others do not return.
var neverDeferred = []string{"clone", "clone3", "fork", "vfork", "execve", "execveat",
	"rt_sigreturn", "sigreturn", "exit", "exit_group", "uretprobe", "uprobe"}

// stubMM is kboost's stub pages in one address space.
type stubMM struct {
	state      int // mmNone, mmMapped (code written, pages writable), mmReady, mmFailed
	spec       *deferSpec
	busy       bool
	code, data uint64
	used       [stubSlots]bool
}

const (
	mmNone = iota
	mmMapped
	mmReady
	mmFailed
)

// deferred is a call whose result the thread's stub will store.
type deferred struct {
	call *Call
	seq  uint64
}

// injection is a call of kboost's own made in place of th's call at its
// entry stop; at its exit the thread is rewound to make its own call again.
type injection struct {
	saved *ptregs.Regs
	mm    *stubMM
	spec  *deferSpec
}

// deferSetup prepares the deferral of a trace that kboost started under
// its seccomp filter.
func (t *Tracer) deferSetup() {
	if !t.seccomp || !t.cfg.OneStop || len(deferSpecs) == 0 {
		return
	}
	t.mms = map[int]*stubMM{}
	t.never = map[uint32]map[uint64]bool{}
	for audit, s := range deferSpecs {
		set := map[uint64]bool{}
		for _, n := range neverDeferred {
			if e, ok := s.table.ByName(n); ok {
				set[uint64(e.Nr)] = true
			}
		}
		t.never[audit] = set
	}
}

// deferrable says whether th's call nr (from ip) may return through a stub.
func (t *Tracer) deferrable(th *thread, audit uint32, nr, ip uint64) *deferSpec {
	if t.mms == nil {
		return nil
	}
	s := deferSpecs[audit]
	if s == nil || ip > s.maxIP || ip < 2 || t.never[audit][nr] {
		return nil
	}
	return s
}

// mmOf returns th's process's stub state (created empty).
func (t *Tracer) mmOf(th *thread) *stubMM {
	mm := t.mms[th.pid]
	if mm == nil {
		mm = &stubMM{}
		t.mms[th.pid] = mm
	}
	return mm
}

func (mm *stubMM) size(s *deferSpec) (code, data uint64) {
	return uint64(s.slotCode * stubSlots), uint64(s.slotData * stubSlots)
}

// slotOf gives th a slot of mm (-1: none free).
func (t *Tracer) slotOf(th *thread, mm *stubMM) int {
	if th.slot >= 0 && th.slotMM == mm {
		return th.slot
	}
	t.releaseSlot(th)
	for i := range mm.used {
		if !mm.used[i] {
			mm.used[i] = true
			th.slot, th.slotMM = i, mm
			return i
		}
	}
	return -1
}

func (t *Tracer) releaseSlot(th *thread) {
	if th.slotMM != nil && th.slot >= 0 {
		th.slotMM.used[th.slot] = false
	}
	th.slot, th.slotMM = -1, nil
}

// startInjection replaces th's call (at its entry stop) with the next step
// of mapping the stub pages: an mmap of writable pages, whose code part is
// then written and, at the next call, made executable by an mprotect.
// False: nothing was injected (the call goes on as it is).
func (t *Tracer) startInjection(th *thread, s *deferSpec, mm *stubMM) bool {
	if mm.busy || mm.state == mmReady || mm.state == mmFailed {
		return false
	}
	regs, err := ptregs.Get(th.tid)
	if err != nil {
		return false
	}
	saved := *regs
	w := s.words
	cs, ds := mm.size(s)
	var nr uint64
	var args []uint64
	switch mm.state {
	case mmNone:
		e, _ := s.table.ByName("mmap")
		nr, args = uint64(e.Nr), []uint64{0, cs + ds, unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS, ^uint64(0), 0}
	case mmMapped:
		e, _ := s.table.ByName("mprotect")
		nr, args = uint64(e.Nr), []uint64{mm.code, cs, unix.PROT_READ | unix.PROT_EXEC}
	}
	regs.SetWord(w.nr, nr)
	for i, a := range args {
		regs.SetWord(w.args[i], a)
	}
	if regs.Set(th.tid) != nil {
		return false
	}
	mm.busy, mm.spec = true, s
	th.inj = &injection{saved: &saved, mm: mm, spec: s}
	ptrace(unix.PTRACE_SYSCALL, th.tid, 0, 0)
	return true
}

// endInjection takes the injected call's result at its exit stop and
// rewinds the thread to make its own call again.
func (t *Tracer) endInjection(th *thread, rv uint64, isErr bool) {
	in := th.inj
	th.inj = nil
	mm, s := in.mm, in.spec
	mm.busy = false
	switch {
	case isErr:
		mm.state = mmFailed
	case mm.state == mmNone:
		mm.code = rv
		cs, _ := mm.size(s)
		mm.data = rv + cs
		code := make([]byte, cs)
		for k := 0; k < stubSlots; k++ {
			s.stub(code[k*s.slotCode:(k+1)*s.slotCode], mm.code+uint64(k*s.slotCode), mm.data+uint64(k*s.slotData))
		}
		if n, err := writeMem(th.tid, mm.code, code); err != nil || n != len(code) {
			mm.state = mmFailed // the pages stay: the process holds no pointer into them
		} else {
			mm.state = mmMapped
		}
	default:
		mm.state = mmReady
	}
	w := s.words
	r := in.saved
	r.SetWord(w.pc, r.Word(w.pc)-2)
	r.SetWord(w.rv, r.Word(w.nr))
	r.SetWord(w.nr, ^uint64(0))
	r.Set(th.tid)
}

// stubOf returns where th's stub and data slot are, if th has one.
func (th *thread) stubOf(s *deferSpec) (code, data uint64, ok bool) {
	if th.slot < 0 || th.slotMM == nil || th.slotMM.state != mmReady {
		return 0, 0, false
	}
	mm := th.slotMM
	return mm.code + uint64(th.slot*s.slotCode), mm.data + uint64(th.slot*s.slotData), true
}

// deferCall makes th's call c return through th's stub. False: it takes
// the exit stop.
func (t *Tracer) deferCall(th *thread, c *Call, s *deferSpec, regs *ptregs.Regs) bool {
	mm := t.mmOf(th)
	if mm.state != mmReady || t.slotOf(th, mm) < 0 {
		return false
	}
	code, _, _ := th.stubOf(s)
	var err error
	if regs == nil {
		if regs, err = ptregs.Get(th.tid); err != nil {
			return false
		}
	}
	w := s.words
	if cs, _ := mm.size(s); regs.Word(w.pc)-mm.code < cs {
		return false // already pointed at a stub: that is no return address
	}
	t.seq++
	regs.SetWord(w.ret, regs.Word(w.pc))
	regs.SetWord(w.seq, t.seq)
	regs.SetWord(w.pc, code+uint64(s.entry))
	if regs.Set(th.tid) != nil {
		return false
	}
	th.def = &deferred{call: c, seq: t.seq}
	return true
}

// settle finishes th's deferred call from its slot, if the stub stored its
// result; otherwise the call is reported unfinished (it was interrupted
// and restarted, or the thread left it by a path that skipped the stub).
func (t *Tracer) settle(th *thread) {
	d := th.def
	if d == nil {
		return
	}
	th.def = nil
	s := deferSpecs[d.call.Audit]
	var buf [16]byte
	if _, data, ok := th.stubOf(s); ok {
		if n, err := ReadMem(th.tid, data+dataResult, buf[:]); err == nil && n == len(buf) &&
			binary.LittleEndian.Uint64(buf[8:]) == d.seq {
			t.finish(th, d.call, binary.LittleEndian.Uint64(buf[:]))
			return
		}
	}
	d.call.NoReturn = true
	if t.report(th) {
		t.h.Exit(d.call)
	}
}

// settleStopped finishes th's deferred call at a signal or event stop
// where th is inside its stub after the call returned: rax is the result.
func (t *Tracer) settleStopped(th *thread) {
	d := th.def
	if d == nil {
		return
	}
	s := deferSpecs[d.call.Audit]
	code, _, ok := th.stubOf(s)
	regs, err := ptregs.Get(th.tid)
	if !ok || err != nil {
		return
	}
	if p := s.place(regs.PC() - code); p == restartReturned || p == returned {
		th.def = nil
		t.finish(th, d.call, regs.Word(s.words.rv))
	}
}

// leaveStub moves th out of its stub at a signal-delivery-stop, before a
// handler can run. A handler's calls use the thread's one slot: a handler
// frame that returned into the stub's restart path would jump to the
// return address a call of the handler's left in the slot. Wherever th is
// in its stub, registers and slot hold its state; kboost finishes the call
// as the stub would (a result the kernel may yet restart, such as
// -ERESTARTSYS, is the result an exit stop shows too) and puts th after
// its own system call instruction, or on it when the call is still to be
// made again. The kernel's restart then moves th back onto that
// instruction, outside the stub.
func (t *Tracer) leaveStub(th *thread) {
	if th.slotMM == nil || th.slotMM.spec == nil {
		return
	}
	s := th.slotMM.spec
	code, data, ok := th.stubOf(s)
	if !ok {
		return
	}
	regs, err := ptregs.Get(th.tid)
	if err != nil {
		return
	}
	w := s.words
	place := s.place(regs.PC() - code)
	if place == notInStub {
		return
	}
	slotRet := func() (uint64, bool) { return slotWord(th.tid, data+dataSavedRet) }
	ret, redo := regs.Word(w.ret), false
	switch place {
	case restartUnsaved, aboutToRestart:
		redo = true
	case restartSaved:
		redo = true
		if ret, ok = slotRet(); !ok {
			return
		}
	case restartReturned:
		if ret, ok = slotRet(); !ok {
			return
		}
	}
	pc := ret
	if redo {
		pc -= 2
	}
	rv := regs.Word(w.rv)
	regs.SetWord(w.pc, pc)
	regs.SetWord(w.ret, ret)
	if regs.Set(th.tid) != nil {
		return
	}
	d := th.def
	if d == nil {
		return
	}
	th.def = nil
	if redo {
		d.call.NoReturn = true
		if t.report(th) {
			t.h.Exit(d.call)
		}
		return
	}
	t.finish(th, d.call, rv)
}

// restartSeq reads the sequence number the stub of th saved before it
// restarted th's call: the one it will store with the result (a signal
// handler's calls in between were given others).
func (t *Tracer) restartSeq(th *thread, s *deferSpec) (uint64, bool) {
	_, data, ok := th.stubOf(s)
	if !ok {
		return 0, false
	}
	return slotWord(th.tid, data+dataSavedSeq)
}

// slotWord reads one 8-byte word of a thread's data slot.
func slotWord(tid int, addr uint64) (uint64, bool) {
	var b [8]byte
	if n, err := ReadMem(tid, addr, b[:]); err != nil || n != len(b) {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// restartedHere says whether a call th stopped at (ip) is one of th's
// calls restarted through its stub: its result comes through the stub too.
func (th *thread) restartedHere(s *deferSpec, ip uint64) bool {
	code, _, ok := th.stubOf(s)
	return ok && ip == code+uint64(s.restarted)
}

func (t *Tracer) finish(th *thread, c *Call, rv uint64) {
	c.Ret, c.IsError = int64(rv), rv >= ^uint64(4094) // -4095..-1: an errno (IS_ERR_VALUE)
	if t.report(th) {
		t.h.Exit(c)
	}
}

// inheritMM gives a new process the stub state of its creator's address
// space: the same one when they share it (vfork, CLONE_VM), a copy of the
// pages (same addresses, every slot free) after a fork; kcmp tells which.
func (t *Tracer) inheritMM(parent *thread, child int, childPid int, vfork bool) {
	if t.mms == nil || childPid == parent.pid {
		return
	}
	// The creator's event may come after the child's own first calls (it
	// then mapped pages of its own) or after its exec (a new address
	// space, with none of its creator's pages): it has its state already.
	if _, ok := t.mms[childPid]; ok {
		return
	}
	if c := t.threads[child]; c != nil && c.execed {
		return
	}
	pm := t.mms[parent.pid]
	if pm == nil || pm.state != mmReady {
		return
	}
	shared := vfork
	if !vfork {
		r, _, e := unix.Syscall6(unix.SYS_KCMP, uintptr(parent.tid), uintptr(child), kcmpVM, 0, 0, 0)
		if e != 0 {
			t.mms[childPid] = &stubMM{state: mmFailed}
			return
		}
		shared = r == 0
	}
	if shared {
		t.mms[childPid] = pm
		return
	}
	t.mms[childPid] = &stubMM{state: mmReady, spec: pm.spec, code: pm.code, data: pm.data}
}

const kcmpVM = 1 // KCMP_VM (linux/kcmp.h)

// writeMem writes buf into pid's memory at addr (process_vm_writev).
func writeMem(pid int, addr uint64, buf []byte) (int, error) {
	local := unix.Iovec{Base: &buf[0]}
	local.SetLen(len(buf))
	remote := unix.RemoteIovec{Base: uintptr(addr), Len: len(buf)}
	return unix.ProcessVMWritev(pid, []unix.Iovec{local}, []unix.RemoteIovec{remote}, 0)
}

// forgetMM drops th's process's stub state when th was its last thread.
func (t *Tracer) forgetMM(th *thread) {
	for tid, o := range t.threads {
		if o.pid == th.pid && tid != th.tid {
			return
		}
	}
	delete(t.mms, th.pid)
}
