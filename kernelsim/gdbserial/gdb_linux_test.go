//go:build linux

package gdbserial

import (
	"encoding/binary"
	"github.com/kboost/kboost/kernelsim"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// newTestGDB opens the ARM64 emulator backend for an oracle test.
func newTestGDB(t *testing.T, mode GDBMode) *GDB {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-aarch64-static)")
	}
	g, err := NewMode(kernelsim.ARM64, kernelsim.Options{}, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// TestA64Differential checks the ARM64 backend and the hit model against
// what the architecture says each instruction does, in place and through a
// boosted, single-stepped or simulated hit.
func TestA64Differential(t *testing.T) {
	for _, m := range []GDBMode{GDBDetached, GDBAttached} {
		t.Run(m.String(), func(t *testing.T) { testA64Differential(t, newTestGDB(t, m)) })
	}
}

func testA64Differential(t *testing.T, g *GDB) {
	a := kernelsim.ARM64
	rng := rand.New(rand.NewPCG(7, 7))
	ts := make([]kernelsim.Trial, 4)
	for i := range ts {
		a.RandomTrialA64(rng, &ts[i])
	}
	ts[0].Regs.GPR[3] = 5 // a small value: a load through it faults
	for _, c := range []struct {
		w    uint32
		path kernelsim.Path
		want kernelsim.Verdict
		why  string
	}{
		{0x8b020020, kernelsim.PathBoost, kernelsim.Equivalent, "add x0, x1, x2: no PC use"},
		{0x8b020020, kernelsim.PathSingleStep, kernelsim.Equivalent, "add x0, x1, x2 single-stepped: BRK #6 then PC = addr+4"},
		{0xd28000a0, kernelsim.PathSingleStep, kernelsim.Equivalent, "mov x0, #5 single-stepped"},
		{0x10000000, kernelsim.PathBoost, kernelsim.Diverged, "adr x0, .: reads the PC"},
		{0x10000000, kernelsim.PathEmulate, kernelsim.Equivalent, "adr x0, . simulated"},
		{0x94000002, kernelsim.PathBoost, kernelsim.Diverged, "bl .+8: link register and target from the slot"},
		{0x94000002, kernelsim.PathEmulate, kernelsim.Equivalent, "bl .+8 simulated"},
		{0xf9400020, kernelsim.PathBoost, kernelsim.Equivalent, "ldr x0, [x1]: load through a scratch pointer"},
		{0xf9400060, kernelsim.PathBoost, kernelsim.Equivalent, "ldr x0, [x3]: faults alike (x3 small in one state)"},
		{0xf9000020, kernelsim.PathBoost, kernelsim.Equivalent, "str x0, [x1]"},
		{0xa9bf07e0, kernelsim.PathBoost, kernelsim.Equivalent, "stp x0, x1, [sp, #-16]!"},
		{0x58000020, kernelsim.PathBoost, kernelsim.Diverged, "ldr x0, .+4 (literal): reads the words after itself"},
		{0xeb01003f, kernelsim.PathBoost, kernelsim.Equivalent, "cmp x1, x1: flags"},
		{0x9e670020, kernelsim.PathBoost, kernelsim.Equivalent, "fmov d0, x1"},
		{0x5c000043, kernelsim.PathSingleStep, kernelsim.Diverged, "ldr d3, .+8 (SIMD&FP literal) stepped in the slot, as 6.1 does: reads the slot page"},
		{0x00000000, kernelsim.PathBoost, kernelsim.NotVerifiable, "udf #0: undefined at EL0"},
		{0xd4000001, kernelsim.PathBoost, kernelsim.NotVerifiable, "svc #0: never run (system call)"},
	} {
		p := &kernelsim.A64Probe{Arch: a, Word: c.w, CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
		hc, err := kernelsim.CheckHitA64(g, p, c.path, nil, ts)
		if err != nil {
			t.Fatalf("%s: %v", c.why, err)
		}
		ds := make([]kernelsim.Diff, len(hc))
		for i := range hc {
			ds[i] = hc[i].Diff
		}
		if v := kernelsim.Summarize(ds); v != c.want {
			t.Errorf("%s (%v): %v, want %v: %v", c.why, c.path, v, c.want, ds)
		}
		// the architecture's results, checked on the in-place runs
		for i, h := range hc {
			r, tr := &h.RefR, &ts[i]
			switch c.w {
			case 0x8b020020:
				if r.Outcome != kernelsim.Completed || r.Regs.GPR[0] != tr.Regs.GPR[1]+tr.Regs.GPR[2] || r.Regs.PC != p.Addr()+4 {
					t.Errorf("add: %v x0=%#x pc=%#x", r.Outcome, r.Regs.GPR[0], r.Regs.PC)
				}
			case 0x10000000:
				if r.Regs.GPR[0] != p.Addr() || h.HitR.Regs.GPR[0] != p.Addr() && c.path == kernelsim.PathEmulate {
					t.Errorf("adr x0, .: x0=%#x, hit %#x, want %#x", r.Regs.GPR[0], h.HitR.Regs.GPR[0], p.Addr())
				}
			case 0xf9400020:
				off := tr.Regs.GPR[1] - a.Layout.Scratch
				if want := binary.LittleEndian.Uint64(tr.Scratch[off:]); r.Regs.GPR[0] != want {
					t.Errorf("ldr x0, [x1]: %#x, want %#x", r.Regs.GPR[0], want)
				}
			case 0xf9400060:
				if tr.Regs.GPR[3] < 16 && (r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGSEGV || r.Fault.Addr != tr.Regs.GPR[3]) {
					t.Errorf("ldr x0, [x3] with x3=%d: %v %v", tr.Regs.GPR[3], r.Outcome, r.Fault)
				}
			case 0xf9000020:
				off := tr.Regs.GPR[1] - a.Layout.Scratch
				if got := binary.LittleEndian.Uint64(r.Scratch[off:]); got != tr.Regs.GPR[0] {
					t.Errorf("str x0, [x1]: memory %#x, want %#x", got, tr.Regs.GPR[0])
				}
			case 0xa9bf07e0:
				sp := tr.Regs.GPR[kernelsim.A64RegSP] - 16
				off := sp - a.Layout.Stack
				if r.Regs.GPR[kernelsim.A64RegSP] != sp || binary.LittleEndian.Uint64(r.Stack[off:]) != tr.Regs.GPR[0] || binary.LittleEndian.Uint64(r.Stack[off+8:]) != tr.Regs.GPR[1] {
					t.Errorf("stp pre-index: sp %#x", r.Regs.GPR[kernelsim.A64RegSP])
				}
			case 0x9e670020:
				if binary.LittleEndian.Uint64(r.Vec) != tr.Regs.GPR[1] {
					t.Errorf("fmov d0, x1: d0 %x, want %#x", r.Vec[:8], tr.Regs.GPR[1])
				}
			case 0xeb01003f:
				if r.Regs.Flags != kernelsim.FlagZ|kernelsim.FlagC {
					t.Errorf("cmp x1, x1: NZCV %#x, want Z and C", r.Regs.Flags)
				}
			case 0x94000002:
				// bl .+8 lands on the UDF filler two words on
				if r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGILL || r.Regs.PC != p.Addr()+8 || r.Regs.GPR[30] != p.Addr()+4 {
					t.Errorf("bl .+8: %v %v pc=%#x x30=%#x", r.Outcome, r.Fault, r.Regs.PC, r.Regs.GPR[30])
				}
			}
		}
	}
	// FP/SIMD state at a fault comes from the signal frame: fmov d0, x1
	// then UDF
	c := kernelsim.Case{Code: kernelsim.A64Bytes(0x9e670020, 0), CodeOffset: kernelsim.FuzzCodeOffset, Regs: ts[1].Regs, NoMemory: true}
	rs := make([]kernelsim.Result, 1)
	if err := g.Run([]kernelsim.Case{c}, rs); err != nil {
		t.Fatal(err)
	}
	if rs[0].Outcome != kernelsim.Faulted || rs[0].Fault.Signal != kernelsim.SIGILL || rs[0].Regs.PC != c.CodeAddr(a.Layout)+4 ||
		len(rs[0].Vec) < 8 || binary.LittleEndian.Uint64(rs[0].Vec) != ts[1].Regs.GPR[1] {
		t.Errorf("fmov; udf: %v %v pc=%#x vec %x, want d0 = %#x", rs[0].Outcome, rs[0].Fault, rs[0].Regs.PC, rs[0].Vec[:min(8, len(rs[0].Vec))], ts[1].Regs.GPR[1])
	}
	// a case that never ends is stopped by the watchdog
	p := &kernelsim.A64Probe{Arch: a, Word: 0x14000000, CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
	hc, err := kernelsim.CheckHitA64(g, p, kernelsim.PathBoost, nil, ts[:1])
	if err != nil || hc[0].RefR.Outcome != kernelsim.TimedOut || hc[0].Diff.Verdict != kernelsim.Inconclusive {
		t.Errorf("b .: %v %v", hc, err)
	}
	// and the backend still works afterwards
	p.Word = 0x8b020020
	if hc, err := kernelsim.CheckHitA64(g, p, kernelsim.PathBoost, nil, ts[:1]); err != nil || hc[0].Diff.Verdict != kernelsim.Equivalent {
		t.Errorf("after the timeout: %v %v", hc, err)
	}
}

// TestGDBStubAccess uses the RSP client's register and memory requests on
// the live stub while the runner waits on its idle BRK.
func TestGDBStubAccess(t *testing.T) {
	g := newTestGDB(t, GDBAttached)
	regs, err := g.conn.readRegs()
	if err != nil {
		t.Fatal(err)
	}
	// aarch64 'g' block: x0..x30, sp, pc (8 bytes each), cpsr (4)
	if len(regs) < 33*8+4 {
		t.Fatalf("g block of %d bytes", len(regs))
	}
	pc := binary.LittleEndian.Uint64(regs[32*8:])
	w, err := g.conn.readMem(pc, 4)
	if err != nil || binary.LittleEndian.Uint32(w)&0xFFE0001F != 0xD4200000 {
		t.Errorf("the runner waits at %#x on %x, want a BRK (%v)", pc, w, err)
	}
	if err := g.conn.writeMem(kernelsim.ARM64.Layout.Scratch, []byte{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	if m, err := g.conn.readMem(kernelsim.ARM64.Layout.Scratch, 4); err != nil || string(m) != "\x01\x02\x03\x04" {
		t.Errorf("scratch read back %x %v", m, err)
	}
	if m, err := g.conn.readMem(g.t.data, 8); err != nil || binary.LittleEndian.Uint64(m) != binary.LittleEndian.Uint64(g.data) {
		t.Errorf("shared memory seen by the stub %x, by kboost %x (%v)", m, g.data[:8], err)
	}
	if err := g.conn.writeRegs(regs); err != nil {
		t.Errorf("G with the registers read: %v", err)
	}
	// a software breakpoint on the first launch-table entry, then a step of
	// the BRK the runner waits on: a SIGTRAP stop
	if err := g.conn.setBreak(g.r.launchOrig, true, 4); err != nil {
		t.Errorf("Z0: %v", err)
	}
	if err := g.conn.setBreak(g.r.launchOrig, false, 4); err != nil {
		t.Errorf("z0: %v", err)
	}
	if err := g.conn.resume(true, 0); err != nil {
		t.Fatal(err)
	}
	if st, err := g.conn.wait(time.Now().Add(5 * time.Second)); err != nil || st.Kind != StopSignal || st.Signal != 5 {
		t.Errorf("step of the BRK: %+v %v", st, err)
	}
	var pcReg *TargetReg
	for i := range g.TargetRegs {
		if g.TargetRegs[i].Name == "pc" {
			pcReg = &g.TargetRegs[i]
		}
	}
	if pcReg == nil || pcReg.Num != 32 || pcReg.Bits != 64 {
		t.Errorf("target description pc: %+v", pcReg)
	}
}

// BenchmarkGDBChecks measures differential checks (an add run in place and
// from its boosted slot, random states with scratch and stack pages) per
// second on the ARM64 emulator backend, in both modes.
func BenchmarkGDBChecks(b *testing.B) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		b.Skip("set KBOOST_ORACLE=1 (runs qemu-aarch64-static)")
	}
	for _, m := range []GDBMode{GDBDetached, GDBAttached} {
		b.Run(m.String(), func(b *testing.B) {
			g, err := NewMode(kernelsim.ARM64, kernelsim.Options{}, m)
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			rng := rand.New(rand.NewPCG(1, 1))
			ts := make([]kernelsim.Trial, 64)
			for i := range ts {
				kernelsim.ARM64.RandomTrialA64(rng, &ts[i])
			}
			words := []uint32{0x8b020020, 0xf9400020, 0xa9bf07e0, 0x9e670020, 0xf9400060}
			b.ResetTimer()
			n := 0
			for i := 0; i < b.N; i++ {
				p := &kernelsim.A64Probe{Arch: kernelsim.ARM64, Word: words[i%len(words)], CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
				if _, err := kernelsim.CheckHitA64(g, p, kernelsim.PathBoost, nil, ts); err != nil {
					b.Fatal(err)
				}
				n += len(ts)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "checks/s")
		})
	}
}
