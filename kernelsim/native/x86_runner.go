package native

import (
	"encoding/binary"

	"github.com/kboost/kboost/kernelsim"
	"golang.org/x/sys/cpu"
)

// The runner is the machine code that executes cases inside the sandbox. It
// is generated here for each mode, wrapped in a minimal static ELF (elf.go)
// and started by the tracer. All of its data lives in one memfd shared with
// the tracer, mapped read-write at dataBase; pieces of the same memfd are also
// mapped at the layout's code, slot, scratch and stack addresses, so the
// runner writes those pages through its read-write alias and the tracer never
// needs ptrace to move data.
//
// Protocol: the tracer writes the batch's distinct memory images (scratch
// page + stack page, 8 KiB each) to the image area, fills case records,
// stores their count, increments hGo and wakes it (futex). The runner runs
// every case: it copies the case's code images in, makes the live scratch and
// stack pages hold the case's memory image (a copy only when they hold
// another image: they are kept clean between cases), loads all registers and
// enters the code with IRET (x86-64) or POPF+JMP / IRET (i386); the code ends
// in the return stub, a "jmp [hDonePtr]" back to the runner, which saves all
// registers and flags. Faults arrive in the runner's SA_SIGINFO handler on an
// alternate stack, which records the signal and the ucontext registers and
// resumes the runner: on x86-64 on the CPU by jumping straight back into the
// runner (SA_NODEFER, no rt_sigreturn: it would cost as much as the fault),
// elsewhere through rt_sigreturn with a rewritten context. After every case
// the runner compares the live pages with the image word by word, records
// the words that changed (up to maxDirty, else the whole pages) and puts the
// image's values back. At the start of every batch the runner re-arms its
// case timer (setitimer, see SIGVTALRM). A seccomp filter lets only the
// runner's own setitimer/futex/sigreturn/exit calls through; a system call
// made by case code raises SIGSYS. When the batch is done the runner stores hGo into hDone and wakes
// it.

// Offsets in the shared memfd.
const (
	offHdr     = 0x0000
	offRStack  = 0x1000 // runner stack, 8 KiB
	rstackTop  = 0x3000
	offAlt     = 0x3000 // signal stack, 64 KiB (xsave frames are large)
	altSize    = 0x10000
	offOrig    = 0x13000
	offSlot    = 0x14000
	offScratch = 0x15000
	offStack   = 0x16000
	offRecs    = 0x17000
	recStride  = 0x2400
	maxBatch   = 128
	offImgs    = offRecs + maxBatch*recStride                // memory images, imgStride each
	imgStride  = kernelsim.ScratchSize + kernelsim.StackSize // scratch page, then stack page
	dataLen    = offImgs + maxBatch*imgStride
)

// Header fields (offsets from the header start).
const (
	hGo       = 0x00 // u32, tracer: batch sequence
	hDone     = 0x04 // u32, runner: last finished sequence
	hSeen     = 0x08 // u32
	hN        = 0x0C // u32, cases in the batch
	hIdx      = 0x10 // u32, current case
	hInCase   = 0x14 // u32, 1 while case code runs
	hPPID     = 0x18 // u32, expected parent pid
	hState    = 0x1C // u32, 1 once set-up finished
	hErrStep  = 0x20 // u64, failed set-up step
	hErrVal   = 0x28 // u64, its return value
	hRFSig    = 0x30 // u64, signal that hit the runner itself
	hRFIP     = 0x38 // u64, and where
	hCS       = 0x40
	hSS       = 0x48
	hDS       = 0x50
	hFS       = 0x58
	hGS       = 0x60
	hRec      = 0x68 // u64, address of the current record
	hDonePtr  = 0x70 // u64, address of the done label (return stub target)
	hSPX      = 0x78 // u64, i386 entry stack pointer
	hFrame    = 0x80 // IRET frame, 5 words
	hCur      = 0x100
	hOut      = 0x200 // 0x100 bytes, copied to record+recOut
	hFprog    = 0x300
	hBPF      = 0x310 // up to 64 instructions
	hSigact   = 0x520
	hAltstack = 0x540
	hCC       = 0x580 // 64 bytes of int3
	hMXCSR    = 0x5C0 // u32, MXCSR for every case (the power-on value)
	hXSave    = 0x600 // XSAVE area in its init state (legacy 512 + header 64)
	hLastOrig = 0x5C8 // u32, emulator: offset of the image now in the code page
	hLastSlot = 0x5CC // u32, emulator: same for the slot page
	hLiveImg  = 0x1B0 // u64, address of the image the live pages hold (0: unknown)
	hLiveBase = 0x1B8 // u64, runner address of the live scratch page
	hItimer   = 0x1C0 // struct itimerval for the case timer
	hTickIdx  = 0x1E0 // u32, hIdx at the last case-timer tick in a case
	hTickSeq  = 0x1E4 // u32, hSeen at that tick
	hTicks    = 0x1E8 // u32, further ticks in that same case
)

// SIGVTALRM is the case timer's signal: an interval timer on the runner's
// user CPU time (ITIMER_VIRTUAL with a period of Sandbox.CaseTimeout /
// (tickLimit+1), re-armed at every batch; the kernel checks it at its
// scheduler tick, every 4 ms at HZ=250). A case still running at
// tickLimit+1 consecutive ticks is stopped and reported TimedOut, so an
// endless loop costs about CaseTimeout, not the tracer's Watchdog.
const (
	SIGVTALRM = 26
	tickLimit = 2
)

// Record fields.
const (
	rRegs     = 0x00
	rFlags    = 0x80
	rEntry    = 0x88
	rOrigOff  = 0x90 // u32
	rSlotOff  = 0x94 // u32
	rCFlags   = 0x98 // u32
	rImg      = 0xA0 // u64, runner address of the case's memory image
	rCurLen   = 0xA8 // bytes copied to hCur
	rOut      = 0x100
	rOrigImg  = 0x200
	rSlotImg  = 0x240
	rDirty    = 0x280 // maxDirty entries: u32 offset in the image, u32 0, word
	rScratch  = 0x400 // the whole scratch page when more than maxDirty words changed
	rStack    = 0x1400
	recEnd    = rStack + kernelsim.StackSize
	oFlags    = 0x80
	oIP       = 0x88
	oStatus   = 0x90
	oSig      = 0x98
	oCode     = 0xA0
	oAddr     = 0xA8
	oTrap     = 0xB0
	oErr      = 0xB8
	oNDirty   = 0xC0 // u32, changed words in rDirty, or dirtyAll
	cfSlot    = 1    // copy the slot image
	cfTrap    = 2    // enter with TF (i386: through IRET)
	cfNoMem   = 4    // skip scratch and stack
	stSuccess = 0
	stFault   = 1
	maxDirty  = (rScratch - rDirty) / 16
	dirtyAll  = 0xFFFF_FFFF // the pages are in rScratch and rStack
)

var _ [recStride - recEnd]struct{} // records fit their stride

// target is everything mode-specific about the hardware sandbox.
type target struct {
	is64       bool
	qemu       string // the qemu-user emulator of this mode (ExecQEMU)
	elfClass   byte
	elfMachine uint16
	auditArch  uint32
	ptr        int // pointer size
	codeBase   uint64
	dataBase   uint64
	// userTop is the top of the address space, for a target whose case
	// code reaches all of it (32-bit). There the runner on the CPU unmaps
	// what lies between its own pages and the page of its initial stack
	// pointer (the vDSO, vvar, the stack's lower part) and makes the rest of
	// the stack the kernel gave it read-only (its arguments stay readable:
	// /proc/PID/cmdline, which finds sandboxes by tag), so that a case
	// writing there (after a branch into random bytes) faults instead of
	// changing memory the next case reads. 0: nothing to do.
	userTop uint64
	// system call numbers
	nrMunmap, nrMprotect, nrMmap, nrPrctl, nrGetppid, nrSigaltstack, nrRtSigaction, nrRtSigreturn, nrFutex, nrExitGroup, nrExit, nrSetitimer int
	sysArgs                                                                                                                                  []int // argument registers
	// signal frame layout
	ucGregs   int     // offset of the general registers in ucontext
	gregGPR   [16]int // ucontext index of each GPR (encoding order)
	gregIP    int
	gregFlags int
	gregErr   int
	gregTrap  int
	siAddr    int // offset of si_addr in siginfo
}

var target64 = &target{
	is64: true, elfClass: 2, elfMachine: 62, auditArch: 0xC000003E, ptr: 8, qemu: "qemu-x86_64-static",
	// far from everything case code can reach with a register or disp32
	codeBase: 0x7e00_0000_0000, dataBase: 0x7e00_0010_0000,
	nrMunmap: 11, nrMprotect: 10, nrMmap: 9, nrPrctl: 157, nrGetppid: 110, nrSigaltstack: 131, nrRtSigaction: 13,
	nrRtSigreturn: 15, nrFutex: 202, nrExitGroup: 231, nrExit: 60, nrSetitimer: 38,
	sysArgs: []int{rDI, rSI, rDX, r10, r8, r9},
	ucGregs: 40,
	gregGPR: [16]int{13, 14, 12, 11, 15, 10, 9, 8, 0, 1, 2, 3, 4, 5, 6, 7},
	gregIP:  16, gregFlags: 17, gregErr: 19, gregTrap: 20,
	siAddr: 16,
}

var target32 = &target{
	is64: false, elfClass: 1, elfMachine: 3, auditArch: 0x40000003, ptr: 4, qemu: "qemu-i386-static",
	codeBase: 0x1000_0000, dataBase: 0x1010_0000,
	userTop:  0xffff_e000, // TASK_SIZE of a compat task
	nrMunmap: 91, nrMprotect: 125, nrMmap: 192, nrPrctl: 172, nrGetppid: 64, nrSigaltstack: 186, nrRtSigaction: 174,
	nrRtSigreturn: 173, nrFutex: 240, nrExitGroup: 252, nrExit: 1, nrSetitimer: 104,
	sysArgs: []int{rBX, rCX, rDX, rSI, rDI, rBP},
	ucGregs: 20,
	gregGPR: [16]int{11, 10, 9, 8, 7, 6, 5, 4},
	gregIP:  14, gregFlags: 16, gregErr: 13, gregTrap: 12,
	siAddr: 12,
}

// targets are the modes the sandbox runs, by Arch.
var targets = map[*kernelsim.Arch]*target{kernelsim.X86_64: target64, kernelsim.I386: target32}

// targetOf is a's target; a may be a copy of one of targets' Arches with
// another Layout (Options.Layout), nil for an Arch the sandbox cannot run.
func targetOf(a *kernelsim.Arch) *target {
	if a == nil {
		return nil
	}
	if t := targets[a]; t != nil {
		return t
	}
	for b, t := range targets {
		if b.Mode == a.Mode {
			return t
		}
	}
	return nil
}

// i386 sigcontext indices of the segment registers.
const (
	g32GS = 0
	g32FS = 1
	g32ES = 2
	g32DS = 3
	g32CS = 15
	g32SS = 18
)

func (t *target) ngpr() int {
	if t.is64 {
		return 16
	}
	return 8
}

// hdr returns the sandbox address of a header field.
func (t *target) hdr(off int) mem { return abs(t.dataBase + offHdr + uint64(off)) }

// signals the runner catches.
var caughtSignals = []int{kernelsim.SIGILL, kernelsim.SIGTRAP, kernelsim.SIGBUS, kernelsim.SIGFPE, kernelsim.SIGUSR1, kernelsim.SIGSEGV, kernelsim.SIGSYS, SIGVTALRM}

// runnerCode is a generated runner.
type runnerCode struct {
	code     []byte // placed at entry
	entry    uint64
	starts   []int // instruction offsets (relative to entry)
	handler  uint64
	restorer uint64
	done     uint64
	int3At   uint64 // address of the set-up breakpoint
	codeEnd  uint64
	// jumpOut: the handler leaves by jumping back into the runner instead
	// of returning through rt_sigreturn (the signals are SA_NODEFER).
	jumpOut bool
}

type keep struct{} // a system call argument already in its register

// sys emits a system call with immediate arguments (or keep{}).
func (t *target) sys(a *asm, nr int, args ...any) {
	for i, v := range args {
		switch v := v.(type) {
		case keep:
		case int:
			a.movImm(t.sysArgs[i], uint64(int64(v)))
		case uint64:
			a.movImm(t.sysArgs[i], v)
		default:
			panic("kernelsim: bad syscall argument")
		}
	}
	a.movImm32(rAX, uint32(nr))
	a.syscallInsn()
}

// genRunner generates the runner for l. base is the address the code is
// loaded at. emu generates the variant for a user-mode emulator (qemu-user):
// code pages are mapped read-write-execute and written at their own address
// (the emulator detects self-modifying code only through that mapping), and
// there is no seccomp filter (it would filter the emulator) and no set-up
// breakpoint (the emulator is not ptraced).
func (t *target) genRunner(l kernelsim.Layout, base uint64, emu bool) *runnerCode {
	a := newAsm(t.is64, base)
	w := t.is64
	d := t.dataBase
	type failure struct {
		l     label
		step  int
		store bool
	}
	var fails []failure
	check := func(step int) {
		f := failure{a.newLabel(), step, step > 1}
		fails = append(fails, f)
		a.aluImm(w, aluCmp, rAX, -4095)
		a.jcc(ccAE, f.l)
	}
	const (
		protRW = 3
		protRX = 5
		mapFl  = 0x01 | 0x100000 // MAP_SHARED | MAP_FIXED_NOREPLACE
	)
	mmap := func(addr uint64, n, prot int, off uint64, step int) {
		o := off
		if !t.is64 {
			o = off / kernelsim.PageSize // mmap2 takes pages
		}
		t.sys(a, t.nrMmap, addr, n, prot, mapFl, 3, o)
		check(step)
		// an emulator may treat the fixed address as a hint: insist on it
		f := failure{a.newLabel(), step, step > 1}
		fails = append(fails, f)
		a.movImm(rCX, addr)
		a.cmpRR(w, rAX, rCX)
		a.jcc(ccNE, f.l)
	}

	// --- set-up ---
	mmap(d, dataLen, protRW, 0, 1)
	t.sys(a, t.nrPrctl, 1, sigKILL) // PR_SET_PDEATHSIG
	check(2)
	t.sys(a, t.nrGetppid)
	fpp := failure{a.newLabel(), 3, true}
	fails = append(fails, fpp)
	a.cmpMem(false, rAX, t.hdr(hPPID))
	a.jcc(ccNE, fpp.l)
	codeProt, origW, slotW := protRX, d+offOrig, d+offSlot
	if emu {
		codeProt, origW, slotW = protRW|protRX, l.Orig, l.Slot
	}
	mmap(l.Orig, kernelsim.PageSize, codeProt, offOrig, 4)
	mmap(l.Slot, kernelsim.PageSize, codeProt, offSlot, 5)
	mmap(l.Scratch, kernelsim.ScratchSize, protRW, offScratch, 6)
	mmap(l.Stack, kernelsim.StackSize, protRW, offStack, 7)
	if t.userTop != 0 && !emu {
		hi := d + dataLen
		for _, e := range []uint64{l.Orig + kernelsim.PageSize, l.Slot + kernelsim.PageSize, l.Scratch + kernelsim.ScratchSize, l.Stack + kernelsim.StackSize} {
			hi = max(hi, e)
		}
		hi = (hi + kernelsim.PageSize - 1) &^ (kernelsim.PageSize - 1)
		// rBP: the initial stack pointer's page (above hi, below userTop)
		a.movRR(false, rBP, rSP)
		a.aluImm(false, aluAnd, rBP, -kernelsim.PageSize)
		a.movRR(false, rCX, rBP)
		a.aluImm(false, aluSub, rCX, int32(hi))
		t.sys(a, t.nrMunmap, hi, keep{})
		check(setupUnmap)
		// read-only from there up, a page at a time, until the stack ends
		more, end := a.newLabel(), a.newLabel()
		a.bind(more)
		a.movRR(false, rBX, rBP)
		t.sys(a, t.nrMprotect, keep{}, kernelsim.PageSize, 1) // PROT_READ
		a.aluImm(false, aluCmp, rAX, 0)
		a.jcc(ccNE, end)
		a.aluImm(false, aluAdd, rBP, kernelsim.PageSize)
		a.aluImm(false, aluCmp, rBP, int32(t.userTop))
		a.jcc(ccNE, more)
		a.bind(end)
	}
	t.sys(a, t.nrSigaltstack, d+hAltstack, 0)
	check(8)
	for i, s := range caughtSignals {
		t.sys(a, t.nrRtSigaction, s, d+hSigact, 0, 8)
		check(9 + i)
	}
	t.sys(a, t.nrSetitimer, 1, d+hItimer, 0) // ITIMER_VIRTUAL
	check(setupTimer)
	for _, sr := range []struct{ s, off int }{{sCS, hCS}, {sSS, hSS}, {sDS, hDS}, {sFS, hFS}, {sGS, hGS}} {
		a.movFromSreg(rAX, sr.s)
		a.store(w, t.hdr(sr.off), rAX)
	}
	if t.is64 {
		a.load(true, rAX, t.hdr(hCS))
		a.store(true, t.hdr(hFrame+8), rAX)
		a.load(true, rAX, t.hdr(hSS))
		a.store(true, t.hdr(hFrame+32), rAX)
	}
	int3At := uint64(0)
	if !emu {
		t.sys(a, t.nrPrctl, 38, 1, 0, 0, 0) // PR_SET_NO_NEW_PRIVS
		check(20)
		t.sys(a, t.nrPrctl, 22, 2, d+hFprog) // PR_SET_SECCOMP, SECCOMP_MODE_FILTER
		check(21)
		a.storeImm(false, t.hdr(hState), 1)
		a.int3()
		int3At = a.base + uint64(len(a.b))
	} else {
		a.storeImm(false, t.hdr(hState), 1)
		t.sys(a, t.nrFutex, d+hState, 1, 1) // FUTEX_WAKE(hState)
	}

	// --- batch loop ---
	loop, have, next, batchDone, finish := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
	a.bind(loop)
	a.load(false, rAX, t.hdr(hGo))
	a.cmpMem(false, rAX, t.hdr(hSeen))
	a.jcc(ccNE, have)
	a.movRR(false, rDX, rAX)
	t.sys(a, t.nrFutex, d+hGo, 0, keep{}, 0) // FUTEX_WAIT(hGo, seen, no timeout)
	a.jmp(loop)
	a.bind(have)
	a.store(false, t.hdr(hSeen), rAX)
	a.storeImm(false, t.hdr(hIdx), 0)
	// re-arm the case timer with the tracer's current period
	t.sys(a, t.nrSetitimer, 1, d+hItimer, 0)

	a.bind(next)
	a.load(false, rAX, t.hdr(hIdx))
	a.cmpMem(false, rAX, t.hdr(hN))
	a.jcc(ccAE, batchDone)
	a.imulImm(false, rAX, rAX, recStride)
	a.movImm(rCX, d+offRecs)
	a.addRR(w, rAX, rCX)
	a.store(w, t.hdr(hRec), rAX)
	a.movRR(w, rBX, rAX)
	a.cld()
	// copyN copies n bytes (a multiple of 8) from rSI to rDI, a word at a
	// time: emulators run string instructions one iteration at a time.
	copyN := func(n int) { a.movImm32(rCX, uint32(n/t.ptr)); a.repMovsW() }
	a.movRR(w, rSI, rBX)
	a.movImm(rDI, d+hCur)
	copyN(rCurLen)
	// placeImage copies a case's code image to its page at its offset. On
	// the CPU the image is written through the alias and wiped with int3
	// after the case. Under an emulator every write to a page holding
	// translated code costs a retranslation, so the image is written only
	// when the page does not already hold it, and the previous image is
	// wiped only when the offset changes.
	placeImage := func(offField, lastField int, page uint64, img int) {
		if emu {
			same, write := a.newLabel(), a.newLabel()
			a.load(false, rAX, t.hdr(hCur+offField))
			a.cmpMem(false, rAX, t.hdr(lastField))
			a.jcc(ccE, same)
			a.load(false, rDI, t.hdr(lastField))
			a.movImm(rCX, page)
			a.addRR(w, rDI, rCX)
			a.movImm(rSI, d+hCC)
			copyN(kernelsim.ImageSize)
			a.load(false, rAX, t.hdr(hCur+offField))
			a.store(false, t.hdr(lastField), rAX)
			a.bind(same)
			a.load(false, rDI, t.hdr(hCur+offField))
			a.movImm(rCX, page)
			a.addRR(w, rDI, rCX)
			a.lea(w, rSI, based(rBX, int64(img)))
			a.movImm32(rCX, uint32(kernelsim.ImageSize/t.ptr))
			a.repeCmpsW()
			a.jcc(ccNE, write)
			done := a.newLabel()
			a.jmp(done)
			a.bind(write)
			a.load(false, rDI, t.hdr(hCur+offField))
			a.movImm(rCX, page)
			a.addRR(w, rDI, rCX)
			a.lea(w, rSI, based(rBX, int64(img)))
			copyN(kernelsim.ImageSize)
			a.bind(done)
			return
		}
		a.load(false, rDI, t.hdr(hCur+offField))
		a.movImm(rCX, page)
		a.addRR(w, rDI, rCX)
		a.lea(w, rSI, based(rBX, int64(img)))
		copyN(kernelsim.ImageSize)
	}
	placeImage(rOrigOff, hLastOrig, origW, rOrigImg)
	noSlot := a.newLabel()
	a.testMemImm(t.hdr(hCur+rCFlags), cfSlot)
	a.jcc(ccE, noSlot)
	placeImage(rSlotOff, hLastSlot, slotW, rSlotImg)
	a.bind(noSlot)
	// the live scratch and stack pages: a copy of the case's image unless
	// they hold it already (the runner restores them after every case)
	noMem := a.newLabel()
	a.testMemImm(t.hdr(hCur+rCFlags), cfNoMem)
	a.jcc(ccNE, noMem)
	a.load(w, rSI, t.hdr(hCur+rImg))
	a.cmpMem(w, rSI, t.hdr(hLiveImg))
	a.jcc(ccE, noMem)
	a.store(w, t.hdr(hLiveImg), rSI)
	a.movImm(rDI, d+offScratch)
	copyN(imgStride)
	a.bind(noMem)
	// every case starts with a clean x87/MMX and SSE control state, so
	// exceptions left pending by an earlier case cannot leak into it
	if !emu && cpu.X86.HasOSXSAVE {
		// all of x87, SSE, AVX... back to their initial state (the area's
		// XSTATE_BV is 0); MXCSR comes from the legacy area
		a.movImm32(rAX, 0xFFFFFFFF)
		a.movImm32(rDX, 0xFFFFFFFF)
		a.xrstor(t.hdr(hXSave))
	}
	a.fninit()
	a.ldmxcsr(t.hdr(hMXCSR))
	// and with the runner's data segment selectors (an earlier case may have
	// loaded others with mov sreg, pop sreg, lfs, lgs...)
	for _, sr := range []struct{ s, off int }{{sDS, hDS}, {sES, hDS}, {sFS, hFS}, {sGS, hGS}} {
		a.load(false, rAX, t.hdr(sr.off))
		a.movToSreg(sr.s, rAX)
	}
	a.storeImm(false, t.hdr(hInCase), 1)
	cur := func(r int) mem { return t.hdr(hCur + rRegs + 8*r) }
	loadAll := func() {
		for r := t.ngpr() - 1; r >= 0; r-- {
			if r != rSP {
				a.load(w, r, cur(r))
			}
		}
	}
	if t.is64 {
		a.load(true, rAX, t.hdr(hCur+rEntry))
		a.store(true, t.hdr(hFrame), rAX)
		a.load(true, rAX, t.hdr(hCur+rFlags))
		a.store(true, t.hdr(hFrame+16), rAX)
		a.load(true, rAX, cur(rSP))
		a.store(true, t.hdr(hFrame+24), rAX)
		a.movImm(rSP, d+hFrame)
		loadAll()
		a.iret()
	} else {
		tf := a.newLabel()
		a.testMemImm(t.hdr(hCur+rCFlags), cfTrap)
		a.jcc(ccNE, tf)
		a.load(false, rAX, cur(rSP))
		a.aluImm(false, aluSub, rAX, 4)
		a.store(false, t.hdr(hSPX), rAX)
		a.load(false, rCX, t.hdr(hCur+rFlags))
		a.store(false, based(rAX, 0), rCX)
		loadAll()
		a.load(false, rSP, t.hdr(hSPX))
		a.popf()
		a.jmpMem(t.hdr(hCur + rEntry))
		a.bind(tf)
		a.load(false, rAX, cur(rSP))
		a.aluImm(false, aluSub, rAX, 12)
		a.store(false, t.hdr(hSPX), rAX)
		a.load(false, rCX, t.hdr(hCur+rEntry))
		a.store(false, based(rAX, 0), rCX)
		a.load(false, rCX, t.hdr(hCS))
		a.store(false, based(rAX, 4), rCX)
		a.load(false, rCX, t.hdr(hCur+rFlags))
		a.store(false, based(rAX, 8), rCX)
		loadAll()
		a.load(false, rSP, t.hdr(hSPX))
		a.iret()
	}

	// --- done: the return stub jumps here ---
	done := a.newLabel()
	a.bind(done)
	out := func(off int) mem { return t.hdr(hOut + off) }
	if t.is64 {
		a.store(true, out(8*rSP), rSP)
		a.movImm(rSP, d+rstackTop)
	} else {
		a.storeSS(out(8*rSP), rSP)
		a.movImm(rSP, d+rstackTop)
		a.pushSSpopDSES()
	}
	a.pushf()
	a.popMem(out(oFlags))
	for r := 0; r < t.ngpr(); r++ {
		if r != rSP {
			a.store(w, out(8*r), r)
		}
	}
	a.storeImm(false, out(oStatus), stSuccess)

	a.bind(finish)
	a.pushImm8(2)
	a.popf()
	a.cld()
	a.storeImm(false, t.hdr(hInCase), 0)
	a.load(w, rBX, t.hdr(hRec))
	a.lea(w, rDI, based(rBX, rOut))
	a.movImm(rSI, d+hOut)
	copyN(0x100)
	// compare the live pages with the image and record the changed words
	// in the record, then put the image's values back; more than maxDirty:
	// copy both pages out whole and the image back in
	noMem2, memDone := a.newLabel(), a.newLabel()
	a.testMemImm(t.hdr(hCur+rCFlags), cfNoMem)
	a.jcc(ccNE, noMem2)
	{
		cmpLoop, cont, diff, overflow, restore, end := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
		a.movImm(rSI, d+offScratch)
		a.load(w, rDI, t.hdr(hCur+rImg))
		a.movImm32(rCX, uint32(imgStride/t.ptr))
		a.lea(w, rDX, based(rBX, rDirty))
		a.movImm32(rBP, 0)
		a.bind(cmpLoop)
		a.load(w, rAX, based(rSI, 0))
		a.cmpMem(w, rAX, based(rDI, 0))
		a.jcc(ccNE, diff)
		a.bind(cont)
		a.aluImm(w, aluAdd, rSI, int32(t.ptr))
		a.aluImm(w, aluAdd, rDI, int32(t.ptr))
		a.aluImm(false, aluSub, rCX, 1)
		a.jcc(ccNE, cmpLoop)
		a.jmp(restore)
		a.bind(diff)
		a.aluImm(false, aluCmp, rBP, maxDirty)
		a.jcc(ccAE, overflow)
		a.store(w, based(rDX, 8), rAX)
		a.movRR(w, rAX, rSI)
		a.subMem(w, rAX, t.hdr(hLiveBase))
		a.store(false, based(rDX, 0), rAX)
		a.aluImm(w, aluAdd, rDX, 16)
		a.aluImm(false, aluAdd, rBP, 1)
		a.jmp(cont)
		a.bind(overflow)
		a.lea(w, rDI, based(rBX, rScratch))
		a.movImm(rSI, d+offScratch)
		copyN(imgStride)
		a.load(w, rSI, t.hdr(hCur+rImg))
		a.movImm(rDI, d+offScratch)
		copyN(imgStride)
		a.storeImm(false, based(rBX, rOut+oNDirty), dirtyAll)
		a.jmp(memDone)
		// restore the rBP recorded words
		a.bind(restore)
		a.store(false, based(rBX, rOut+oNDirty), rBP)
		a.lea(w, rDX, based(rBX, rDirty))
		restLoop := a.newLabel()
		a.bind(restLoop)
		a.aluImm(false, aluCmp, rBP, 0)
		a.jcc(ccE, end)
		a.load(false, rAX, based(rDX, 0))
		a.movImm(rSI, d+offScratch)
		a.addRR(w, rSI, rAX)
		a.load(w, rDI, t.hdr(hCur+rImg))
		a.addRR(w, rDI, rAX)
		a.load(w, rAX, based(rDI, 0))
		a.store(w, based(rSI, 0), rAX)
		a.aluImm(w, aluAdd, rDX, 16)
		a.aluImm(false, aluSub, rBP, 1)
		a.jmp(restLoop)
		a.bind(end)
		a.jmp(memDone)
	}
	a.bind(noMem2)
	// the case may have written anything: copy the next image in
	a.storeImm(w, t.hdr(hLiveImg), 0)
	a.bind(memDone)
	if !emu {
		a.load(false, rDI, t.hdr(hCur+rOrigOff))
		a.movImm(rCX, origW)
		a.addRR(w, rDI, rCX)
		a.movImm(rSI, d+hCC)
		copyN(kernelsim.ImageSize)
		noSlot2 := a.newLabel()
		a.testMemImm(t.hdr(hCur+rCFlags), cfSlot)
		a.jcc(ccE, noSlot2)
		a.load(false, rDI, t.hdr(hCur+rSlotOff))
		a.movImm(rCX, slotW)
		a.addRR(w, rDI, rCX)
		a.movImm(rSI, d+hCC)
		copyN(kernelsim.ImageSize)
		a.bind(noSlot2)
	}
	a.incMem(t.hdr(hIdx))
	a.jmp(next)

	a.bind(batchDone)
	a.load(false, rAX, t.hdr(hSeen))
	a.store(false, t.hdr(hDone), rAX)
	t.sys(a, t.nrFutex, d+hDone, 1, 1) // FUTEX_WAKE(hDone, 1)
	a.jmp(loop)

	// --- signal handler: sig in AX, siginfo in CX, ucontext in DX ---
	handler := a.newLabel()
	a.bind(handler)
	jumpOut := t.is64 && !emu
	if jumpOut {
		// flags as the runner wants them (the case may have set AC)
		a.pushImm8(2)
		a.popf()
	}
	if t.is64 {
		a.movRR(true, rAX, rDI)
		a.movRR(true, rCX, rSI)
	} else {
		a.load(false, rAX, based(rSP, 4))
		a.load(false, rCX, based(rSP, 8))
		a.load(false, rDX, based(rSP, 12))
	}
	g := func(i int) mem { return based(rDX, int64(t.ucGregs+i*t.ptr)) }
	inCase, broken, ignore, record, newTick := a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel(), a.newLabel()
	a.cmpMemImm(t.hdr(hInCase), 0)
	a.jcc(ccNE, inCase)
	a.aluImm(false, aluCmp, rAX, kernelsim.SIGUSR1)
	a.jcc(ccE, ignore)
	a.aluImm(false, aluCmp, rAX, SIGVTALRM)
	a.jcc(ccNE, broken)
	a.bind(ignore)
	a.ret() // watchdog or case timer outside a case: nothing to do
	// the case timer in a case: stop the case if it ran at the last
	// tickLimit ticks too, else count the tick and let the case go on
	a.bind(newTick)
	a.load(false, rBX, t.hdr(hIdx))
	a.store(false, t.hdr(hTickIdx), rBX)
	a.load(false, rBX, t.hdr(hSeen))
	a.store(false, t.hdr(hTickSeq), rBX)
	a.storeImm(false, t.hdr(hTicks), 0)
	a.ret()
	sameCase := a.newLabel()
	a.bind(sameCase)
	a.cmpMemImm(t.hdr(hTicks), tickLimit-1)
	a.jcc(ccAE, record)
	a.incMem(t.hdr(hTicks))
	a.ret()
	a.bind(broken)
	a.store(false, t.hdr(hRFSig), rAX)
	a.load(w, rBX, g(t.gregIP))
	a.store(w, t.hdr(hRFIP), rBX)
	t.sys(a, t.nrExitGroup, 99)
	a.bind(inCase)
	a.aluImm(false, aluCmp, rAX, SIGVTALRM)
	a.jcc(ccNE, record)
	a.load(false, rBX, t.hdr(hIdx))
	a.cmpMem(false, rBX, t.hdr(hTickIdx))
	a.jcc(ccNE, newTick)
	a.load(false, rBX, t.hdr(hSeen))
	a.cmpMem(false, rBX, t.hdr(hTickSeq))
	a.jcc(ccNE, newTick)
	a.jmp(sameCase)
	a.bind(record)
	a.storeImm(false, t.hdr(hInCase), 0)
	a.store(false, out(oSig), rAX)
	a.load(false, rBX, based(rCX, 8))
	a.store(false, out(oCode), rBX)
	a.load(w, rBX, based(rCX, int64(t.siAddr)))
	a.store(w, out(oAddr), rBX)
	for r := 0; r < t.ngpr(); r++ {
		a.load(w, rBX, g(t.gregGPR[r]))
		a.store(w, out(8*r), rBX)
	}
	for _, f := range []struct{ greg, off int }{{t.gregIP, oIP}, {t.gregFlags, oFlags}, {t.gregErr, oErr}, {t.gregTrap, oTrap}} {
		a.load(w, rBX, g(f.greg))
		a.store(w, out(f.off), rBX)
	}
	a.storeImm(false, out(oStatus), stFault)
	if jumpOut {
		// leave the signal frame behind: back on the runner's stack at
		// finish (which reloads flags; the next case reloads the data
		// segments and the x87/SSE state). Nothing is blocked: SA_NODEFER.
		a.movImm(rSP, d+rstackTop)
		a.jmp(finish)
	} else {
		// resume the runner at finish, on its own stack, with its own
		// segments, through rt_sigreturn
		a.leaLabel(rBX, finish)
		a.store(w, g(t.gregIP), rBX)
		a.movImm(rBX, d+rstackTop)
		a.store(w, g(t.gregGPR[rSP]), rBX)
		a.storeImm(w, g(t.gregFlags), 0x202)
		if t.is64 {
			// uc_mcontext.cs / .ss are the 16-bit fields at +0 and +6 of greg 18
			a.load(false, rBX, t.hdr(hCS))
			a.store16(based(rDX, int64(t.ucGregs+18*8)), rBX)
			a.load(false, rBX, t.hdr(hSS))
			a.store16(based(rDX, int64(t.ucGregs+18*8+6)), rBX)
		} else {
			for _, s := range []struct{ greg, off int }{{g32CS, hCS}, {g32SS, hSS}, {g32DS, hDS}, {g32ES, hDS}, {g32FS, hFS}, {g32GS, hGS}} {
				a.load(false, rBX, t.hdr(s.off))
				a.store(false, g(s.greg), rBX)
			}
		}
		a.ret()
	}

	restorer := a.newLabel()
	a.bind(restorer)
	a.movImm32(rAX, uint32(t.nrRtSigreturn))
	a.syscallInsn()

	// --- set-up failures: exit with the step number ---
	for _, f := range fails {
		a.bind(f.l)
		if f.store {
			a.store(w, t.hdr(hErrVal), rAX)
			a.storeImm(false, t.hdr(hErrStep), uint32(f.step))
		}
		t.sys(a, t.nrExitGroup, f.step)
	}
	code := a.finish()
	rc := &runnerCode{
		code: code, entry: base, starts: a.starts,
		handler: a.addr(handler), restorer: a.addr(restorer), done: a.addr(done),
		int3At: int3At, codeEnd: base + uint64(len(code)), jumpOut: jumpOut,
	}
	return rc
}

// setupTimer is the set-up step number of setitimer, setupUnmap that of
// the munmap above the runner's pages (target.userTop).
const (
	setupTimer = 19
	setupUnmap = 22 // munmap below the initial stack page
)

// sigKILL is the number of SIGKILL.
const sigKILL = 9

// returnStub is the code appended to Case.Code: an indirect jump to the
// runner's done label that changes no register and no flag: "jmp [hDonePtr]"
// (i386), "jmp [rip+0]; .quad done" (x86-64, the runner is far away).
func (t *target) returnStub(done uint64) []byte {
	if t.is64 {
		return binary.LittleEndian.AppendUint64([]byte{0xFF, 0x25, 0, 0, 0, 0}, done)
	}
	a := newAsm(false, 0)
	a.jmpMem(t.hdr(hDonePtr))
	return a.b
}
