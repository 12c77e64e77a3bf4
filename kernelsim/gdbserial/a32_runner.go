package gdbserial

import (
	"encoding/binary"
	"fmt"
	"github.com/kboost/kboost/kernelsim"
)

// The A32 runner: the 32-bit ARM counterpart of the A64 runner
// (gdbrunner_a64.go), run by qemu-arm under its gdb stub with the same
// shared-memory records, the same futex hand-over in detached mode and the
// same set-up checks. Differences: registers r0..r14 travel in the low
// words of the record's 64-bit slots (PC at the PC slot, CPSR at the NZCV
// slot); a case is entered with "ldm r0, {r0-pc}" from a packed block (the
// load of PC interworks, so an odd entry address runs Thumb code); the
// return stub is "ldr pc, [pc, #-4]; .word ret", which clobbers no
// register; the return entry parks r0 in TPIDRURW while it finds the
// record. The signal handler reads r0..r15 and CPSR from the ARM
// ucontext's sigcontext. The runner builds its 32-bit stack_t and
// sigaction structures itself, in the header page past the A64 ones.

// Header offsets the A32 runner uses on top of the shared ones.
const (
	a32HAlt  = 256 // stack_t {ss_sp, ss_flags, ss_size} (32-bit)
	a32HAct  = 272 // struct sigaction {handler, flags, restorer, mask[2]}
	a32HIgn  = 296 // struct sigaction {SIG_IGN}
	a32HPack = 320 // r0..r14 and the entry address, packed for ldm {r0-pc}

	// ARM ucontext: uc_mcontext (struct sigcontext) at 20; arm_r0 at +12,
	// arm_cpsr after the 16 registers.
	a32UcR0   = 32
	a32UcCPSR = 96
)

// ARM EABI system call numbers.
const (
	a32SysMmap2       = 192
	a32SysSigaltstack = 186
	a32SysRtSigaction = 174
	a32SysFutex       = 240
)

// The A32 sandbox's guest addresses: the runner at 0x2000_0000, the shared
// data at 0x1800_0000 (both beyond the reach of case registers: scratch
// pointers and small values plus 12-bit offsets).
const (
	A32RunnerBase = 0x2000_0000
	A32DataBase   = 0x1800_0000
)

var emuARM32 = &emuTarget{
	name: "arm", qemu: "qemu-arm-static", elfMachine: 40,
	base: A32RunnerBase, data: A32DataBase,
	gen: genA32Runner(kernelsim.A32UDF, kernelsim.A32SlotFill),
	stub: func(r *emuRunner, at uint64) ([]byte, error) {
		return kernelsim.A64Bytes(kernelsim.A32LdrPC, uint32(r.retEntry)), nil
	},
	launch:     func(r *emuRunner, l kernelsim.Layout, entry uint64) uint64 { return entry },
	systemCall: func(w uint32) bool { return w>>28 != 15 && w&0x0F000000 == 0x0F000000 }, // SVC
	sysCallAt:  a32SysCallAt,
	slotFill:   kernelsim.A32SlotFill,
	codeFill:   kernelsim.A32UDF,
	spReg:      kernelsim.A32RegSP,
	pcReg:      15,
	regBytes:   4,
}

// genA32Runner returns the runner generator for the given filler words of
// the code and slot pages: it generates the runner for a layout once to
// learn the handler's address, once with it.
func genA32Runner(codeFill, slotFill uint32) func(l kernelsim.Layout) (*emuRunner, error) {
	return func(l kernelsim.Layout) (*emuRunner, error) { return genA32Fills(l, codeFill, slotFill) }
}

func genA32Fills(l kernelsim.Layout, codeFill, slotFill uint32) (*emuRunner, error) {
	// the handler's address is an immediate of the set-up code: iterate
	// until the layout is stable
	var a *a32asm
	h := uint32(0)
	for range 4 {
		var err error
		if a, err = genA32Pass(l, h, codeFill, slotFill); err != nil {
			return nil, err
		}
		if uint32(a.addr("handler")) == h {
			break
		}
		h = uint32(a.addr("handler"))
	}
	if uint32(a.addr("handler")) != h {
		return nil, fmt.Errorf("kernelsim: a32 runner: the handler address does not settle")
	}
	code, _ := a.bytes()
	return &emuRunner{
		elf:      buildELF32(40, A32RunnerBase, code),
		retEntry: a.addr("ret"),
		handler:  a.addr("handler"),
		fidle:    a.addr("idle"),
	}, nil
}

func genA32Pass(l kernelsim.Layout, handler, codeFill, slotFill uint32) (*a32asm, error) {
	const (
		r0, r1, r2, r3, r4, r5, r7, r8, r9, r10, r11, r12, sp = 0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13
	)
	D := uint32(A32DataBase)
	a := newA32(A32RunnerBase)
	var fails []string
	check := func(want uint32) {
		a.movImm(r9, want)
		a.cmp(r0, r9)
		lb := fmt.Sprintf("fail%d", len(fails)+1)
		fails = append(fails, lb)
		a.bc(a32NE, lb)
	}
	// --- set-up
	a.movImm(r8, D)
	mmap := func(at, size, prot, flags, fd uint32) {
		a.movImm(r0, at)
		a.movImm(r1, size)
		a.movImm(r2, prot)
		a.movImm(r3, flags)
		a.movImm(r4, fd)
		a.movImm(r5, 0)
		a.movImm(r7, a32SysMmap2)
		a.svc()
		check(at)
	}
	mmap(D, emDataSize, 3, 0x11, 3)
	for _, m := range []struct{ at, prot uint32 }{{uint32(l.Orig), 7}, {uint32(l.Slot), 7}, {uint32(l.Scratch), 3}, {uint32(l.Stack), 3}} {
		mmap(m.at, kernelsim.PageSize, m.prot, 0x32, 0xFFFFFFFF)
	}
	// stack_t, sigaction (SA_SIGINFO|SA_ONSTACK|SA_NODEFER), SIG_IGN
	words := []struct {
		off int
		v   uint32
	}{
		{a32HAlt, D + emAltStack}, {a32HAlt + 4, 0}, {a32HAlt + 8, emAltSize},
		{a32HAct, handler}, {a32HAct + 4, 0x4 | 0x08000000 | 0x40000000}, {a32HAct + 8, 0}, {a32HAct + 12, 0}, {a32HAct + 16, 0},
		{a32HIgn, 1}, {a32HIgn + 4, 0}, {a32HIgn + 8, 0}, {a32HIgn + 12, 0}, {a32HIgn + 16, 0},
	}
	for _, w := range words {
		a.movImm(r9, w.v)
		a.str(r9, r8, w.off)
	}
	a.movImm(r0, D+a32HAlt)
	a.movImm(r1, 0)
	a.movImm(r7, a32SysSigaltstack)
	a.svc()
	check(0)
	sigact := func(sig int, act uint32) {
		a.movImm(r0, uint32(sig))
		a.movImm(r1, act)
		a.movImm(r2, 0)
		a.movImm(r3, 8)
		a.movImm(r7, a32SysRtSigaction)
		a.svc()
		check(0)
	}
	for _, sig := range emSignals {
		sigact(sig, D+a32HAct)
	}
	sigact(13, D+a32HIgn) // SIGPIPE: see genA64Runner
	// fillPages fills the code page with codeFill and the slot page with
	// slotFill (A32: UDF #0 and UDF #0x51a7); labels start with prefix.
	fillPages := func(prefix string) {
		for i, pf := range []struct{ at, fill uint32 }{{uint32(l.Orig), codeFill}, {uint32(l.Slot), slotFill}} {
			lb := fmt.Sprintf("%s%d", prefix, i)
			a.movImm(r0, pf.at)
			a.movImm(r1, pf.fill)
			a.movImm(r9, kernelsim.PageSize/4)
			a.mark(lb)
			a.emit(0xE4801004) // str r1, [r0], #4
			a.subsImm8(r9, r9, 1)
			a.bc(a32NE, lb)
		}
	}
	fillPages("pfill")
	a.movImm(r9, 1)
	a.str(r9, r8, emHReady)
	// --- idle
	a.mark("idle")
	a.movImm(r8, D)
	a.movImm(r9, 0)
	a.str(r9, r8, emHState)
	a.ldr(r9, r8, emHDetached)
	a.cmpImm(r9, 0)
	a.bc(a32NE, "fidle")
	a.emit(a32Bkpt)
	a.b("idle")
	a.mark("fidle")
	a.movImm(r0, D+emHState)
	a.movImm(r1, futexWakeOp)
	a.movImm(r2, 1)
	a.movImm(r7, a32SysFutex)
	a.svc()
	a.mark("fwait")
	a.ldr(r9, r8, emHGo)
	a.cmpImm(r9, 0)
	a.bc(a32NE, "fgo")
	a.movImm(r0, D+emHGo)
	a.movImm(r1, futexWaitOp)
	a.movImm(r2, 0)
	a.movImm(r3, 0)
	a.movImm(r7, a32SysFutex)
	a.svc()
	a.b("fwait")
	a.mark("fgo")
	a.movImm(r9, 0)
	a.str(r9, r8, emHGo)
	a.b("batch")
	for i, lb := range fails {
		a.mark(lb)
		a.movImm(r8, D)
		a.movImm(r9, uint32(i+1))
		a.str(r9, r8, emHErrStep)
		a.str(r0, r8, emHErrVal)
		a.emit(a32Bkpt)
		a.b(lb)
	}
	// --- signal handler: r0 signal, r1 siginfo, r2 ucontext
	a.mark("handler")
	a.movImm(r8, D)
	a.ldr(r9, r8, emHInCase)
	a.cmpImm(r9, 0)
	a.bc(a32NE, "incase")
	a.cmpImm(r0, kernelsim.SIGUSR1)
	a.bc(a32NE, "batch")
	a.movImm(r9, 0)
	a.str(r9, r8, emHTimeout)
	a.bxlr()
	a.mark("incase")
	a.movImm(r9, 0)
	a.str(r9, r8, emHInCase)
	a.ldr(r10, r8, emHCurRec)
	for k := 0; k < 16; k++ {
		a.ldr(r4, r2, a32UcR0+4*k)
		o := emROut + 8*k
		if k == 15 {
			o = emROut + 256
		}
		a.str(r4, r10, o)
		a.str(r9, r10, o+4)
	}
	a.ldr(r4, r2, a32UcCPSR)
	a.str(r4, r10, emROut+264)
	a.str(r9, r10, emROut+268)
	a.movImm(r4, emOutcomeFa)
	a.ldr(r5, r8, emHTimeout)
	a.cmpImm(r5, 0)
	a.bc(a32EQ, "nto")
	a.cmpImm(r0, kernelsim.SIGUSR1)
	a.bc(a32NE, "nto")
	a.movImm(r4, emOutcomeTO)
	a.str(r9, r8, emHTimeout)
	a.mark("nto")
	a.str(r4, r10, emROutcome)
	a.str(r9, r10, emROutcome+4)
	a.str(r0, r10, emROutSig)
	a.ldr(r5, r1, 8) // si_code
	a.str(r5, r10, emROutSig+4)
	a.ldr(r5, r1, 12) // si_addr
	a.str(r5, r10, emROutAddr)
	a.str(r9, r10, emROutAddr+4)
	a.ldr(sp, r8, emHRunSP)
	a.b("done")
	// --- batch start
	a.mark("batch")
	a.ldr(sp, r8, emHRunSP)
	a.movImm(r9, 0)
	a.str(r9, r8, emHCur)
	a.movImm(r9, 1)
	a.str(r9, r8, emHState)
	a.ldr(r9, r8, emHBatches)
	a.addImm8(r9, r9, 1)
	a.str(r9, r8, emHBatches)
	// refill both pages: a case that ran data as ARM code may have stored
	// into them beyond its image (PC-relative stores reach the whole
	// page); a divergence that such a store caused does not reproduce in
	// the next batch
	fillPages("bfill")
	a.b("next")
	// --- return entry (from the stub: ldr pc)
	a.mark("ret")
	a.mcrTPIDR(r0)
	a.movImm(r0, D)
	a.ldr(r0, r0, emHCurRec)
	for k := 1; k < 15; k++ {
		a.str(k, r0, emROut+8*k)
	}
	a.mrsAPSR(r1)
	a.str(r1, r0, emROut+264)
	a.mrcTPIDR(r1)
	a.str(r1, r0, emROut)
	a.movImm(r1, 0)
	for k := 0; k < 15; k++ {
		a.str(r1, r0, emROut+8*k+4)
	}
	a.str(r1, r0, emROut+268)
	a.str(r1, r0, emROutcome)
	a.str(r1, r0, emROutcome+4)
	a.movImm(r8, D)
	a.str(r1, r8, emHInCase)
	a.ldr(sp, r8, emHRunSP)
	// --- case done: capture memory
	a.mark("done")
	a.ldr(r10, r8, emHCurRec)
	a.ldr(r9, r10, emRNoMem)
	a.cmpImm(r9, 0)
	a.bc(a32NE, "adv")
	copyPage := func(dstAbs uint32, dstRec int, srcAbs uint32, srcRec int, lb string) {
		if dstRec >= 0 {
			a.movImm(r4, uint32(dstRec))
			a.addReg(r12, r10, r4)
		} else {
			a.movImm(r12, dstAbs)
		}
		if srcRec >= 0 {
			a.movImm(r4, uint32(srcRec))
			a.addReg(r11, r10, r4)
		} else {
			a.movImm(r11, srcAbs)
		}
		a.movImm(r9, kernelsim.PageSize/32)
		a.mark(lb)
		a.ldmia(r11, 0xFF)
		a.stmia(r12, 0xFF)
		a.subsImm8(r9, r9, 1)
		a.bc(a32NE, lb)
	}
	copyPage(0, emRScrOut, uint32(l.Scratch), -1, "c1")
	copyPage(0, emRStkOut, uint32(l.Stack), -1, "c2")
	a.mark("adv")
	a.ldr(r9, r8, emHCur)
	a.addImm8(r9, r9, 1)
	a.str(r9, r8, emHCur)
	// --- next case
	a.mark("next")
	a.movImm(r8, D)
	a.ldr(r9, r8, emHCur)
	a.ldr(r4, r8, emHN)
	a.cmp(r9, r4)
	a.bc(a32HS, "idle")
	a.movImm(r4, emRecStride)
	a.mul(r10, r9, r4)
	a.movImm(r4, D+emRecords)
	a.addReg(r10, r10, r4)
	a.str(r10, r8, emHCurRec)
	a.ldr(r9, r10, emRSkip)
	a.cmpImm(r9, 0)
	a.bc(a32NE, "adv")
	for _, im := range []struct {
		prev, at, img int
		n             string
		fill          uint32
	}{{emHPrevCode, emRCodeAt, emRCode, "code", codeFill}, {emHPrevSlot, emRSlotAt, emRSlot, "slot", slotFill}} {
		n := im.n
		a.ldr(r0, r10, im.at)
		a.ldr(r1, r8, im.prev)
		a.movImm(r4, uint32(im.img))
		a.addReg(r2, r10, r4)
		a.cmp(r0, r1)
		a.bc(a32EQ, n+"same")
		a.cmpImm(r1, 0)
		a.bc(a32EQ, n+"wr")
		a.movImm(r4, im.fill)
		for o := 0; o < kernelsim.ImageSize; o += 4 {
			a.str(r4, r1, o)
		}
		a.mark(n + "wr")
		a.str(r0, r8, im.prev)
		a.cmpImm(r0, 0)
		a.bc(a32EQ, n+"ok")
		for o := 0; o < kernelsim.ImageSize; o += 4 {
			a.ldr(r4, r2, o)
			a.str(r4, r0, o)
		}
		a.b(n + "ok")
		a.mark(n + "same")
		a.cmpImm(r0, 0)
		a.bc(a32EQ, n+"ok")
		for o := 0; o < kernelsim.ImageSize; o += 4 {
			a.ldr(r4, r0, o)
			a.ldr(r5, r2, o)
			a.cmp(r4, r5)
			a.strCond(a32NE, r5, r0, o)
		}
		a.mark(n + "ok")
	}
	a.ldr(r9, r10, emRNoMem)
	a.cmpImm(r9, 0)
	a.bc(a32NE, "nomem")
	copyPage(uint32(l.Scratch), -1, 0, emRScrIn, "c3")
	copyPage(uint32(l.Stack), -1, 0, emRStkIn, "c4")
	a.mark("nomem")
	// pack r0..r14 and the entry, set the flags, launch
	for k := 0; k < 15; k++ {
		a.ldr(r4, r10, emRRegs+8*k)
		a.str(r4, r8, a32HPack+4*k)
	}
	a.ldr(r4, r10, emRLaunch)
	a.str(r4, r8, a32HPack+60)
	a.movImm(r9, 1)
	a.str(r9, r8, emHInCase)
	a.ldr(r4, r10, emRNZCV)
	a.msrAPSR(r4)
	a.movImm(r0, D+a32HPack)
	a.emit(0xE890FFFF) // ldm r0, {r0-pc}
	if _, err := a.bytes(); err != nil {
		return nil, err
	}
	return a, nil
}

// buildELF32 writes a static little-endian ELF32 EABI5 executable with one
// read+execute segment at base (entry point).
func buildELF32(machine uint16, base uint64, code []byte) []byte {
	le := binary.LittleEndian
	f := make([]byte, kernelsim.PageSize+(len(code)+kernelsim.PageSize-1)&^(kernelsim.PageSize-1))
	copy(f, []byte{0x7F, 'E', 'L', 'F', 1, 1, 1})
	le.PutUint16(f[16:], 2) // ET_EXEC
	le.PutUint16(f[18:], machine)
	le.PutUint32(f[20:], 1)
	le.PutUint32(f[24:], uint32(base))
	le.PutUint32(f[28:], 52)         // e_phoff
	le.PutUint32(f[36:], 0x05000000) // e_flags: EABI version 5
	le.PutUint16(f[40:], 52)         // e_ehsize
	le.PutUint16(f[42:], 32)         // e_phentsize
	le.PutUint16(f[44:], 1)
	p := f[52:]
	le.PutUint32(p[0:], 1) // PT_LOAD
	le.PutUint32(p[4:], kernelsim.PageSize)
	le.PutUint32(p[8:], uint32(base))
	le.PutUint32(p[12:], uint32(base))
	le.PutUint32(p[16:], uint32(len(code)))
	le.PutUint32(p[20:], uint32(len(code)))
	le.PutUint32(p[24:], 5) // R+X
	le.PutUint32(p[28:], kernelsim.PageSize)
	copy(f[kernelsim.PageSize:], code)
	return f
}

// a32SysCallAt is the offset of the first SVC among img's A32 words, or
// -1; the literal word after "ldr pc, [pc, #-4]" is data, not scanned.
func a32SysCallAt(img []byte) int {
	for j := 0; j+4 <= len(img); j += 4 {
		w := binary.LittleEndian.Uint32(img[j:])
		if w == kernelsim.A32LdrPC {
			j += 4
			continue
		}
		if w>>28 != 15 && w&0x0F000000 == 0x0F000000 {
			return j
		}
	}
	return -1
}
