//go:build linux

package gdbserial

import (
	"fmt"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/internal/killtest"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

func newTestGDB32(t *testing.T, o kernelsim.Options) *GDB {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-arm-static)")
	}
	g, err := New(kernelsim.ARM32, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestA32Backend checks the runner against what the architecture says:
// registers, flags, memory, faults, Thumb entry through an odd address.
func TestA32Backend(t *testing.T) {
	g := newTestGDB32(t, kernelsim.Options{})
	a := kernelsim.ARM32
	rng := rand.New(rand.NewPCG(3, 3))
	var tr kernelsim.Trial
	a.RandomTrialA32(rng, &tr)
	tr.Regs.GPR[1], tr.Regs.GPR[2] = 0x1234, 0x4321
	tr.Regs.GPR[3] = 4 // unmapped
	mk := func(code []byte, regs kernelsim.Regs) kernelsim.Case {
		return kernelsim.Case{Code: code, CodeOffset: 0x100, Regs: regs, Scratch: tr.Scratch, Stack: tr.Stack}
	}
	cases := []kernelsim.Case{
		mk(kernelsim.A64Bytes(0xe0810002), tr.Regs), // add r0, r1, r2
		mk(kernelsim.A64Bytes(0xe0910002), tr.Regs), // adds r0, r1, r2 (flags)
		mk(kernelsim.A64Bytes(0xe5930000), tr.Regs), // ldr r0, [r3]: SIGSEGV at 4
		mk(kernelsim.A64Bytes(0xe52d1004), tr.Regs), // push {r1}
		mk(kernelsim.A64Bytes(0xe24f0008), tr.Regs), // adr r0, . (sub r0, pc, #8)
	}
	// Thumb: mov r8, r8; adds r0, r1, r2; bx pc (back to ARM state at
	// addr+8, the A32 return stub); mov r8, r8 -- entered at an odd
	// address through a slot that jumps there
	th := kernelsim.Case{Code: []byte{0xc0, 0x46, 0x88, 0x18, 0x78, 0x47, 0xc0, 0x46}, CodeOffset: 0x200, Regs: tr.Regs, Scratch: tr.Scratch, Stack: tr.Stack,
		Slot: kernelsim.A64Bytes(kernelsim.A32LdrPC, uint32(a.Layout.Orig+0x200+1)), EntrySlot: true}
	cases = append(cases, th)
	res := make([]kernelsim.Result, len(cases))
	if err := g.Run(cases, res); err != nil {
		t.Fatal(err)
	}
	o := a.Layout.Orig + 0x100
	if r := res[0]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != 0x5555 || r.Regs.PC != o+4 || r.Regs.GPR[1] != 0x1234 {
		t.Errorf("add: %v r0=%#x pc=%#x", r.Outcome, r.Regs.GPR[0], r.Regs.PC)
	}
	if r := res[1]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != 0x5555 || r.Regs.Flags&0xF0000000 != 0 {
		t.Errorf("adds: %v r0=%#x flags=%#x (want NZCV clear)", r.Outcome, r.Regs.GPR[0], r.Regs.Flags)
	}
	if r := res[2]; r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGSEGV || r.Fault.Addr != 4 || r.Regs.PC != o {
		t.Errorf("ldr r0, [r3]: %v %v pc=%#x", r.Outcome, r.Fault, r.Regs.PC)
	}
	sp := tr.Regs.GPR[kernelsim.A32RegSP]
	if r := res[3]; r.Outcome != kernelsim.Completed || r.Regs.GPR[kernelsim.A32RegSP] != sp-4 || r.Stack[sp-4-a.Layout.Stack] != 0x34 {
		t.Errorf("push: %v sp=%#x", r.Outcome, r.Regs.GPR[kernelsim.A32RegSP])
	}
	if r := res[4]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != o {
		t.Errorf("adr r0, .: r0=%#x want %#x", r.Regs.GPR[0], o)
	}
	if r := res[5]; r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != 0x5555 || r.Regs.PC != a.Layout.Orig+0x208 {
		t.Errorf("thumb adds: %v r0=%#x pc=%#x %v", r.Outcome, r.Regs.GPR[0], r.Regs.PC, r.Fault)
	}
}

// TestA32Differential checks the kernel's hit (linux-6.1-arm's decision
// and slot) against the in-place run, with expectations from the
// architecture.
func TestA32Differential(t *testing.T) {
	g := newTestGDB32(t, kernelsim.Options{})
	a := kernelsim.ARM32
	pol, err := boost.Lookup("linux-6.1-arm")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	ts := make([]kernelsim.Trial, 4)
	for i := range ts {
		a.RandomTrialA32(rng, &ts[i])
	}
	ts[0].Regs.GPR[3] = 8 // a load through r3 faults in one state
	for _, c := range []struct {
		w    uint32
		path kernelsim.Path // PathNone: the policy's
		want kernelsim.Verdict
		why  string
	}{
		{0xe0810002, kernelsim.PathNone, kernelsim.Equivalent, "add r0, r1, r2 emulated in the slot"},
		{0xe0810002, kernelsim.PathBoost, kernelsim.Equivalent, "add r0, r1, r2 run verbatim out of line"},
		{0xe0910002, kernelsim.PathNone, kernelsim.Equivalent, "adds r0, r1, r2: flags written back"},
		{0x10810002, kernelsim.PathNone, kernelsim.Equivalent, "addne r0, r1, r2: the kernel skips when the condition fails"},
		{0xe24f0008, kernelsim.PathNone, kernelsim.Equivalent, "adr r0, .: the handler passes PC = addr+8"},
		{0xe24f0008, kernelsim.PathBoost, kernelsim.Diverged, "adr r0, . from a slot without the PC fix-up"},
		{0xe59f0004, kernelsim.PathNone, kernelsim.Equivalent, "ldr r0, [pc, #4] emulated with rn = addr+8"},
		{0xe59f0004, kernelsim.PathBoost, kernelsim.Diverged, "ldr r0, [pc, #4] from a slot reads the slot's neighbour"},
		{0xe5930000, kernelsim.PathNone, kernelsim.Equivalent, "ldr r0, [r3]: faults alike"},
		{0xe5a10004, kernelsim.PathNone, kernelsim.Equivalent, "str r0, [r1, #4]!: writeback"},
		{0xe52d1004, kernelsim.PathNone, kernelsim.Equivalent, "push {r1}"},
		{0xeb000002, kernelsim.PathNone, kernelsim.Equivalent, "bl .+16 simulated"},
		{0xeb000002, kernelsim.PathBoost, kernelsim.Diverged, "bl .+16 from a slot: lr and target from the slot"},
		{0xe0000291, kernelsim.PathNone, kernelsim.Equivalent, "mul r0, r1, r2"},
		{0xe0a10392, kernelsim.PathNone, kernelsim.Equivalent, "umlal r0, r1, r2, r3"},
		{0xe6ef0071, kernelsim.PathNone, kernelsim.Equivalent, "uxtb r0, r1"},
		{0xe1a0c00d, kernelsim.PathNone, kernelsim.Equivalent, "mov ip, sp simulated"},
		{0xe12fff1e, kernelsim.PathNone, kernelsim.Equivalent, "bx lr simulated"},
		{0xe891000c, kernelsim.PathNone, kernelsim.Equivalent, "ldmia r1, {r2, r3}: emulated in the r0..r12 window"},
		{0xe92d4010, kernelsim.PathNone, kernelsim.Equivalent, "push {r4, lr}: emulated in the r2..r14 window"},
		{0xe8b1400c, kernelsim.PathNone, kernelsim.Equivalent, "ldmia r1!, {r2, r3, lr}: simulated"},
		{0xe8818004, kernelsim.PathNone, kernelsim.Equivalent, "stmia r1, {r2, pc}: simulated, the PC stored is addr+8"},
	} {
		b := kernelsim.A64Bytes(c.w)
		addr := a.Layout.Orig + kernelsim.FuzzCodeOffset
		env := pol.DefaultEnv()
		d := pol.ClassifyBytesEnv(b, decode.ModeA32, addr, env)
		path := kernelsim.PathOf(&d)
		if c.path != kernelsim.PathNone {
			path = c.path
		}
		p := &kernelsim.A32Probe{Arch: a, Word: c.w, Action: kernelsim.A32Action(d.ReasonIDs()), CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
		hc, err := kernelsim.CheckHitA32(g, p, path, d.SlotBytes(), ts)
		if err != nil {
			t.Errorf("%s: %v (%v %v)", c.why, err, d.Verdict, d.ReasonIDs())
			continue
		}
		wantHitVerdict(t, hc, c.want, fmt.Sprintf("%s (%08x, %v, %s)", c.why, c.w, path, p.Action))
	}
}

// wantHitVerdict fails the test unless the checks fold (Summarize) to want,
// then showing both runs of each check; what names the case.
func wantHitVerdict(t *testing.T, hc []kernelsim.HitCheck, want kernelsim.Verdict, what string) {
	t.Helper()
	ds := hitDiffs(hc)
	if got := kernelsim.Summarize(ds); got != want {
		t.Errorf("%s: %v, want %v: %v", what, got, want, ds)
		for _, h := range hc {
			t.Logf("  ref %v pc=%#x %v / hit %v pc=%#x %v", h.RefR.Outcome, h.RefR.Regs.PC, h.RefR.Fault, h.HitR.Outcome, h.HitR.Regs.PC, h.HitR.Fault)
		}
	}
}

// TestHelperGDBFuzzLoopA32 is not a test: TestNoStrayEmulatorA32 runs it
// in a child process, which runs random A32 words under qemu-arm until it
// is killed.
func TestHelperGDBFuzzLoopA32(t *testing.T) {
	tag := os.Getenv("KBOOST_GDB_HELPER_A32")
	if tag == "" {
		t.Skip("helper process for TestNoStrayEmulatorA32")
	}
	g, err := New(kernelsim.ARM32, kernelsim.Options{Tag: tag})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	rng := rand.New(rand.NewPCG(1, 2))
	cases := make([]kernelsim.Case, 64)
	res := make([]kernelsim.Result, 64)
	var tr kernelsim.Trial
	for {
		for i := range cases {
			kernelsim.ARM32.RandomTrialA32(rng, &tr)
			cases[i] = kernelsim.Case{Code: kernelsim.A64Bytes(rng.Uint32()), CodeOffset: kernelsim.FuzzCodeOffset, Regs: tr.Regs, NoMemory: true}
		}
		if err := g.Run(cases, res); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
	}
}

// TestNoStrayEmulatorA32 kills a process running the ARM32 backend with
// SIGKILL mid-run, and closes one normally, and checks that no qemu-arm
// survives either.
func TestNoStrayEmulatorA32(t *testing.T) {
	g := newTestGDB32(t, kernelsim.Options{Tag: fmt.Sprintf("kboost-a32-close-%d", os.Getpid())})
	if n := len(killtest.TaggedProcs(fmt.Sprintf("kboost-a32-close-%d", os.Getpid()))); n != 1 {
		t.Fatalf("%d emulator processes, want 1", n)
	}
	g.Close()
	if left := killtest.TaggedProcs(fmt.Sprintf("kboost-a32-close-%d", os.Getpid())); len(left) != 0 {
		t.Fatalf("emulator survives Close: %q", left)
	}
	killtest.Rounds(t, 2, "TestHelperGDBFuzzLoopA32", "KBOOST_GDB_HELPER_A32", "kboost-stray-a32", 1, "emulator",
		func(round int) time.Duration { return time.Duration(100+200*round) * time.Millisecond })
}

// hitDiffs lists the checks' diffs.
func hitDiffs(hc []kernelsim.HitCheck) []kernelsim.Diff {
	ds := make([]kernelsim.Diff, len(hc))
	for i := range hc {
		ds[i] = hc[i].Diff
	}
	return ds
}
