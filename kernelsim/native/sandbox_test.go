//go:build linux && amd64

package native

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// sandboxes opens a sandbox per way this host can execute each mode: x86-64
// on the CPU, i386 on the CPU where the kernel runs 32-bit code and always
// under qemu-i386-static (setup.sh installs it), so both i386 paths are
// tested where the host allows. The log says which ran.
func sandboxes(t *testing.T) []*Sandbox {
	t.Helper()
	var ss []*Sandbox
	for _, a := range testArches(t) {
		for _, o := range execOptions(t, a) {
			s, err := NewWithOptions(a, o)
			if err != nil {
				t.Fatalf("%s (--exec %v): %v", a.Name, o.Exec, err)
			}
			t.Cleanup(func() { s.Close() })
			ss = append(ss, s)
		}
	}
	return ss
}

// testArches are the modes the sandbox tests run: x86-64 and i386, or only
// those KBOOST_TEST_ARCHES names (a comma-separated list). Package vm's
// refusing-host guest sets i386: there "the CPU" of x86-64 cases is QEMU's
// TCG, which random x86-64 code makes abort (tcg fatal error), while i386
// runs under qemu-i386-static, which is what that guest tests.
func testArches(t testing.TB) []*kernelsim.Arch {
	t.Helper()
	all := []*kernelsim.Arch{kernelsim.X86_64, kernelsim.I386}
	names := os.Getenv("KBOOST_TEST_ARCHES")
	if names == "" {
		return all
	}
	var as []*kernelsim.Arch
	for _, a := range all {
		if slices.Contains(strings.Split(names, ","), a.Name) {
			as = append(as, a)
		} else {
			t.Logf("%s left out: KBOOST_TEST_ARCHES=%s", a.Name, names)
		}
	}
	return as
}

// execOptions are the execution backends of a to test on this host (see
// sandboxes), logged once per test.
func execOptions(t testing.TB, a *kernelsim.Arch) []kernelsim.Options {
	t.Helper()
	if a != kernelsim.I386 {
		return []kernelsim.Options{{Exec: kernelsim.ExecCPU}}
	}
	if err := NativeExec(a); err != nil {
		expectI386Exec(t, "qemu")
		t.Logf("i386: qemu-i386-static only: %v", err)
		return []kernelsim.Options{{Exec: kernelsim.ExecQEMU}}
	}
	expectI386Exec(t, "cpu")
	t.Logf("i386: on the CPU and under qemu-i386-static")
	return []kernelsim.Options{{Exec: kernelsim.ExecCPU}, {Exec: kernelsim.ExecQEMU}}
}

// expectI386Exec fails the test when KBOOST_EXPECT_I386_EXEC (cpu or qemu:
// what the host is known to allow, see TestExecAuto) is set and is not got,
// the path --exec auto takes here.
func expectI386Exec(t testing.TB, got string) {
	t.Helper()
	if want := os.Getenv("KBOOST_EXPECT_I386_EXEC"); want != "" && want != got {
		t.Fatalf("i386 --exec auto takes the %s path here, but KBOOST_EXPECT_I386_EXEC=%s", got, want)
	}
}

// sbName names a sandbox in subtests: the arch, and "-qemu" under an
// emulator.
func sbName(s *Sandbox) string {
	if s.Emulator() != "" {
		return s.Arch().Name + "-qemu"
	}
	return s.Arch().Name
}

func run1(t *testing.T, s *Sandbox, c kernelsim.Case) kernelsim.Result {
	t.Helper()
	r := make([]kernelsim.Result, 1)
	if err := s.Run([]kernelsim.Case{c}, r); err != nil {
		t.Fatal(err)
	}
	return r[0]
}

// pair runs c in place and through DirectSlot (or the given slot) and
// compares.
func pair(t *testing.T, s *Sandbox, c kernelsim.Case, slot []byte) (ref, cand kernelsim.Result, d kernelsim.Diff) {
	t.Helper()
	l := s.Arch().Layout
	o := c
	if slot != nil {
		o.Slot = slot
	} else if err := DirectSlot(&o, l); err != nil {
		t.Fatal(err)
	}
	o.EntrySlot = true
	r := make([]kernelsim.Result, 2)
	if err := s.Run([]kernelsim.Case{c, o}, r); err != nil {
		t.Fatal(err)
	}
	return r[0], r[1], s.Arch().Compare(&r[0], &r[1], o.SlotPCMap(l))
}

func baseRegs(a *kernelsim.Arch, seed uint64) kernelsim.Regs {
	return a.RandomRegs(rand.New(rand.NewPCG(seed, seed)))
}

func TestMovLeaPush(t *testing.T) {
	for _, s := range sandboxes(t) {
		a := s.Arch()
		m := a.RegMask
		t.Run(sbName(s), func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				regs := baseRegs(a, seed)
				// mov ebx, ecx (89 CB)
				ref, cand, d := pair(t, s, kernelsim.Case{Code: []byte{0x89, 0xCB}, Regs: regs}, nil)
				if ref.Outcome != kernelsim.Completed || ref.Regs.GPR[rBX] != regs.GPR[rCX]&0xffffffff {
					t.Fatalf("mov ebx, ecx: %v rbx=%#x, want %#x", ref.Outcome, ref.Regs.GPR[rBX], regs.GPR[rCX]&0xffffffff)
				}
				if d.Verdict != kernelsim.Equivalent {
					t.Errorf("mov out of line: %v", d)
				}
				_ = cand
				// lea eax, [ebx+ecx*4+8] (8D 44 8B 08): 32-bit result
				ref, _, d = pair(t, s, kernelsim.Case{Code: []byte{0x8D, 0x44, 0x8B, 0x08}, Regs: regs}, nil)
				want := (regs.GPR[rBX] + regs.GPR[rCX]*4 + 8) & 0xffffffff
				if ref.Regs.GPR[rAX] != want || d.Verdict != kernelsim.Equivalent {
					t.Fatalf("lea: eax=%#x want %#x, %v", ref.Regs.GPR[rAX], want, d)
				}
				// push ebx/rbx (53): stack pointer down by the pointer size, value stored
				ref, _, d = pair(t, s, kernelsim.Case{Code: []byte{0x53}, Regs: regs}, nil)
				ps := uint64(8)
				if a == kernelsim.I386 {
					ps = 4
				}
				sp := ref.Regs.GPR[rSP]
				if sp != (regs.GPR[rSP]-ps)&m || d.Verdict != kernelsim.Equivalent {
					t.Fatalf("push: sp=%#x want %#x, %v", sp, regs.GPR[rSP]-ps, d)
				}
				off := sp - a.Layout.Stack
				got := binary.LittleEndian.Uint64(ref.Stack[off:]) & m
				if ps == 4 {
					got &= 0xffffffff
				}
				if got != regs.GPR[rBX]&m {
					t.Fatalf("push stored %#x, want %#x", got, regs.GPR[rBX])
				}
			}
		})
	}
}

// TestAddFlags checks the flags of add against arithmetic done here.
func TestAddFlags(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, s := range sandboxes(t) {
		a := s.Arch()
		var cases []kernelsim.Case
		var xs, ys []uint32
		for range 200 {
			x, y := rng.Uint32(), rng.Uint32()
			if rng.IntN(4) == 0 {
				y = -x // zero result
			}
			regs := baseRegs(a, 3)
			regs.GPR[rAX], regs.GPR[rBX] = uint64(x), uint64(y)
			cases = append(cases, kernelsim.Case{Code: []byte{0x01, 0xD8}, Regs: regs, NoMemory: true}) // add eax, ebx
			xs, ys = append(xs, x), append(ys, y)
		}
		res := make([]kernelsim.Result, len(cases))
		if err := s.Run(cases, res); err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			x, y := xs[i], ys[i]
			sum := x + y
			var f uint64
			if uint64(x)+uint64(y) > 0xffffffff {
				f |= kernelsim.FlagCF
			}
			if sum == 0 {
				f |= kernelsim.FlagZF
			}
			if sum&0x80000000 != 0 {
				f |= kernelsim.FlagSF
			}
			if (x^sum)&(y^sum)&0x80000000 != 0 {
				f |= kernelsim.FlagOF
			}
			if (x^y^sum)&0x10 != 0 {
				f |= kernelsim.FlagAF
			}
			p := sum & 0xff
			p ^= p >> 4
			p ^= p >> 2
			p ^= p >> 1
			if p&1 == 0 {
				f |= kernelsim.FlagPF
			}
			if r.Outcome != kernelsim.Completed || uint32(r.Regs.GPR[rAX]) != sum || r.Regs.Flags != f {
				t.Fatalf("%s add %#x+%#x: %v eax=%#x flags=%#x, want %#x flags %#x", a.Name, x, y, r.Outcome, r.Regs.GPR[rAX], r.Regs.Flags, sum, f)
			}
		}
	}
}

// TestPushfPopf: pushf stores the case's flags; popf loads them from the stack.
func TestPushfPopf(t *testing.T) {
	for _, s := range sandboxes(t) {
		a := s.Arch()
		regs := baseRegs(a, 5)
		regs.Flags = kernelsim.FlagCF | kernelsim.FlagZF | kernelsim.FlagOF
		ref, _, d := pair(t, s, kernelsim.Case{Code: []byte{0x9C}, Regs: regs}, nil)
		if d.Verdict != kernelsim.Equivalent {
			t.Errorf("%s pushf out of line: %v", a.Name, d)
		}
		v := binary.LittleEndian.Uint64(ref.Stack[ref.Regs.GPR[rSP]-a.Layout.Stack:]) & a.FlagsMask
		if v != regs.Flags {
			t.Errorf("%s pushf stored flags %#x, want %#x", a.Name, v, regs.Flags)
		}
		// popf of a word with DF|SF|CF set
		stack := make([]byte, kernelsim.StackSize)
		sp := a.Layout.InitialSP()
		binary.LittleEndian.PutUint32(stack[sp-a.Layout.Stack:], kernelsim.FlagDF|kernelsim.FlagSF|kernelsim.FlagCF|0x2)
		regs.Flags = 0
		ref, _, d = pair(t, s, kernelsim.Case{Code: []byte{0x9D}, Regs: regs, Stack: stack}, nil)
		if ref.Outcome != kernelsim.Completed || ref.Regs.Flags != kernelsim.FlagDF|kernelsim.FlagSF|kernelsim.FlagCF || d.Verdict != kernelsim.Equivalent {
			t.Errorf("%s popf: %v flags %#x, %v", a.Name, ref.Outcome, ref.Regs.Flags, d)
		}
	}
}

// TestRIPRelative: a RIP-relative load reads the same memory in place and out
// of line once its displacement is rebased; copied verbatim it reads elsewhere.
func TestRIPRelative(t *testing.T) {
	s, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := s.Arch().Layout
	target := l.Scratch + 0x100
	scratch := make([]byte, kernelsim.ScratchSize)
	binary.LittleEndian.PutUint64(scratch[0x100:], 0x1122334455667788)
	enc := func(at uint64) []byte { // mov rax, [rip+disp32] (48 8B 05 disp32)
		d := int64(target - (at + 7))
		u := uint32(int32(d))
		return []byte{0x48, 0x8B, 0x05, byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}
	}
	c := kernelsim.Case{Code: enc(l.Orig), Regs: baseRegs(kernelsim.X86_64, 9), Scratch: scratch}
	slot := enc(l.Slot)
	j, _ := kernelsim.JmpRel32(l.Slot+7, c.ReturnAddr(l))
	ref, cand, d := pair(t, s, c, append(slot, j...))
	if ref.Regs.GPR[rAX] != 0x1122334455667788 || cand.Regs.GPR[rAX] != 0x1122334455667788 || d.Verdict != kernelsim.Equivalent {
		t.Errorf("rebased: in place rax=%#x (%v), out of line rax=%#x (%v): %v", ref.Regs.GPR[rAX], ref.Outcome, cand.Regs.GPR[rAX], cand.Outcome, d)
	}
	// verbatim copy: reads slot+7+disp, which is not the scratch word
	_, cand, d = pair(t, s, c, nil)
	if d.Verdict != kernelsim.Diverged {
		t.Errorf("verbatim RIP-relative copy: %v (out of line %v %v)", d, cand.Outcome, cand.Fault)
	}
}

// TestCallOutOfLine: call rel32 run from the slot pushes the slot's return
// address, so the stack diverges even though the call reaches the same target.
func TestCallOutOfLine(t *testing.T) {
	for _, s := range sandboxes(t) {
		a := s.Arch()
		l := a.Layout
		c := kernelsim.Case{Code: []byte{0xE8, 0, 0, 0, 0}, Regs: baseRegs(a, 11)} // call next instruction (= the return stub)
		tgt := c.ReturnAddr(l)
		rel := uint32(int32(int64(tgt - (l.Slot + 5))))
		slot := []byte{0xE8, byte(rel), byte(rel >> 8), byte(rel >> 16), byte(rel >> 24)}
		j, _ := kernelsim.JmpRel32(l.Slot+5, tgt)
		ref, cand, d := pair(t, s, c, append(slot, j...))
		ps := uint64(8)
		if a == kernelsim.I386 {
			ps = 4
		}
		sp := ref.Regs.GPR[rSP]
		got := binary.LittleEndian.Uint64(ref.Stack[sp-l.Stack:]) & (1<<(8*ps) - 1)
		gotSlot := binary.LittleEndian.Uint64(cand.Stack[cand.Regs.GPR[rSP]-l.Stack:]) & (1<<(8*ps) - 1)
		if ref.Outcome != kernelsim.Completed || cand.Outcome != kernelsim.Completed || got != l.Orig+5 || gotSlot != l.Slot+5 {
			t.Errorf("%s call: %v/%v return addresses %#x/%#x, want %#x/%#x", a.Name, ref.Outcome, cand.Outcome, got, gotSlot, l.Orig+5, l.Slot+5)
		}
		if d.Verdict != kernelsim.Diverged {
			t.Errorf("%s call out of line: %v, want diverged", a.Name, d)
		}
		t.Logf("%s call out of line: %v", a.Name, d)
	}
}

// TestFaults: a faulting load and ud2 fault identically in place and out of
// line (PC mapped back); hlt is reported as not verifiable in user mode.
func TestFaults(t *testing.T) {
	for _, s := range sandboxes(t) {
		a := s.Arch()
		regs := baseRegs(a, 13)
		// mov eax, [0] (8B 04 25 00000000)
		ref, _, d := pair(t, s, kernelsim.Case{Code: []byte{0x8B, 0x04, 0x25, 0, 0, 0, 0}, Regs: regs}, nil)
		if ref.Outcome != kernelsim.Faulted || ref.Fault.Signal != kernelsim.SIGSEGV || ref.Fault.Addr != 0 || ref.Regs.PC != a.Layout.Orig || d.Verdict != kernelsim.Equivalent {
			t.Errorf("%s load from 0: %v %v pc=%#x, %v", a.Name, ref.Outcome, ref.Fault, ref.Regs.PC, d)
		}
		// the registers at the fault are the initial ones
		for i := range a.NumGPR() {
			if ref.Regs.GPR[i] != regs.GPR[i]&a.RegMask {
				t.Errorf("%s fault: %s=%#x, want %#x", a.Name, a.RegNames[i], ref.Regs.GPR[i], regs.GPR[i])
			}
		}
		ref, _, d = pair(t, s, kernelsim.Case{Code: []byte{0x0F, 0x0B}, Regs: regs}, nil)
		if ref.Outcome != kernelsim.Faulted || ref.Fault.Signal != kernelsim.SIGILL || ref.Regs.PC != a.Layout.Orig || d.Verdict != kernelsim.Equivalent {
			t.Errorf("%s ud2: %v %v pc=%#x, %v", a.Name, ref.Outcome, ref.Fault, ref.Regs.PC, d)
		}
		ref, _, d = pair(t, s, kernelsim.Case{Code: []byte{0xF4}, Regs: regs}, nil)
		if ref.Outcome != kernelsim.Faulted || ref.Fault.Signal != kernelsim.SIGSEGV || d.Verdict != kernelsim.NotVerifiable {
			t.Errorf("%s hlt: %v %v, %v, want not verifiable", a.Name, ref.Outcome, ref.Fault, d)
		}
	}
}

// TestSyscallTrapped: a system call from case code never reaches the kernel.
func TestSyscallTrapped(t *testing.T) {
	s, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	regs := baseRegs(kernelsim.X86_64, 1)
	regs.GPR[rAX] = 62 // kill
	regs.GPR[rDI] = 0  // our process group
	regs.GPR[rSI] = 9
	r := run1(t, s, kernelsim.Case{Code: []byte{0x0F, 0x05}, Regs: regs})
	if r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGSYS || !r.Fault.NotVerifiableInUserMode() {
		t.Errorf("syscall: %v %v, want SIGSYS", r.Outcome, r.Fault)
	}
	// int 0x80 is a 32-bit system call (SIGSYS) where the kernel has IA32
	// emulation, a #GP where it has not: not verifiable either way
	r = run1(t, s, kernelsim.Case{Code: []byte{0xCD, 0x80}, Regs: regs})
	if r.Outcome != kernelsim.Faulted || !r.Fault.NotVerifiableInUserMode() {
		t.Errorf("int 0x80: %v %v, want not verifiable", r.Outcome, r.Fault)
	}
}

// TestWatchdog: an endless loop is reported as timed out and the next case
// runs normally.
func TestWatchdog(t *testing.T) {
	for _, s := range sandboxes(t) {
		s.Watchdog = 50 * time.Millisecond
		regs := baseRegs(s.Arch(), 1)
		res := make([]kernelsim.Result, 2)
		err := s.Run([]kernelsim.Case{{Code: []byte{0xEB, 0xFE}, Regs: regs}, {Code: []byte{0x90}, Regs: regs}}, res)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome != kernelsim.TimedOut || res[1].Outcome != kernelsim.Completed {
			t.Errorf("%s: jmp $ -> %v, nop -> %v", s.Arch().Name, res[0].Outcome, res[1].Outcome)
		}
	}
}

// TestBadCase: cases that do not fit are refused with ErrBadCase.
func TestBadCase(t *testing.T) {
	for _, c := range []kernelsim.Case{
		{Code: make([]byte, kernelsim.MaxCode+1)},
		{Code: []byte{0x90}, CodeOffset: kernelsim.PageSize},
		{Code: []byte{0x90}, EntrySlot: true},
		{Code: []byte{0x90}}, // stack pointer 0
	} {
		if err := c.Check(kernelsim.X86_64); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// TestRecovery: case code that corrupts the runner's state (clears its
// "in a case" flag) makes the runner hang or die; the sandbox reports the
// case as Crashed (with ptrace's view of where it hung), restarts and runs the
// next case.
func TestRecovery(t *testing.T) {
	s, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Watchdog = 20 * time.Millisecond
	flag := binary.LittleEndian.AppendUint64([]byte{0x48, 0xB8}, target64.dataBase+hInCase) // movabs rax, &inCase
	clear := append(flag, 0xC7, 0x00, 0, 0, 0, 0)                                           // mov dword [rax], 0
	regs := baseRegs(kernelsim.X86_64, 1)
	for _, tc := range []struct {
		tail []byte
		why  string
	}{{[]byte{0xEB, 0xFE}, "runner hung at pc"}, {[]byte{0x0F, 0x0B}, "runner died (signal 4 in the runner"}} {
		code := append(append([]byte{}, clear...), tc.tail...)
		res := make([]kernelsim.Result, 2)
		before := s.Restarts
		if err := s.Run([]kernelsim.Case{{Code: code, Regs: regs}, {Code: []byte{0x90}, Regs: regs}}, res); err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome != kernelsim.Crashed || res[1].Outcome != kernelsim.Completed || s.Restarts != before+1 || !strings.Contains(s.LastCrash, tc.why) {
			t.Errorf("% x: %v, %v, restarts %d, %q", code, res[0].Outcome, res[1].Outcome, s.Restarts-before, s.LastCrash)
		}
		t.Logf("% x: %s", tc.tail, s.LastCrash)
	}
}

// TestEmulatorBackend runs x86-64 cases under qemu-x86_64-static through the
// same Backend interface (KBOOST_ORACLE=1) and compares them with the CPU.
func TestEmulatorBackend(t *testing.T) {
	oracle(t)
	hw, err := New(kernelsim.X86_64)
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Close()
	em, err := NewWithOptions(kernelsim.X86_64, kernelsim.Options{Emulator: "/usr/bin/qemu-x86_64-static"})
	if err != nil {
		t.Fatal(err)
	}
	defer em.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	var cases []kernelsim.Case
	for i := 0; i < 200; i++ {
		cases = append(cases, kernelsim.Case{Code: checkMix[i%len(checkMix)], Regs: kernelsim.X86_64.RandomRegs(rng)})
	}
	r1, r2 := make([]kernelsim.Result, len(cases)), make([]kernelsim.Result, len(cases))
	if err := hw.Run(cases, r1); err != nil {
		t.Fatal(err)
	}
	if err := em.Run(cases, r2); err != nil {
		t.Fatal(err)
	}
	// flags the ISA leaves undefined, where qemu and the CPU legitimately differ
	undefined := map[string]uint64{
		"c1 e0 05": kernelsim.FlagAF | kernelsim.FlagOF,                                       // shl eax, 5
		"0f af c1": kernelsim.FlagSF | kernelsim.FlagZF | kernelsim.FlagAF | kernelsim.FlagPF, // imul eax, ecx
	}
	for i := range cases {
		a := *kernelsim.X86_64
		a.FlagsMask &^= undefined[fmt.Sprintf("% x", cases[i].Code)]
		d := a.Compare(&r1[i], &r2[i], nil)
		if d.Verdict == kernelsim.Diverged {
			t.Errorf("% x: CPU and qemu differ: %v (%v / %v)", cases[i].Code, d, r1[i].Fault, r2[i].Fault)
		}
	}
}

// TestFarSlot: with a slot more than 2 GiB from the code (Options.Layout), a
// rel32 jump back cannot be encoded, and the sandbox still runs both pages.
func TestFarSlot(t *testing.T) {
	l := kernelsim.X86_64.Layout
	l.Slot = l.Orig + 0x1_0000_0000
	s, err := NewWithOptions(kernelsim.X86_64, kernelsim.Options{Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := kernelsim.Case{Code: []byte{0x90}, Regs: baseRegs(kernelsim.X86_64, 1)}
	if err := DirectSlot(&c, s.Arch().Layout); !errors.Is(err, kernelsim.ErrBadCase) {
		t.Errorf("rel32 over 4 GiB: %v", err)
	}
	// an absolute jump back works from anywhere: jmp [rip+0]; .quad ret
	c.Slot = binary.LittleEndian.AppendUint64([]byte{0x90, 0xFF, 0x25, 0, 0, 0, 0}, c.ReturnAddr(s.Arch().Layout))
	c.EntrySlot = true
	r := run1(t, s, c)
	if r.Outcome != kernelsim.Completed || r.Regs.PC != c.ReturnAddr(s.Arch().Layout) {
		t.Errorf("far slot: %v %v", r.Outcome, r.Fault)
	}
}

// TestNoStaleCode: after a case, its code is gone: a later case at another
// offset that jumps to where the old code was finds int3.
func TestNoStaleCode(t *testing.T) {
	for _, s := range sandboxes(t) {
		regs := baseRegs(s.Arch(), 1)
		nops := make([]byte, 48)
		for i := range nops {
			nops[i] = 0x90
		}
		res := make([]kernelsim.Result, 2)
		cs := []kernelsim.Case{{Code: nops, Regs: regs}, {Code: []byte{0xEB, 0xC0}, CodeOffset: 64, Regs: regs}} // jmp to offset 2
		if err := s.Run(cs, res); err != nil {
			t.Fatal(err)
		}
		l := s.Arch().Layout
		if res[0].Outcome != kernelsim.Completed || res[1].Outcome != kernelsim.Faulted || res[1].Fault.Signal != kernelsim.SIGTRAP || res[1].Regs.PC != l.Orig+3 {
			t.Errorf("%s: %v, %v %v pc=%#x, want int3 at %#x", s.Arch().Name, res[0].Outcome, res[1].Outcome, res[1].Fault, res[1].Regs.PC, l.Orig+2)
		}
	}
}
