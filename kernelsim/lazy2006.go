package kernelsim

import (
	"encoding/binary"
	"fmt"

	"github.com/kboost/kboost/boost"
)

// LazyHit is one hit of a 2006 booster probe.
type LazyHit struct {
	Path   boost.HitPath
	Before boost.BoostState // state when the hit came
	After  boost.BoostState // state after it
	Slot   []byte           // what the hit executed
	JmpAt  int              // slot offset of the jmp back after the hit (-1: none)
	Checks []HitCheck
}

// Lazy2006 replays hits of a linux-2.6.17-i386 kprobe on p (the i386
// sandbox) with boost.Booster2006: while the state is not 1 a hit
// single-steps the copy (modelled by an int3 after it: the slot page is int3
// everywhere else, so a step ends with a trap at the next instruction) and
// resume_execution's fixups are applied (IP back to the original, the return
// address of a call); the first step of a candidate writes the jmp back, and
// later hits run the slot directly. Each hit is compared with the in-place
// run on every trial.
func Lazy2006(b Backend, p *Probe, hits int, trials []Trial) ([]LazyHit, error) {
	r := NewLazyReplay(p)
	var out []LazyHit
	for h := 0; h < hits; h++ {
		if _, err := r.Begin(); err != nil {
			return nil, err
		}
		hc, err := r.Run(b, trials)
		if err != nil {
			return nil, err
		}
		lh := r.End()
		lh.Checks = hc
		out = append(out, lh)
	}
	return out, nil
}

// LazyReplay is Lazy2006 one hit at a time, each hit checked on as many
// batches of trials as the caller streams through Run (so a long run's
// memory does not grow with its trials): Begin, Run..., End, per hit.
type LazyReplay struct {
	p       *Probe
	bs      *boost.Booster2006
	cur     LazyHit
	ipOff   uint64
	stepped bool
}

// NewLazyReplay starts the replay of a fresh probe on p (state: candidate).
func NewLazyReplay(p *Probe) *LazyReplay {
	return &LazyReplay{p: p, bs: boost.NewBooster2006(p.Inst.Bytes(), p.Addr(), p.SlotAddr())}
}

// Begin takes the next hit: its path, the booster's state before it and the
// slot it executes (Checks stays empty: Run returns them).
func (r *LazyReplay) Begin() (LazyHit, error) {
	bs := r.bs
	lh := LazyHit{Path: bs.Hit(boost.Config{}), Before: bs.State, JmpAt: -1}
	n := r.p.Inst.Len
	if lh.Path == boost.HitBoosted {
		if bs.JmpAt < 0 {
			return LazyHit{}, fmt.Errorf("kernelsim: 2006 state %v without a jmp", bs.State)
		}
		lh.Slot = append([]byte(nil), bs.Slot[:bs.JmpAt+jmpRel32Len]...)
	} else {
		lh.Slot = append(append([]byte(nil), bs.Slot[:n]...), 0xCC)
	}
	r.cur, r.ipOff, r.stepped = lh, 0, false
	return lh, nil
}

// Run checks trials (in one batch) through the current hit against the
// in-place run.
func (r *LazyReplay) Run(b Backend, trials []Trial) ([]HitCheck, error) {
	p, lh := r.p, &r.cur
	cases := make([]Case, 0, 2*len(trials))
	for i := range trials {
		ref := p.RefCase(&trials[i])
		hit := ref
		hit.Slot, hit.SlotOffset, hit.EntrySlot = lh.Slot, p.SlotOffset, true
		cases = append(cases, ref, hit)
	}
	res := make([]Result, len(cases))
	if err := b.Run(cases, res); err != nil {
		return nil, err
	}
	out := make([]HitCheck, 0, len(trials))
	for i := range trials {
		hc := HitCheck{Trial: trials[i], Ref: cases[2*i], Hit: cases[2*i+1], RefR: res[2*i], HitR: res[2*i+1]}
		if lh.Path == boost.HitSingleStep {
			if off, ok := p.fix2006(&hc.HitR); ok {
				r.ipOff, r.stepped = off, true
			}
		}
		hc.Diff = p.CompareHit(PathSingleStep, &hc.Hit, &hc.RefR, &hc.HitR)
		out = append(out, hc)
	}
	return out, nil
}

// End finishes the current hit: a single-step that ended in the slot lets
// the booster write its jmp back. It returns the hit with the state after it.
func (r *LazyReplay) End() LazyHit {
	if r.cur.Path == boost.HitSingleStep && r.stepped {
		r.bs.AfterStep(r.ipOff)
	}
	r.cur.After, r.cur.JmpAt = r.bs.State, r.bs.JmpAt
	return r.cur
}

// fix2006 is resume_execution after a single-step that ended on an int3 of
// the slot page at slot+off: the call return-address fixup, then IP moved
// back to the original code (for straight-line code, addr+len: the case then
// completes like the in-place run). It returns the step's end offset.
func (p *Probe) fix2006(r *Result) (uint64, bool) {
	s := p.SlotAddr()
	if r.Outcome != Faulted || r.Fault.Signal != SIGTRAP || r.Regs.PC <= s || r.Regs.PC > s+PageSize {
		return 0, false
	}
	off := r.Regs.PC - 1 - s
	if p.Inst.Raw[0] == 0xE8 || (p.Inst.Raw[0] == 0xFF && p.Inst.Raw[1]&0x30 == 0x10) {
		sp := r.Regs.GPR[rSP] - p.Arch.Layout.Stack
		if sp+4 <= uint64(len(r.Stack)) {
			tos := binary.LittleEndian.Uint32(r.Stack[sp:])
			binary.LittleEndian.PutUint32(r.Stack[sp:], uint32(p.Addr()+uint64(tos)-s))
		}
	}
	ip := p.Addr() + off
	if ip == p.Inst.End() {
		r.Outcome, r.Fault, r.Regs.PC = Completed, Fault{}, ip
	} else {
		r.Regs.PC = ip
	}
	return off, true
}
