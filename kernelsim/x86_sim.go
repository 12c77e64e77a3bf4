package kernelsim

import (
	"errors"
	"fmt"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
)

func init() {
	x86 := func(ka *Arch, kernelText func(uint64) bool) *simArch {
		return &simArch{ka: ka, sim: simulateX86, random: (*Arch).RandomTrial, flags: []string{"flags"}, kernelText: kernelText}
	}
	simArches[decode.X86_64] = x86(X86_64, func(at uint64) bool { return at >= 0xffffffff80000000 })
	simArches[decode.I386] = x86(I386, nil)
}

// simulateX86 is Simulate for x86-64 and i386: the slot model at the
// user's addresses (the copy with its RIP-relative displacement rebased,
// then jmp back or int3), then the instruction run on the CPU in place and
// through the hit; linux-2.6.17-i386 replays the lazy booster's three hits.
func simulateX86(r *simRun) error {
	code, mode, pol, env, addr, slotAddr := r.code, r.arch.Mode, r.pol, r.env, r.o.Addr, r.o.SlotAddr
	a, rep := r.a, r.rep
	rep.Config = preemptionConfig(env)
	// the model at the user's addresses
	m, err := NewSlotModel(Site{Code: code, Mode: mode, Addr: addr, SlotAddr: slotAddr, Policy: pol, Env: env})
	var re *SlotRangeError
	switch {
	case errors.As(err, &re):
		rep.RangeError = re.Error()
	case err != nil:
		return err
	}
	in := m.Inst
	rep.Bytes = jsonv.Hex(in.Bytes())
	rep.Asm = decode.Format(&in, nil)
	path := r.decided(&m.Decision, m.Path)
	lazy := pol.Name == "linux-2.6.17-i386"
	slot := m.Slot
	if path != m.Path || lazy {
		slot = nil
		if path == PathBoost || path == PathSingleStep {
			s, err := BuildSlot(&in, slotAddr, path)
			if errors.As(err, &re) {
				rep.RangeError = re.Error()
			} else if err == nil {
				slot = s
				mm := *m
				mm.Slot, mm.Path, mm.Problems = s, path, nil
				m.Problems = mm.Verify()
			}
		}
	}
	rep.Problems = m.Problems
	if slot != nil {
		rep.SlotHex = jsonv.Hex(slot)
		for off := 0; off < len(slot); {
			var si decode.Inst
			err := decode.DecodeInto(&si, slot[off:], mode, slotAddr+uint64(off))
			l := max(si.Len, 1)
			line := SimSlotLine{Off: off, Bytes: jsonv.Hex(slot[off : off+l]), Asm: "(bad)"}
			if err == nil {
				line.Asm = decode.Format(&si, nil)
			}
			switch {
			case off == 0 && in.RIPRel:
				line.Note = fmt.Sprintf("RIP-relative displacement rebased %#x -> %#x: same target %#x", in.Disp, si.Disp, in.End()+uint64(in.Disp))
			case off == in.Len && si.Branch == decode.BranchJmp:
				line.Note = fmt.Sprintf("jmp back to addr+len = %#x", si.Target)
				rep.JumpBack = hexAddr(si.Target)
			case off == in.Len && slot[off] == 0xCC:
				line.Note = "int3: second trap; the handler moves IP back to addr+len"
			}
			rep.Slot = append(rep.Slot, line)
			off += l
		}
	}
	// execution in the sandbox
	// a few cases only: let a long loop run until the watchdog (200 ms of
	// CPU), not the fuzzer's short case limit
	o := r.o.Backend
	o.CaseTimeout = time.Second
	sb, err := OpenBackend(a, o)
	if err != nil {
		return err
	}
	defer sb.Close()
	codeOff, slotOff := pageOffsets(addr, slotAddr)
	p, err := NewProbe(a, code, codeOff, slotOff)
	if err != nil {
		return err
	}
	rep.Sandbox = fmt.Sprintf("code at %#x, slot at %#x", p.Addr(), p.SlotAddr())
	if sb.Emulator() != "" {
		rep.Sandbox += ", executed by " + sb.Emulator()
	} else {
		rep.Sandbox += ", executed on the CPU"
	}
	r.begin()
	switch {
	case lazy && !rep.Forced:
		lz := NewLazyReplay(p)
		r.prog.SetTotal(3 * r.o.Trials)
		for hit := 1; hit <= 3 && !r.st.Interrupted; hit++ {
			h, err := lz.Begin()
			if err != nil {
				return err
			}
			err = r.run(hit, h.Path.String(), func(ts []Trial) ([]HitCheck, error) { return lz.Run(sb, ts) })
			if err != nil {
				return err
			}
			h = lz.End()
			rep.Lazy = append(rep.Lazy, fmt.Sprintf("hit %d: %v, boostable %v -> %v, jmp back at slot+%d", hit, h.Path, h.Before, h.After, h.JmpAt))
		}
	case path == PathNone:
		r.refused(&m.Decision)
		return nil
	case rep.RangeError != "":
		rep.Conclusion = "refused: the RIP-relative operand is out of reach of the slot"
		return nil
	default:
		return r.runOne(path, cpuWords, func(ts []Trial) ([]HitCheck, error) {
			return CheckHit(sb, p, path, nil, ts)
		})
	}
	r.conclude(path, cpuWords)
	return nil
}
