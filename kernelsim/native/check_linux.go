//go:build linux && amd64

package native

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/kboost/kboost/internal/procstat"
	"github.com/kboost/kboost/kernelsim"

	"golang.org/x/sys/unix"
)

// checkMix is the instruction mix of MeasureChecks: ordinary boostable
// instructions with register, memory and stack operands, valid in both modes
// (no REX), and one faulting load.
var checkMix = [][]byte{
	{0x89, 0xC8},                   // mov eax, ecx
	{0x01, 0xD8},                   // add eax, ebx
	{0x29, 0xCA},                   // sub edx, ecx
	{0x31, 0xF6},                   // xor esi, esi
	{0x8D, 0x44, 0x8B, 0x08},       // lea eax, [ebx+ecx*4+8]
	{0x53},                         // push ebx
	{0x5A},                         // pop edx
	{0x8B, 0x03},                   // mov eax, [ebx]
	{0x89, 0x0E},                   // mov [esi], ecx
	{0x01, 0x4F, 0x10},             // add [edi+0x10], ecx
	{0xC1, 0xE0, 0x05},             // shl eax, 5
	{0x0F, 0xAF, 0xC1},             // imul eax, ecx
	{0x85, 0xC9},                   // test ecx, ecx
	{0x9C},                         // pushf
	{0x8B, 0x04, 0x25, 0, 0, 0, 0}, // mov eax, [0] (faults)
}

// MeasureChecks runs differential checks on a for about d: each check runs
// one instruction of a fixed mix in place and from a slot (DirectSlot), with
// randomized registers and scratch memory, and compares the two results
// (registers, flags, PC, stack and scratch pages, faults). The tracer and the
// sandbox hand the batch back and forth and never run at the same time, so
// the figures are those of one core.
func MeasureChecks(a *kernelsim.Arch, d time.Duration, seed uint64) (CheckRate, error) {
	c, err := newChecker(a, seed)
	if err != nil {
		return CheckRate{}, err
	}
	defer c.s.Close()
	var r CheckRate
	cpu0 := cpuTime(c.s.Pid())
	start := time.Now()
	for time.Since(start) < d {
		n, div, err := c.batch()
		if err != nil {
			return r, err
		}
		r.Checks += n
		r.Diverged += div
	}
	r.Elapsed = time.Since(start)
	r.CPU = cpuTime(c.s.Pid()) - cpu0
	r.PerSecond = float64(r.Checks) / r.Elapsed.Seconds()
	if r.CPU > 0 {
		r.PerCPU = float64(r.Checks) / r.CPU.Seconds()
	}
	return r, nil
}

// checker runs batches of random differential checks.
type checker struct {
	a       *kernelsim.Arch
	s       *Sandbox
	rng     *rand.Rand
	cases   []kernelsim.Case
	results []kernelsim.Result
	scratch []byte
	stack   []byte
}

func newChecker(a *kernelsim.Arch, seed uint64) (*checker, error) {
	s, err := New(a)
	if err != nil {
		return nil, err
	}
	return &checker{
		a: a, s: s, rng: rand.New(rand.NewPCG(seed, 0x6b626f6f7374)),
		cases: make([]kernelsim.Case, maxBatch), results: make([]kernelsim.Result, maxBatch),
		scratch: make([]byte, kernelsim.ScratchSize), stack: make([]byte, kernelsim.StackSize),
	}, nil
}

// batch runs maxBatch/2 checks and returns how many diverged.
func (c *checker) batch() (checks, diverged int, err error) {
	l := c.a.Layout
	pairs := len(c.cases) / 2
	for i := 0; i < pairs; i++ {
		for j := 0; j < len(c.scratch); j += 8 {
			binary.LittleEndian.PutUint64(c.scratch[j:], c.rng.Uint64())
		}
		regs := c.a.RandomRegs(c.rng)
		ref := kernelsim.Case{Code: checkMix[c.rng.IntN(len(checkMix))], Regs: regs, Scratch: c.scratch, Stack: c.stack}
		cand := ref
		cand.Slot = c.cases[2*i+1].Slot
		if err := DirectSlot(&cand, l); err != nil {
			return 0, 0, err
		}
		cand.EntrySlot = true
		c.cases[2*i], c.cases[2*i+1] = ref, cand
	}
	if err := c.s.Run(c.cases, c.results); err != nil {
		return 0, 0, err
	}
	for i := 0; i < pairs; i++ {
		if c.a.Compare(&c.results[2*i], &c.results[2*i+1], c.cases[2*i+1].SlotPCMap(l)).Verdict != kernelsim.Equivalent {
			diverged++
		}
	}
	return pairs, diverged, nil
}

// cpuTime is the CPU time used so far by this process and the process pid.
func cpuTime(pid int) time.Duration {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	t := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return t + procCPU(pid)
}

// procState is the state letter of pid in /proc (R, S, D, ...), 0 if unknown.
func procState(pid int) byte {
	st, _ := procstat.Read(pid)
	return st.State
}

// procCPU reads the user+system time of pid from /proc (clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	st, _ := procstat.Read(pid)
	return st.CPU
}
