//go:build linux

package gdbserial

import (
	"fmt"
	"github.com/kboost/kboost/kernelsim"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

func newTestGDBThumb(t *testing.T) *GDB {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-arm-static)")
	}
	g, err := New(kernelsim.Thumb, kernelsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestThumbBackend checks the Thumb sandbox against what the architecture
// says: T16 and T32 arithmetic, the return stub at both halfword
// alignments, a fault, an IT block, code that runs off into the filler.
func TestThumbBackend(t *testing.T) {
	g := newTestGDBThumb(t)
	a := kernelsim.Thumb
	rng := rand.New(rand.NewPCG(3, 4))
	var tr kernelsim.Trial
	a.RandomTrialA32(rng, &tr)
	tr.Regs.GPR[1], tr.Regs.GPR[2] = 0x1234, 0x4321
	tr.Regs.GPR[3] = 4 // unmapped
	tr.Regs.Flags = 0  // Z clear
	mk := func(code []byte) kernelsim.Case {
		return kernelsim.Case{Code: code, CodeOffset: 0x100, Regs: tr.Regs, Scratch: tr.Scratch, Stack: tr.Stack}
	}
	o := a.Layout.Orig + 0x100
	cases := []kernelsim.Case{
		mk(kernelsim.T32Halves(0x1888)),                   // adds r0, r1, r2
		mk(kernelsim.T32Bytes(0xEB010002)),                // add.w r0, r1, r2
		mk(kernelsim.T32Halves(0x6818)),                   // ldr r0, [r3]: SIGSEGV at 4
		mk(kernelsim.T32Halves(0xBF08, 0x2001)),           // it eq; moveq r0, #1 (Z clear: skipped)
		mk(kernelsim.T32Halves(0xBF18, 0x2001)),           // it ne; movne r0, #1
		mk(kernelsim.T32Halves(0xE7FF, 0xE7FE, 0xE7FE)),   // b.n .+2, landing on b.n . (loops: timed out)
		mk(kernelsim.T32Halves(0xE004)),                   // b.n .+12: past the stub, into the filler
		mk(kernelsim.T32Halves(kernelsim.T32Nop, 0xA000)), // nop; adr r0, .+4 (aligned)
	}
	res := make([]kernelsim.Result, len(cases))
	if err := g.Run(cases, res); err != nil {
		t.Fatal(err)
	}
	if r := res[0]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != 0x5555 || r.Regs.PC != o+2 {
		t.Errorf("adds: %v r0=%#x pc=%#x %v", r.Outcome, r.Regs.GPR[0], r.Regs.PC, r.Fault)
	}
	if r := res[1]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != 0x5555 || r.Regs.PC != o+4 {
		t.Errorf("add.w: %v r0=%#x pc=%#x %v", r.Outcome, r.Regs.GPR[0], r.Regs.PC, r.Fault)
	}
	if r := res[2]; r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGSEGV || r.Fault.Addr != 4 || r.Regs.PC != o {
		t.Errorf("ldr r0, [r3]: %v %v pc=%#x", r.Outcome, r.Fault, r.Regs.PC)
	}
	if r := res[3]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != tr.Regs.GPR[0] {
		t.Errorf("it eq; moveq: %v r0=%#x, want unchanged %#x", r.Outcome, r.Regs.GPR[0], tr.Regs.GPR[0])
	}
	if r := res[4]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != 1 {
		t.Errorf("it ne; movne: %v r0=%#x, want 1", r.Outcome, r.Regs.GPR[0])
	}
	if r := res[5]; r.Outcome != kernelsim.TimedOut {
		t.Errorf("loop: %v, want timed out", r.Outcome)
	}
	if r := res[6]; r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGILL {
		t.Errorf("into the filler: %v %v pc=%#x", r.Outcome, r.Fault, r.Regs.PC)
	}
	if r := res[7]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != o+4 {
		t.Errorf("adr r0, .+4 at %#x: %v r0=%#x", o+2, r.Outcome, r.Regs.GPR[0])
	}
}

// TestThumbDifferential checks linux-6.1-thumb's hits against the in-place
// run, with expectations from the architecture: the kernel's emulation and
// simulation agree with the instruction; PC-relative instructions run
// verbatim from a slot do not.
func TestThumbDifferential(t *testing.T) {
	g := newTestGDBThumb(t)
	a := kernelsim.Thumb
	pol, err := boost.Lookup("linux-6.1-thumb")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	ts := make([]kernelsim.Trial, 6)
	for i := range ts {
		a.RandomTrialA32(rng, &ts[i])
	}
	for i := range ts {
		ts[i].Regs.GPR[1] &^= 3 // LDM/STM through r1: aligned (the kernel's alignment fix-up is not modelled)
	}
	ts[0].Regs.GPR[3] = 8 // a load through r3 faults in one state
	ts[1].Regs.GPR[0] = 0 // cbz taken in one state
	ts[2].Regs.GPR[0] = 2 // a small table index
	for _, c := range []struct {
		w    uint32
		pre  int
		it   uint16
		path kernelsim.Path // PathNone: the policy's
		want kernelsim.Verdict
		why  string
	}{
		{0x1888, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "adds r0, r1, r2 (loregs, flags)"},
		{0x1888, 2, 0xBF08, kernelsim.PathNone, kernelsim.Equivalent, "it eq; addeq r0, r1, r2: no flags in an IT block (noitrwflags)"},
		{0x1888, 0, 0, kernelsim.PathBoost, kernelsim.Equivalent, "adds r0, r1, r2 run verbatim out of line"},
		{0xEB010002, 2, 0, kernelsim.PathNone, kernelsim.Equivalent, "add.w r0, r1, r2 (renamed to r1, r2, r3)"},
		{0xEB110F02, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "cmn.w r1, r2: flags written back"},
		{0xFB01F002, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "mul r0, r1, r2"},
		{0xFBA10102, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "umull r0, r1, r1, r2"},
		{0xF2AF0004, 2, 0, kernelsim.PathNone, kernelsim.Equivalent, "adr.w r0, .-0: rn = Align(addr+4, 4)"},
		{0xF2AF0004, 2, 0, kernelsim.PathBoost, kernelsim.Diverged, "adr.w from a slot reads the slot's PC"},
		{0x6818, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldr r0, [r3]: faults alike"},
		{0xF8530B04, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldr.w r0, [r3], #4: base written back"},
		{0xE9C10102, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "strd r0, r1, [r1, #8]"},
		{0xA001, 2, 0, kernelsim.PathNone, kernelsim.Equivalent, "adr r0, .+8 (simulated)"},
		{0xA001, 2, 0, kernelsim.PathBoost, kernelsim.Diverged, "adr r0 from a slot"},
		{0x4801, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldr r0, [pc, #4] (simulated: reads the code page)"},
		{0x4801, 2, 0xBF18, kernelsim.PathNone, kernelsim.Equivalent, "it ne; ldrne r0, [pc, #4]"},
		{0xF8DF0004, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldr.w r0, [pc, #4]"},
		{0x9801, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldr r0, [sp, #4] (simulated)"},
		{0x9101, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "str r1, [sp, #4] (simulated)"},
		{0xB082, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "sub sp, #8"},
		{0xB510, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "push {r4, lr} (stmdb r9!)"},
		{0xBC13, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "pop {r0, r1, r4}"},
		{0x4688, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "mov r8, r1 (hireg)"},
		{0x4478, 2, 0, kernelsim.PathNone, kernelsim.Equivalent, "add r0, pc (hireg, pc = addr+4)"},
		{0xB110, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "cbz r0, .+8"},
		{0xE002, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "b.n .+8"},
		{0xD002, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "beq.n .+8"},
		{0xF000F802, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "bl .+8"},
		{0xF000F802, 0, 0, kernelsim.PathBoost, kernelsim.Diverged, "bl from a slot: lr and target from the slot"},
		{0xE8DFF000, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "tbb [pc, r0]"},
		{0xF3EF8000, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "mrs r0, apsr"},
		{0x4770, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "bx lr (to ARM state at an even lr)"},
		{0xBF00, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "nop"},
		{0xC806, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldmia r0!, {r1, r2} (loregs)"},
		{0xE891000C, 2, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldmia.w r1, {r2, r3}: the r0..r12 window"},
		{0xE92D4010, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "push.w {r4, lr}: the r2..r14 window"},
		{0xE8B1400C, 0, 0, kernelsim.PathNone, kernelsim.Equivalent, "ldmia.w r1!, {r2, r3, lr}: simulated"},
		{0xE8BD0030, 2, 0xBF28, kernelsim.PathNone, kernelsim.Equivalent, "it cs; pop.w {r4, r5}"},
	} {
		p := &kernelsim.A32Probe{Arch: a, Word: c.w, CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset, Pre: c.pre, IT: c.it}
		d := pol.ClassifyBytesEnv(kernelsim.T32Bytes(c.w), decode.ModeT32, p.Addr(), pol.DefaultEnv())
		p.Action = kernelsim.A32Action(d.ReasonIDs())
		path := kernelsim.PathOf(&d)
		if c.path != kernelsim.PathNone {
			path = c.path
		}
		if path == kernelsim.PathSingleStep {
			if probs := kernelsim.VerifySlotT32(c.w, d.SlotBytes()); len(probs) > 0 {
				t.Errorf("%s: slot % x: %v", c.why, d.SlotBytes(), probs)
			}
		}
		hc, err := kernelsim.CheckHitA32(g, p, path, d.SlotBytes(), ts)
		if err != nil {
			t.Errorf("%s: %v (%v %v)", c.why, err, d.Verdict, d.ReasonIDs())
			continue
		}
		wantHitVerdict(t, hc, c.want, fmt.Sprintf("%s (%s, %v, %s)", c.why, kernelsim.T32Hex(c.w), path, p.Action))
	}
}
