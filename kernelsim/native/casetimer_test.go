//go:build linux && amd64

package native

import (
	"testing"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// TestCaseTimer: an endless loop ends TimedOut through the runner's own case
// timer, long before the tracer's watchdog (set to a minute here) would act,
// and the sandbox is not restarted for it.
func TestCaseTimer(t *testing.T) {
	for _, s := range sandboxes(t) {
		s.Watchdog = time.Minute
		regs := baseRegs(s.Arch(), 3)
		many := regs
		many.GPR[rCX] = 0xFFFF_FFF0 // loop $: 4 billion rounds
		res := make([]kernelsim.Result, 3)
		start := time.Now()
		err := s.Run([]kernelsim.Case{{Code: []byte{0xEB, 0xFE}, Regs: regs}, {Code: []byte{0x90}, Regs: regs}, {Code: []byte{0xE2, 0xFE}, Regs: many}}, res)
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if res[0].Outcome != kernelsim.TimedOut || res[1].Outcome != kernelsim.Completed || res[2].Outcome != kernelsim.TimedOut {
			t.Errorf("%s: jmp $ -> %v, nop -> %v, loop $ -> %v", s.Arch().Name, res[0].Outcome, res[1].Outcome, res[2].Outcome)
		}
		if s.Restarts != 0 {
			t.Errorf("%s: %d restarts (%s)", s.Arch().Name, s.Restarts, s.LastCrash)
		}
		if el > 10*time.Second {
			t.Errorf("%s: two endless loops took %v", s.Arch().Name, el)
		}
		t.Logf("%s: two endless loops stopped in %v", s.Arch().Name, el)
	}
}

// TestSleepingSyscall: a case whose system call would sleep (pause) does not
// hold the batch: on the CPU seccomp turns it into SIGSYS; under an emulator,
// which runs it for real, the tracer wakes the sandbox and the case ends
// TimedOut.
func TestSleepingSyscall(t *testing.T) {
	for _, s := range sandboxes(t) {
		a := s.Arch()
		s.Watchdog = 50 * time.Millisecond
		regs := baseRegs(a, 4)
		code := []byte{0x0F, 0x05} // syscall
		regs.GPR[rAX] = 34         // pause
		if a == kernelsim.I386 {
			code = []byte{0xCD, 0x80} // int 0x80
			regs.GPR[rAX] = 29        // pause
		}
		res := make([]kernelsim.Result, 2)
		start := time.Now()
		if err := s.Run([]kernelsim.Case{{Code: code, Regs: regs}, {Code: []byte{0x90}, Regs: regs}}, res); err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		r := res[0]
		switch {
		case s.Emulator() == "" && (r.Outcome != kernelsim.Faulted || r.Fault.Signal != kernelsim.SIGSYS):
			t.Errorf("%s: pause -> %v %v, want SIGSYS", a.Name, r.Outcome, r.Fault)
		case s.Emulator() != "" && r.Outcome != kernelsim.TimedOut:
			t.Errorf("%s under %s: pause -> %v %v, want timed-out", a.Name, s.Emulator(), r.Outcome, r.Fault)
		case res[1].Outcome != kernelsim.Completed:
			t.Errorf("%s: the next case %v", a.Name, res[1].Outcome)
		case el > 5*time.Second:
			t.Errorf("%s: pause held the batch for %v", a.Name, el)
		}
	}
}

// TestCaseTimeoutSetting: a loop of 16M rounds (256K under an emulator:
// qemu-i386-static in package vm's TCG guest ran only 870K in 5 s), which
// the default limit may stop, completes (with the count at 0) when
// CaseTimeout allows seconds; the setting applies from the next batch on.
func TestCaseTimeoutSetting(t *testing.T) {
	for _, s := range sandboxes(t) {
		s.CaseTimeout = 5 * time.Second
		regs := baseRegs(s.Arch(), 5)
		log2 := 24
		if s.Emulator() != "" {
			log2 = 18
		}
		regs.GPR[rCX] = 1 << log2
		start := time.Now()
		r := run1(t, s, kernelsim.Case{Code: []byte{0xE2, 0xFE}, Regs: regs}) // loop $
		if r.Outcome != kernelsim.Completed || r.Regs.GPR[rCX] != 0 {
			t.Errorf("%s: loop $ with rcx=2^%d and a 5 s limit -> %v rcx=%#x", sbName(s), log2, r.Outcome, r.Regs.GPR[rCX])
		}
		t.Logf("%s: loop $ with rcx=2^%d: %v in %v", sbName(s), log2, r.Outcome, time.Since(start).Round(time.Millisecond))
		s.CaseTimeout = 0
		regs.GPR[rCX] = 1 << 31
		if r := run1(t, s, kernelsim.Case{Code: []byte{0xE2, 0xFE}, Regs: regs}); r.Outcome != kernelsim.TimedOut {
			t.Errorf("%s: loop $ with rcx=2^31 and the default limit -> %v", s.Arch().Name, r.Outcome)
		}
	}
}
