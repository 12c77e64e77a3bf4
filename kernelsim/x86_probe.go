package kernelsim

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/kboost/kboost/decode"
)

// The x86 probe model (x86-64 and i386): Probe is to x86 what A64Probe and
// A32Probe are to the ARM instruction sets.

// RandomTrial fills a trial with RandomRegs, random scratch memory and a
// random stack page (reusing t's buffers). The word at the stack pointer has
// TF and AC clear, so a popf of it does not single-step or enable alignment
// checks (which the kernel's saved flags would never carry either).
func (a *Arch) RandomTrial(rng *rand.Rand, t *Trial) {
	t.Regs = a.RandomRegs(rng)
	if len(t.Scratch) != ScratchSize {
		t.Scratch = make([]byte, ScratchSize)
	}
	if len(t.Stack) != StackSize {
		t.Stack = make([]byte, StackSize)
	}
	// i386: every 32-bit word could become a jump target (ret, jmp *mem),
	// and the whole 4 GiB is within reach; keep non-pointer values below
	// 16 MiB, where nothing is mapped, so no case jumps into the runner's
	// or the emulator's pages (x86-64: 47-bit values, the runner is beyond
	// reach of case registers).
	wmask := uint64(0x7fff_ffff_ffff)
	if a.PtrSize() == 4 {
		wmask = 0x00ff_ffff_00ff_ffff
	}
	for j := 0; j < ScratchSize; j += 8 {
		v := rng.Uint64()
		if a.PtrSize() == 4 {
			v &= wmask
		}
		binary.LittleEndian.PutUint64(t.Scratch[j:], v)
	}
	for j := 0; j < StackSize; j += 8 {
		// canonical values: a pop into IP then faults on the fetch, after
		// the pop, as the emulated ret does (a non-canonical one would fault
		// on the ret itself, which the kernel's emulation cannot mirror)
		v := rng.Uint64() & wmask
		if rng.IntN(4) == 0 { // plausible return addresses and pointers
			v = a.Layout.Scratch + uint64(rng.IntN(ScratchSize))
		}
		binary.LittleEndian.PutUint64(t.Stack[j:], v)
	}
	sp := t.Regs.GPR[rSP] - a.Layout.Stack
	t.Stack[sp+1] &^= FlagTF >> 8
	t.Stack[sp+2] &^= FlagAC >> 16
}

// Probe is one probe site placed in a sandbox: the instruction at
// Layout.Orig+CodeOffset, its slot at Layout.Slot+SlotOffset.
type Probe struct {
	Arch       *Arch
	Inst       decode.Inst // decoded at the sandbox address
	CodeOffset int
	SlotOffset int
}

// Addr and SlotAddr are the sandbox addresses of the probe and its slot.
func (p *Probe) Addr() uint64     { return p.Arch.Layout.Orig + uint64(p.CodeOffset) }
func (p *Probe) SlotAddr() uint64 { return p.Arch.Layout.Slot + uint64(p.SlotOffset) }

// NewProbe decodes code (its first instruction is probed) at the sandbox
// address for codeOff.
func NewProbe(a *Arch, code []byte, codeOff, slotOff int) (*Probe, error) {
	p := &Probe{Arch: a, CodeOffset: codeOff, SlotOffset: slotOff}
	if err := decode.DecodeInto(&p.Inst, code, a.Mode, p.Addr()); err != nil {
		return nil, err
	}
	return p, nil
}

// RefCase is the instruction run in place from trial t.
func (p *Probe) RefCase(t *Trial) Case {
	return Case{Code: p.Inst.Bytes(), CodeOffset: p.CodeOffset, Regs: t.Regs, Scratch: t.Scratch, Stack: t.Stack}
}

// HitCase is the simulated kprobe hit on path from trial t: the int3 trap and
// an empty pre-handler (no architectural effect), then
//   - PathBoost: the slot (BuildSlot) runs and jumps back to addr+len;
//   - PathSingleStep: the slot runs up to its int3 (the result is fixed up by
//     FixHit: IP moved from the slot back to addr+len);
//   - PathEmulate: Emulate6_1 computes the handler's result, and the case
//     resumes there (a jump from the slot to the resumed IP, with the
//     emulated registers and stack).
//
// slot overrides the slot image for boost and single-step (nil: BuildSlot).
func (p *Probe) HitCase(path Path, slot []byte, t *Trial) (Case, error) {
	c := p.RefCase(t)
	c.SlotOffset = p.SlotOffset
	c.EntrySlot = true
	switch path {
	case PathBoost, PathSingleStep:
		if slot == nil {
			var err error
			if slot, err = BuildSlot(&p.Inst, p.SlotAddr(), path); err != nil {
				return c, err
			}
		}
		c.Slot = slot
	case PathEmulate:
		regs, stack, err := p.Arch.Emulate6_1(&p.Inst, t.Regs, t.Stack)
		if err != nil {
			return c, err
		}
		c.Regs, c.Stack = regs, stack
		c.Slot = p.Arch.absJmp(p.SlotAddr(), regs.PC)
	default:
		return c, ErrNoSlot
	}
	return c, nil
}

// absJmp encodes a jump from at to any address: jmp *0(%rip) + the 64-bit
// target on x86-64, jmp rel32 (wrapping) on i386.
func (a *Arch) absJmp(at, to uint64) []byte {
	if a.PtrSize() == 4 {
		b := []byte{0xE9, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(b[1:], uint32(to-(at+5)))
		return b
	}
	b := []byte{0xFF, 0x25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint64(b[6:], to)
	return b
}

// FixHit applies the kernel's resume fixup to the result of a single-step
// HitCase: the int3 after the copy traps with IP = slot+len+1; the kernel
// moves IP back to addr+len and returns, so the case continues exactly where
// the in-place run does (the return stub) and counts as completed. Other
// outcomes are left alone.
func (p *Probe) FixHit(path Path, r *Result) {
	if path != PathSingleStep || r.Outcome != Faulted || r.Fault.Signal != SIGTRAP {
		return
	}
	if r.Regs.PC != p.SlotAddr()+uint64(p.Inst.Len)+1 {
		return
	}
	r.Outcome = Completed
	r.Fault = Fault{}
	r.Regs.PC = p.Inst.End()
}

// CompareHit compares the in-place result ref with the simulated hit cand of
// c. A reference that stopped on something user mode cannot run gives
// NotVerifiable: a system call (trapped), or #GP of a privileged instruction
// (the emulated cli/sti included: the hit never runs them on the CPU). Any
// other fault, #GP of a non-canonical address included, is compared as a
// fault.
func (p *Probe) CompareHit(path Path, c *Case, ref, cand *Result) Diff {
	priv := p.Inst.Privileged
	if b0, _ := kernelOpcode(&p.Inst); path == PathEmulate && (b0 == 0xFA || b0 == 0xFB) {
		priv = true
	}
	if ref.Outcome == Faulted && ref.Fault.NotVerifiableInUserMode() && (priv || ref.Fault.Signal == SIGSYS) {
		return Diff{Verdict: NotVerifiable, Fields: []string{ref.Fault.String()}}
	}
	// Memory below the stack pointer is not live state (the i386 runner
	// enters a case through it): compare the stack from the lower of the
	// two final stack pointers up.
	a := p.Arch
	lo := uint64(StackSize)
	for _, sp := range []uint64{ref.Regs.GPR[rSP], cand.Regs.GPR[rSP]} {
		if sp >= a.Layout.Stack && sp-a.Layout.Stack < lo {
			lo = sp - a.Layout.Stack
		}
	}
	r2, c2 := *ref, *cand
	r2.Stack, c2.Stack = nil, nil
	for _, r := range []*Result{&r2, &c2} {
		if r.Outcome == Faulted && r.Fault.Signal == SIGSEGV && r.Fault.Code == SIKernel {
			r.Fault.Code = -1 // a #GP compared as a fault, not as "not verifiable"
		}
	}
	d := a.Compare(&r2, &c2, c.SlotPCMap(a.Layout))
	if len(ref.Stack) == StackSize && len(cand.Stack) == StackSize && d.Verdict != NotVerifiable && d.Verdict != Inconclusive {
		for i := lo; i < StackSize; i++ {
			if ref.Stack[i] != cand.Stack[i] {
				d.Fields = append(d.Fields, fmt.Sprintf("stack+%#x", i&^7))
				d.Verdict = Diverged
				break
			}
		}
	}
	return d
}

// CheckHit runs p in place and through the hit on path for every trial on b
// (in one batch) and compares them. Both runs have the hit's slot page
// mapped with the same contents; only the in-place run does not enter it.
func CheckHit(b Backend, p *Probe, path Path, slot []byte, trials []Trial) ([]HitCheck, error) {
	return CheckModel(b, p, path, slot, trials)
}

func (p *Probe) ComparePath(path Path, c *Case, ref, cand *Result) Diff {
	return p.CompareHit(path, c, ref, cand)
}
