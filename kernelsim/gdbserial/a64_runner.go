package gdbserial

import (
	"encoding/binary"
	"fmt"
	"github.com/kboost/kboost/kernelsim"
)

// The A64 runner: a hand-assembled static program that qemu-aarch64 runs
// under its gdb stub. It maps the code, slot, scratch and stack pages and a
// memfd shared with kboost (fd 3), installs SA_SIGINFO|SA_ONSTACK handlers
// (SIGPIPE ignored), and then stops on a BRK. Per case the runner copies the
// code and slot images (only when they changed: a write to a page qemu has
// translated costs an invalidation) and the scratch and stack pages in,
// resets the FP/SIMD state, loads the registers and enters the case through
// a launch table entry ("mrs x30, tpidr_el0; b entry", so x30 comes back
// from TPIDR_EL0). A case ends at the return stub after its code ("b" to a
// trampoline that parks x0 in TPIDR_EL0 and jumps to the runner, which
// stores the registers) or in the signal handler (faults; the watchdog's
// SIGUSR1 for a case that never ends). The handler longjmps back into the
// runner on the runner's own stack; it never returns into a case.
//
// Two modes (GDBMode). Attached: kboost writes a batch of case records into
// the shared memory and delivers the SIGTRAP of the idle BRK (gdb "C05"):
// the handler, seeing no case in progress, runs the batch, which ends on the
// same BRK; every fault a case raises is first a stop reply that kboost
// delivers back ("Cxx"). Detached (the default): after the same start-up
// kboost sets the PC to the idle loop, detaches and closes the connection;
// the runner then waits on a futex in the shared memory, faults go straight
// to its handler, and kboost starts each batch by setting and waking the go
// word and sleeps until the runner clears the state word.
//
// Memory map (guest addresses): the launch tables and the trampoline at
// 0x4200_0000, within a B of the code page (0x4100_0000) and the slot page
// (0x4400_0000); the runner at 4 GiB, out of reach of any B of a case; the
// shared data at 0x4800_0000, out of reach of case registers (scratch
// pointers and small values, plus offsets).

// emuTarget is how the gdb-stub backend runs an instruction set.
type emuTarget struct {
	name       string // gdb architecture name
	qemu       string // qemu-user binary
	elfMachine uint16
	base       uint64 // runner load address
	data       uint64 // address of the shared memory in the guest
	gen        func(l kernelsim.Layout) (*emuRunner, error)
	// stub encodes the return stub placed after a case's code at at.
	stub func(r *emuRunner, at uint64) ([]byte, error)
	// launch is the launch-table address that enters a case at entry.
	launch func(r *emuRunner, l kernelsim.Layout, entry uint64) uint64
	// systemCall reports whether a word is a system call the runner must
	// not execute (reported as SIGSYS, like the x86 sandbox's seccomp).
	systemCall func(w uint32) bool
	// slotFill is the filler word of the slot page (the code page's is 0).
	slotFill uint32
	// sysCallAt, when set, replaces the word-by-word systemCall scan of a
	// code or slot image: the offset of the first system call, or -1.
	sysCallAt func(img []byte) int
	// codeFill pads the code image after the return stub (0 when zero).
	codeFill uint32
	// spReg, pcReg and regBytes: the stack pointer's Regs.GPR index, the
	// gdb register number of the PC and its width (zero: the A64 values
	// 31, 32 and 8).
	spReg, pcReg, regBytes int
	// align is the granularity of code and slot lengths (zero: 4; Thumb 2);
	// stubMax the most bytes the return stub takes (zero: 4).
	align, stubMax int
}

// emuRunner is a generated runner.
type emuRunner struct {
	elf        []byte
	retEntry   uint64
	handler    uint64 // the signal handler
	fidle      uint64 // the idle loop (goes to the futex wait in detached mode)
	launchOrig uint64 // launch table for the code page (8 bytes per word)
	launchSlot uint64 // launch table for the slot page
}

// Shared memory layout (offsets from emuTarget.data).
const (
	emHState    = 0   // 0 idle (at the BRK), 1 running a batch
	emHN        = 8   // cases in the batch
	emHCur      = 16  // current case
	emHInCase   = 24  // 1 while a case runs
	emHCurRec   = 32  // address of the current record
	emHPrevCode = 40  // where the last code image was written (0: none)
	emHPrevSlot = 48  // where the last slot image was written
	emHTimeout  = 56  // set by kboost before its watchdog signal
	emHRunSP    = 64  // the runner's stack pointer
	emHAltStack = 72  // stack_t {ss_sp, ss_flags, ss_size}
	emHSigAct   = 104 // struct sigaction {handler, flags, restorer, mask}
	emHReady    = 144 // set when set-up is complete
	emHErrStep  = 152 // set-up step that failed
	emHErrVal   = 160 // its return value
	emHBatches  = 168 // batches run
	emHGo       = 176 // u32 futex word: kboost sets it to start a batch (detached mode)
	emHDetached = 184 // 1: no debugger attached, idle on futexes instead of the BRK
	emHSigIgn   = 192 // struct sigaction {SIG_IGN}

	emRunStack  = 0x8000  // runner stack top (grows down into the header page's neighbours)
	emAltStack  = 0x10000 // alternate signal stack, emAltSize bytes
	emAltSize   = 0x10000
	emRecords   = 0x20000
	emRecStride = 0x4800
	emMaxBatch  = 256
	emDataSize  = emRecords + emMaxBatch*emRecStride

	// record: input
	emRRegs     = 0   // x0..x30, sp
	emRNZCV     = 256 // NZCV
	emRLaunch   = 264 // launch-table address
	emRCodeAt   = 272 // where the code image goes
	emRSlotAt   = 280 // where the slot image goes (0: no slot)
	emRNoMem    = 288 // NoMemory
	emRSkip     = 296 // result already filled in by kboost
	emRCode     = 320 // ImageSize bytes: code + return stub, UDF-padded
	emRSlot     = 384 // ImageSize bytes
	emROut      = 512 // output registers x0..x30, sp, pc, pstate
	emROutcome  = emROut + 272
	emROutSig   = emROut + 280 // signal (u32), si_code (u32)
	emROutAddr  = emROut + 288
	emRScrIn    = 1024
	emRStkIn    = emRScrIn + kernelsim.PageSize
	emRScrOut   = emRStkIn + kernelsim.PageSize
	emRStkOut   = emRScrOut + kernelsim.PageSize
	emRVec      = emRStkOut + kernelsim.PageSize // v0..v31 (16 bytes each), FPSR, FPCR (u32)
	emVecSize   = 32*16 + 8
	emOutcomeOK = 0
	emOutcomeFa = 1
	emOutcomeTO = 2
)

// signals the runner handles
var emSignals = []int{kernelsim.SIGILL, kernelsim.SIGTRAP, kernelsim.SIGBUS, kernelsim.SIGFPE, kernelsim.SIGUSR1, kernelsim.SIGSEGV}

var emuARM64 = &emuTarget{
	name: "aarch64", qemu: "qemu-aarch64-static", elfMachine: 183,
	// as genA64Runner places them: the launch tables and the return
	// trampoline near the code and slot pages (within a B), the runner far
	// away (no B of a case reaches it), the shared data beyond the reach of
	// case registers
	base: 0x1_0000_0000, data: 0x4800_0000,
	gen: genA64Runner,
	stub: func(r *emuRunner, at uint64) ([]byte, error) {
		b, ok := kernelsim.A64B(at, r.retEntry)
		if !ok {
			return nil, fmt.Errorf("%w: return stub at %#x cannot reach the runner at %#x", kernelsim.ErrBadCase, at, r.retEntry)
		}
		return kernelsim.A64Bytes(b), nil
	},
	launch: func(r *emuRunner, l kernelsim.Layout, entry uint64) uint64 {
		if entry >= l.Slot && entry < l.Slot+kernelsim.PageSize {
			return r.launchSlot + 2*(entry-l.Slot)
		}
		return r.launchOrig + 2*(entry-l.Orig)
	},
	systemCall: func(w uint32) bool { return w&0xFFE0001F == 0xD4000001 }, // SVC
	slotFill:   kernelsim.A64SlotFill,
}

// A64 system call numbers (asm-generic).
const (
	a64SysSigaltstack = 132
	a64SysRtSigaction = 134
	a64SysMmap        = 222
	a64SysFutex       = 98
	futexWaitOp       = 0 // FUTEX_WAIT, shared: kboost waits on the same memfd page
	futexWakeOp       = 1 // FUTEX_WAKE
)

// genA64Runner generates the runner ELF for layout l.
func genA64Runner(l kernelsim.Layout) (*emuRunner, error) {
	const (
		near, far  = 0x4200_0000, 0x1_0000_0000 // see emuARM64
		elfMachine = 183
	)
	D := uint64(0x4800_0000)
	a := newA64(far)
	const (
		x0, x1, x2, x3, x4, x5, x8, x9, x10, x11, x12, x13, x14 = 0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13, 14
		x19, x20, x21, x30                                      = 19, 20, 21, 30
	)
	step := 0
	fail := func() string {
		step++
		return fmt.Sprintf("fail%d", step)
	}
	var fails []string
	// check x0 == want (mmap result) else record the step and stop
	checkX0 := func(want uint64) {
		a.movImm(x9, want)
		a.subsReg(a64XZR, x0, x9)
		l := fail()
		fails = append(fails, l)
		a.bcond(condNE, l)
	}
	// --- set-up
	a.ldrLit(x19, "data")
	a.mov(x0, x19)
	a.movImm(x1, emDataSize)
	a.movImm(x2, 3)    // PROT_READ|PROT_WRITE
	a.movImm(x3, 0x11) // MAP_SHARED|MAP_FIXED
	a.movImm(x4, 3)    // fd 3
	a.movImm(x5, 0)
	a.movImm(x8, a64SysMmap)
	a.svc()
	a.ldrLit(x19, "data")
	a.mov(x9, x0)
	a.subsReg(a64XZR, x0, x19)
	fails = append(fails, fail())
	a.bcond(condNE, fails[len(fails)-1])
	for _, m := range []struct {
		at   uint64
		prot uint64
	}{{l.Orig, 7}, {l.Slot, 7}, {l.Scratch, 3}, {l.Stack, 3}} {
		a.movImm(x0, m.at)
		a.movImm(x1, kernelsim.PageSize)
		a.movImm(x2, m.prot)
		a.movImm(x3, 0x32) // MAP_PRIVATE|MAP_FIXED|MAP_ANONYMOUS
		a.movImm(x4, ^uint64(0))
		a.movImm(x5, 0)
		a.movImm(x8, a64SysMmap)
		a.svc()
		checkX0(m.at)
	}
	a.movImm(x0, D+emHAltStack)
	a.movImm(x1, 0)
	a.movImm(x8, a64SysSigaltstack)
	a.svc()
	checkX0(0)
	for _, sig := range emSignals {
		a.movImm(x0, uint64(sig))
		a.movImm(x1, D+emHSigAct)
		a.movImm(x2, 0)
		a.movImm(x3, 8)
		a.movImm(x8, a64SysRtSigaction)
		a.svc()
		checkX0(0)
	}
	// the slot page's filler differs from the code page's, so a
	// PC-relative load tells the two apart
	a.movImm(x0, l.Slot)
	a.movImm(x1, uint64(kernelsim.A64SlotFill)<<32|kernelsim.A64SlotFill)
	a.movImm(x9, kernelsim.PageSize/16)
	a.mark("fill")
	a.stp(x1, x1, x0, 0)
	a.addImm(x0, x0, 16)
	a.subsImm(x9, x9, 1)
	a.bcond(condNE, "fill")
	// SIGPIPE ignored: qemu's gdb stub raises it on itself when it writes to
	// the closed debugger connection after a detach, and forwards it to the
	// guest (whose default action would stop qemu, PID 1 of its namespace)
	a.movImm(x0, 13)
	a.movImm(x1, D+emHSigIgn)
	a.movImm(x2, 0)
	a.movImm(x3, 8)
	a.movImm(x8, a64SysRtSigaction)
	a.svc()
	checkX0(0)
	a.movImm(x9, 1)
	a.str(x9, x19, emHReady)
	// --- idle: stop on the BRK until kboost delivers the SIGTRAP
	a.mark("idle")
	a.ldrLit(x19, "data")
	a.str(a64XZR, x19, emHState)
	a.ldr(x9, x19, emHDetached)
	a.cbnz(x9, "fidle")
	a.brk(0x100)
	a.b("idle")
	// --- idle without a debugger: wake kboost, sleep on the go word
	a.mark("fidle")
	a.movImm(x0, D+emHState)
	a.movImm(x1, futexWakeOp)
	a.movImm(x2, 1)
	a.movImm(x8, a64SysFutex)
	a.svc()
	a.mark("fwait")
	a.ldrw(x9, x19, emHGo)
	a.cbnz(x9, "fgo")
	a.movImm(x0, D+emHGo)
	a.movImm(x1, futexWaitOp)
	a.movImm(x2, 0)
	a.movImm(x3, 0)
	a.movImm(x8, a64SysFutex)
	a.svc()
	a.b("fwait")
	a.mark("fgo")
	a.strw(a64XZR, x19, emHGo)
	a.b("batch")
	// --- set-up failures: record the step and the value, stop
	for i, l := range fails {
		a.mark(l)
		a.ldrLit(x19, "data")
		a.movImm(x9, uint64(i+1))
		a.str(x9, x19, emHErrStep)
		a.str(x0, x19, emHErrVal)
		a.brk(0xE1)
		a.b(l)
	}
	// --- signal handler: x0 signal, x1 siginfo, x2 ucontext (on the altstack)
	a.mark("handler")
	a.ldrLit(x19, "data")
	a.ldr(x9, x19, emHInCase)
	a.cbnz(x9, "incase")
	// not in a case: the idle BRK (start the batch), or a watchdog signal
	// that came late (return from the handler: rt_sigreturn resumes)
	a.subsImm(a64XZR, x0, kernelsim.SIGUSR1)
	a.bcond(condNE, "batch")
	a.str(a64XZR, x19, emHTimeout)
	a.emit(0xD65F03C0) // ret
	a.mark("incase")
	a.str(a64XZR, x19, emHInCase)
	a.ldr(x20, x19, emHCurRec)
	a.addImm(x21, x20, emROut)
	a.addImm(x3, x2, 184) // uc_mcontext.regs: x0..x30, sp, pc, pstate
	for i := 0; i < 34; i += 2 {
		a.ldp(x10, x11, x3, 8*i)
		a.stp(x10, x11, x21, 8*i)
	}
	a.movImm(x9, emOutcomeFa)
	a.ldr(x10, x19, emHTimeout)
	a.cbz(x10, "nto")
	a.subsImm(a64XZR, x0, kernelsim.SIGUSR1)
	a.bcond(condNE, "nto")
	a.movImm(x9, emOutcomeTO)
	a.str(a64XZR, x19, emHTimeout)
	a.mark("nto")
	a.str(x9, x20, emROutcome)
	a.strw(x0, x20, emROutSig)
	a.ldrw(x10, x1, 8) // si_code
	a.strw(x10, x20, emROutSig+4)
	a.ldr(x10, x1, 16) // si_addr
	a.str(x10, x20, emROutAddr)
	// FP/SIMD registers from the fpsimd_context record that opens
	// uc_mcontext.__reserved (uc+464: magic, size, fpsr, fpcr, vregs)
	a.movImm(x9, emRVec)
	a.addReg(x3, x20, x9)
	a.addImm(x4, x2, 464+16)
	for o := 0; o < 512; o += 16 {
		a.ldp(x10, x11, x4, o)
		a.stp(x10, x11, x3, o)
	}
	a.ldr(x10, x2, 464+8) // fpsr, fpcr
	a.str(x10, x3, 512)
	a.ldr(x9, x19, emHRunSP)
	a.addImm(a64SP, x9, 0)
	a.b("done")
	// --- batch start
	a.mark("batch")
	a.ldr(x9, x19, emHRunSP)
	a.addImm(a64SP, x9, 0)
	a.str(a64XZR, x19, emHCur)
	a.movImm(x9, 1)
	a.str(x9, x19, emHState)
	a.ldr(x9, x19, emHBatches)
	a.addImm(x9, x9, 1)
	a.str(x9, x19, emHBatches)
	a.b("next")
	// --- return entry: the stub after the case's code branches here
	a.mark("ret") // from the trampoline, x0 parked in TPIDR_EL0
	a.ldrLit(x0, "data")
	a.ldr(x0, x0, emHCurRec)
	a.addImm(x0, x0, emROut)
	for i := 1; i < 31; i += 2 {
		a.stp(i, i+1, x0, 8*i)
	}
	a.mrs(x1, sysTPIDR0)
	a.str(x1, x0, 0)
	a.addImm(x1, a64SP, 0)
	a.str(x1, x0, 248)
	a.mrs(x1, sysNZCV)
	a.str(x1, x0, 264)
	a.str(a64XZR, x0, 272) // outcome: completed (kboost fills in the PC)
	// the FP/SIMD registers
	a.movImm(x9, emRVec-emROut)
	a.addReg(x1, x0, x9)
	for v := 0; v < 32; v += 2 {
		a.stpqPost(v, v+1, x1, 32)
	}
	a.mrs(x9, sysFPSR)
	a.strw(x9, x1, 0)
	a.mrs(x9, sysFPCR)
	a.strw(x9, x1, 4)
	a.ldrLit(x19, "data")
	a.str(a64XZR, x19, emHInCase)
	a.ldr(x9, x19, emHRunSP)
	a.addImm(a64SP, x9, 0)
	// --- case done: capture memory, next case
	a.mark("done")
	a.ldr(x20, x19, emHCurRec)
	a.ldr(x9, x20, emRNoMem)
	a.cbnz(x9, "adv")
	a.movImm(x0, l.Scratch)
	a.movImm(x9, emRScrOut)
	a.addReg(x1, x20, x9)
	copyPage(a, x1, x0, "c1")
	a.movImm(x0, l.Stack)
	a.movImm(x9, emRStkOut)
	a.addReg(x1, x20, x9)
	copyPage(a, x1, x0, "c2")
	a.mark("adv")
	a.ldr(x9, x19, emHCur)
	a.addImm(x9, x9, 1)
	a.str(x9, x19, emHCur)
	// --- next case
	a.mark("next")
	a.ldrLit(x19, "data")
	a.ldr(x9, x19, emHCur)
	a.ldr(x10, x19, emHN)
	a.subsReg(a64XZR, x9, x10)
	a.bcond(condHS, "idle")
	a.movImm(x11, emRecStride)
	a.movImm(x12, D+emRecords)
	a.madd(x20, x9, x11, x12)
	a.str(x20, x19, emHCurRec)
	a.ldr(x9, x20, emRSkip)
	a.cbnz(x9, "adv")
	// the code and slot images: rewritten only when they change (a write
	// to a page qemu has translated code from costs an invalidation)
	a.movImm(x14, uint64(kernelsim.A64SlotFill)<<32|kernelsim.A64SlotFill)
	for _, im := range []struct {
		prev, at, img int
		name          string
		fill          int
	}{{emHPrevCode, emRCodeAt, emRCode, "code", a64XZR}, {emHPrevSlot, emRSlotAt, emRSlot, "slot", x14}} {
		n := im.name
		a.ldr(x0, x20, im.at)
		a.ldr(x1, x19, im.prev)
		a.addImm(x2, x20, im.img)
		a.subsReg(a64XZR, x0, x1)
		a.bcond(condNE, n+"clr")
		a.cbz(x0, n+"ok")
		for o := 0; o < kernelsim.ImageSize; o += 16 {
			a.ldp(x10, x11, x0, o)
			a.ldp(x12, x13, x2, o)
			a.subsReg(a64XZR, x10, x12)
			a.bcond(condNE, n+"wr")
			a.subsReg(a64XZR, x11, x13)
			a.bcond(condNE, n+"wr")
		}
		a.b(n + "ok")
		a.mark(n + "clr")
		a.cbz(x1, n+"wr")
		for o := 0; o < kernelsim.ImageSize; o += 16 {
			a.stp(im.fill, im.fill, x1, o)
		}
		a.mark(n + "wr")
		a.str(x0, x19, im.prev)
		a.cbz(x0, n+"ok")
		for o := 0; o < kernelsim.ImageSize; o += 16 {
			a.ldp(x10, x11, x2, o)
			a.stp(x10, x11, x0, o)
		}
		a.mark(n + "ok")
	}
	a.ldr(x9, x20, emRNoMem)
	a.cbnz(x9, "nomem")
	a.movImm(x0, l.Scratch)
	a.addImm(x1, x20, emRScrIn)
	copyPage(a, x0, x1, "c3")
	a.movImm(x0, l.Stack)
	a.movImm(x9, emRStkIn)
	a.addReg(x1, x20, x9)
	copyPage(a, x0, x1, "c4")
	a.mark("nomem")
	for v := 0; v < 32; v++ {
		a.moviZero(v)
	}
	a.msr(sysFPCR, a64XZR)
	a.msr(sysFPSR, a64XZR)
	// launch
	a.movImm(x9, 1)
	a.str(x9, x19, emHInCase)
	a.mov(x30, x20)
	a.ldr(x0, x30, 248)
	a.addImm(a64SP, x0, 0)
	a.ldr(x0, x30, emRNZCV)
	a.msr(sysNZCV, x0)
	a.ldr(x0, x30, 240)
	a.msr(sysTPIDR0, x0)
	for i := 0; i < 30; i += 2 {
		a.ldp(i, i+1, x30, 8*i)
	}
	a.ldr(x30, x30, emRLaunch)
	a.br(x30)
	// literals
	a.align8()
	a.mark("data")
	a.quad(D)
	code, err := a.bytes()
	if err != nil {
		return nil, err
	}
	// the near segment: launch tables for the code and the slot page, then
	// the return trampoline
	n := newA64(near)
	for _, page := range []uint64{l.Orig, l.Slot} {
		for i := uint64(0); i < kernelsim.PageSize; i += 4 {
			b, ok := kernelsim.A64B(n.pc()+4, page+i)
			if !ok {
				return nil, fmt.Errorf("%w: page %#x is beyond +-128 MiB of the launch tables at %#x", kernelsim.ErrBadCase, page, uint64(near))
			}
			n.mrs(x30, sysTPIDR0)
			n.emit(b)
		}
	}
	tramp := n.pc()
	n.msr(sysTPIDR0, x0)
	n.ldrLit(x0, "ret")
	n.br(x0)
	n.align8()
	n.mark("ret")
	n.quad(code0(a, "ret"))
	ncode, err := n.bytes()
	if err != nil {
		return nil, err
	}
	r := &emuRunner{
		retEntry:   tramp,
		handler:    code0(a, "handler"),
		fidle:      code0(a, "idle"),
		launchOrig: near,
		launchSlot: near + 2*kernelsim.PageSize,
	}
	r.elf = buildELF64(elfMachine, far, []elfSeg{{near, ncode}, {far, code}})
	return r, nil
}

// elfSeg is one PT_LOAD segment (read+execute) of buildELF64.
type elfSeg struct {
	addr uint64 // page aligned
	data []byte
}

// buildELF64 writes a static little-endian ELF64 executable: the headers in
// the first page, then each segment at a page-aligned file offset.
func buildELF64(machine uint16, entry uint64, segs []elfSeg) []byte {
	le := binary.LittleEndian
	off := uint64(kernelsim.PageSize)
	offs := make([]uint64, len(segs))
	for i, sg := range segs {
		offs[i] = off
		off += (uint64(len(sg.data)) + kernelsim.PageSize - 1) &^ (kernelsim.PageSize - 1)
	}
	f := make([]byte, off)
	copy(f, []byte{0x7F, 'E', 'L', 'F', 2, 1, 1})
	le.PutUint16(f[16:], 2) // ET_EXEC
	le.PutUint16(f[18:], machine)
	le.PutUint32(f[20:], 1)
	le.PutUint64(f[24:], entry)
	le.PutUint64(f[32:], 64) // e_phoff
	le.PutUint16(f[52:], 64) // e_ehsize
	le.PutUint16(f[54:], 56) // e_phentsize
	le.PutUint16(f[56:], uint16(len(segs)))
	for i, sg := range segs {
		p := f[64+56*i:]
		le.PutUint32(p[0:], 1) // PT_LOAD
		le.PutUint32(p[4:], 5) // R+X
		le.PutUint64(p[8:], offs[i])
		le.PutUint64(p[16:], sg.addr)
		le.PutUint64(p[24:], sg.addr)
		le.PutUint64(p[32:], uint64(len(sg.data)))
		le.PutUint64(p[40:], uint64(len(sg.data)))
		le.PutUint64(p[48:], kernelsim.PageSize)
		copy(f[offs[i]:], sg.data)
	}
	return f
}

func code0(a *a64asm, l string) uint64 { return a.base + 4*uint64(a.label[l]) }

// copyPage copies PageSize bytes from src to dst (both registers advance;
// v16..v19 are scratch).
func copyPage(a *a64asm, dst, src int, l string) {
	const cnt = 9
	a.movImm(cnt, kernelsim.PageSize/64)
	a.mark(l)
	a.ldpqPost(16, 17, src, 32)
	a.ldpqPost(18, 19, src, 32)
	a.stpqPost(16, 17, dst, 32)
	a.stpqPost(18, 19, dst, 32)
	a.subsImm(cnt, cnt, 1)
	a.bcond(condNE, l)
}

// emuHeaderInit writes the set-up structures the runner passes to the
// kernel: the alternate stack and the sigaction (handler, SA_SIGINFO |
// SA_ONSTACK | SA_NODEFER | SA_RESTORER with no restorer: the handler never
// returns).
func emuHeaderInit(d []byte, t *emuTarget, handler uint64) {
	le := binary.LittleEndian
	le.PutUint64(d[emHRunSP:], t.data+emRunStack)
	le.PutUint64(d[emHAltStack:], t.data+emAltStack)
	le.PutUint32(d[emHAltStack+8:], 0)
	le.PutUint64(d[emHAltStack+16:], emAltSize)
	const (
		saSiginfo = 0x4
		saOnstack = 0x08000000
		saNodefer = 0x40000000
	)
	le.PutUint64(d[emHSigAct:], handler)
	le.PutUint64(d[emHSigAct+8:], saSiginfo|saOnstack|saNodefer)
	le.PutUint64(d[emHSigAct+16:], 0)
	le.PutUint64(d[emHSigAct+24:], 0)
	le.PutUint64(d[emHSigIgn:], 1) // SIG_IGN
}

// targets are the emulator targets per Arch.
var targets = map[*kernelsim.Arch]*emuTarget{kernelsim.ARM64: emuARM64, kernelsim.ARM32: emuARM32, kernelsim.Thumb: emuThumb}
