//go:build linux && amd64

package ptprobe

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/x86gen"
	"github.com/kboost/kboost/kernelsim"
	ksnative "github.com/kboost/kboost/kernelsim/native"
)

// TestRelocationOnCPU is the property behind boost and jump: the code kboost
// writes runs, on this CPU, to the same registers, flags, memory and faults
// as the original in place. The oracle is kernelsim's ptrace sandbox: each
// case runs once in place and once patched as ptprobe patches it — a boost
// slot entered at the int3's resume point, or the jmp at the point into the
// jump trampoline — from random register, scratch and stack states. Inputs:
// x86gen's candidates the policy boosts, alone (boost) and in runs of two to
// four (jump: the trampoline's relocated copies).
func TestRelocationOnCPU(t *testing.T) {
	pol, err := boost.Lookup(PolicyName)
	if err != nil {
		t.Fatal(err)
	}
	a, err := kernelsim.ArchFor(decode.Mode64)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ksnative.New(a)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	l := a.Layout
	const codeOff, slotOff, ctrOff = 0x800, 0x400, 0x100
	g := x86gen.New(x86gen.Config{Seed: 15, Bits: 64})
	rng := rand.New(rand.NewPCG(15, 1))
	want := 20000
	if testing.Short() {
		want = 1000
	}
	addr := l.Orig + codeOff
	code, ctr := l.Slot+slotOff, l.Scratch+ctrOff
	var insts [][]byte
	// boostable candidates, as the policy decides them at the point
	for len(insts) < 6*want {
		c := g.Next(nil)
		var in decode.Inst
		if decode.DecodeInto(&in, c, decode.Mode64, addr) != nil {
			continue
		}
		d := pol.ClassifyBytesEnv(c, decode.Mode64, addr, Env(pol, code))
		if d.Verdict == boost.Boost {
			insts = append(insts, c[:in.Len])
		}
	}
	var stats struct{ boost, jump, fallback, faulted, checked, nondet int }
	var trial kernelsim.Trial
	for i := 0; stats.checked < want && i < len(insts); i++ {
		jump := i%2 == 1
		var fnb []byte
		if jump {
			for n := 2 + rng.IntN(3); n > 0 && i < len(insts); n-- {
				fnb = append(fnb, insts[i]...)
				i++
			}
		} else {
			fnb = append(fnb, insts[i]...)
		}
		body := append([]byte(nil), fnb...)
		fn := boost.Func{Name: "f", Addr: addr, Size: uint64(len(fnb) + 1), Bytes: append(fnb, 0xc3)}
		m := Boost
		if jump {
			m = Jump
		}
		s, err := Plan(pol, fn, 0, m, code, ctr)
		if err != nil {
			continue
		}
		if s.Mode != m || s.Displaced > len(body) {
			stats.fallback++
			continue
		}
		a.RandomTrial(rng, &trial)
		if jump {
			// the word the trampoline saves %rax to below the red zone
			// holds it already: code reading it sees the same
			if o := int(l.InitialSP()-l.Stack) - 0x88; o >= 0 {
				binary.LittleEndian.PutUint64(trial.Stack[o:], trial.Regs.GPR[0])
			}
		}
		ref := kernelsim.Case{Code: body, CodeOffset: codeOff, Regs: trial.Regs, Scratch: trial.Scratch, Stack: trial.Stack}
		cand := ref
		cand.Slot, cand.SlotOffset = s.Code, slotOff
		if jump {
			// The trampoline adds one to its counter before the copies run:
			// the in-place run starts with the counter one higher, so both
			// runs read the same value there and end with the same one.
			ref.Scratch = append([]byte(nil), trial.Scratch...)
			binary.LittleEndian.PutUint64(ref.Scratch[ctrOff:], binary.LittleEndian.Uint64(trial.Scratch[ctrOff:])+1)
			patched := append([]byte(nil), body...)
			copy(patched, s.Patch)
			cand.Code = patched
			stats.jump++
		} else {
			cand.EntrySlot = true // the int3 stop moved IP to the slot
			stats.boost++
		}
		res := make([]kernelsim.Result, 3)
		if err := sb.Run([]kernelsim.Case{ref, cand, ref}, res); err != nil {
			t.Fatal(err)
		}
		if a.Compare(&res[0], &res[2], nil).Verdict == kernelsim.Diverged {
			stats.nondet++ // rdtsc, rdrand...: the reference differs from itself
			continue
		}
		if res[0].Outcome == kernelsim.Faulted {
			stats.faulted++
		}
		d := a.Compare(&res[0], &res[1], pcMap(&s, fnb, code, addr))
		switch d.Verdict {
		case kernelsim.Diverged:
			t.Errorf("%v at % x (slot % x): %v\nin place: %+v\npatched:  %+v", s.Mode, body, s.Code, d, res[0].Fault, res[1].Fault)
		case kernelsim.Equivalent:
			stats.checked++
		}
	}
	t.Logf("%d checked on the CPU (%d boost slots, %d jump trampolines, %d faulting alike), %d fell back, %d nondeterministic", stats.checked, stats.boost, stats.jump, stats.faulted, stats.fallback, stats.nondet)
	if stats.checked < want {
		t.Errorf("only %d cases checked, want %d", stats.checked, want)
	}
}

// pcMap maps a PC in a slot or trampoline back to the instruction it runs
// a copy of (each copy keeps its length), for comparing faults.
func pcMap(s *Site, fnb []byte, code, addr uint64) func(uint64) uint64 {
	start := code
	if s.Mode == Jump {
		start += uint64(len(tramPre) + len(tramPost))
	}
	return func(pc uint64) uint64 {
		if pc >= start && pc < start+uint64(s.Displaced) || s.Mode == Boost && pc >= start && pc < start+uint64(s.Len) {
			return addr + pc - start
		}
		return pc
	}
}
