//go:build linux && amd64

package native

import (
	"encoding/binary"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// initHeader writes the parts of the header the runner needs before it runs.
func (t *target) initHeader(data []byte, rc *runnerCode, ppid int, caseTimeout time.Duration) {
	le := binary.LittleEndian
	h := data[offHdr:]
	le.PutUint32(h[hPPID:], uint32(ppid))
	le.PutUint64(h[hDonePtr:], rc.done)
	le.PutUint32(h[hMXCSR:], 0x1F80)
	le.PutUint32(h[hXSave+24:], 0x1F80) // MXCSR in the legacy area
	if t.is64 {
		le.PutUint64(h[hLiveBase:], t.dataBase+offScratch)
	} else {
		le.PutUint32(h[hLiveBase:], uint32(t.dataBase+offScratch))
	}
	for i := 0; i < kernelsim.ImageSize; i++ {
		h[hCC+i] = 0xCC
	}
	for _, off := range []int{offOrig, offSlot} {
		for i := 0; i < kernelsim.PageSize; i++ {
			data[off+i] = 0xCC
		}
	}
	t.putItimer(data, caseTimeout)
	// sigaction: handler, flags, restorer, mask. A handler that returns
	// through rt_sigreturn blocks SIGUSR1 while it runs; one that jumps back
	// into the runner must leave the mask as it is (SA_NODEFER, empty mask),
	// or the signal would stay blocked.
	saFlags := uint64(0x4 | 0x08000000 | 0x04000000) // SA_SIGINFO|SA_ONSTACK|SA_RESTORER
	mask := uint64(1) << (kernelsim.SIGUSR1 - 1)
	if rc.jumpOut {
		saFlags |= 0x40000000 // SA_NODEFER
		mask = 0
	}
	sa := h[hSigact:]
	ss := h[hAltstack:]
	alt := t.dataBase + offAlt
	if t.is64 {
		le.PutUint64(sa[0:], rc.handler)
		le.PutUint64(sa[8:], saFlags)
		le.PutUint64(sa[16:], rc.restorer)
		le.PutUint64(sa[24:], mask)
		le.PutUint64(ss[0:], alt)
		le.PutUint32(ss[8:], 0)
		le.PutUint64(ss[16:], altSize)
	} else {
		le.PutUint32(sa[0:], uint32(rc.handler))
		le.PutUint32(sa[4:], uint32(saFlags))
		le.PutUint32(sa[8:], uint32(rc.restorer))
		le.PutUint64(sa[12:], mask)
		le.PutUint32(ss[0:], uint32(alt))
		le.PutUint32(ss[4:], 0)
		le.PutUint32(ss[8:], altSize)
	}
	// seccomp: allow the runner's own futex/sigreturn/exit, trap the rest
	prog := t.seccompProgram(rc.entry, rc.codeEnd)
	for i, ins := range prog {
		le.PutUint64(h[hBPF+8*i:], ins)
	}
	fp := h[hFprog:]
	le.PutUint16(fp[0:], uint16(len(prog)))
	if t.is64 {
		le.PutUint64(fp[8:], t.dataBase+hBPF)
	} else {
		le.PutUint32(fp[4:], uint32(t.dataBase+hBPF))
	}
}

// putItimer writes the case timer's struct itimerval (first tick and
// period alike) for a case time limit: tickLimit+1 periods, the period at
// least a millisecond.
func (t *target) putItimer(data []byte, limit time.Duration) {
	le := binary.LittleEndian
	h := data[offHdr:]
	p := max(limit/(tickLimit+1), time.Millisecond)
	sec, us := uint64(p/time.Second), uint64(p%time.Second/time.Microsecond)
	for k := range 2 {
		if t.is64 {
			le.PutUint64(h[hItimer+16*k:], sec)
			le.PutUint64(h[hItimer+16*k+8:], us)
		} else {
			le.PutUint32(h[hItimer+8*k:], uint32(sec))
			le.PutUint32(h[hItimer+8*k+4:], uint32(us))
		}
	}
}

func bpf(code uint16, jt, jf uint8, k uint32) uint64 {
	return uint64(code) | uint64(jt)<<16 | uint64(jf)<<24 | uint64(k)<<32
}

// seccompProgram is the sandbox's filter: system calls from outside the
// runner's code, or of any kind but setitimer, futex, rt_sigreturn, exit and
// exit_group, raise SIGSYS.
func (t *target) seccompProgram(lo, hi uint64) []uint64 {
	const (
		ldAbs   = 0x20
		jeq     = 0x15
		jge     = 0x35
		ret     = 0x06
		allow   = 0x7fff0000
		trapRet = 0x00030000
	)
	p := []uint64{
		bpf(ldAbs, 0, 0, 4), // arch
		bpf(jeq, 0, 11, t.auditArch),
		bpf(ldAbs, 0, 0, 12), // ip high
		bpf(jeq, 0, 9, uint32(lo>>32)),
		bpf(ldAbs, 0, 0, 8), // ip low
		bpf(jge, 0, 7, uint32(lo)),
		bpf(jge, 6, 0, uint32(hi)),
		bpf(ldAbs, 0, 0, 0), // nr
		bpf(jeq, 5, 0, uint32(t.nrSetitimer)),
		bpf(jeq, 4, 0, uint32(t.nrFutex)),
		bpf(jeq, 3, 0, uint32(t.nrRtSigreturn)),
		bpf(jeq, 2, 0, uint32(t.nrExitGroup)),
		bpf(jeq, 1, 0, uint32(t.nrExit)),
		bpf(ret, 0, 0, trapRet),
		bpf(ret, 0, 0, allow),
	}
	return p
}
