package kernelsim

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/kboost/kboost/decode"
)

// Sentinel errors.
var (
	// errNotSupported: the backend cannot run on this platform (the hardware
	// sandbox needs linux/amd64).
	errNotSupported = fmt.Errorf("kernelsim: %w", decode.ErrNotSupported)
	// ErrBadCase: a Case does not fit the sandbox layout.
	ErrBadCase = errors.New("kernelsim: invalid case")
	// ErrSandbox: the sandbox process could not be started or died.
	ErrSandbox = errors.New("kernelsim: sandbox failure")
	// ErrClosed: the backend was used after Close.
	ErrClosed = errors.New("kernelsim: backend closed")
)

// Sizes of the sandbox areas.
const (
	PageSize    = 4096
	ScratchSize = PageSize // bytes of scratch memory set and compared per case
	StackSize   = PageSize // bytes of stack set and compared per case
	ImageSize   = 64       // bytes copied to the code and slot pages per case
	StubSize    = 14       // room for the return stub the backend appends to Case.Code
	MaxCode     = ImageSize - StubSize
)

// Layout is where a sandbox maps its areas, in the sandbox's address space.
// Orig, Slot, Scratch and Stack are page aligned; the page after Orig is never
// mapped (the hardware length oracle relies on it). On x86-64 all four lie
// within +-2 GiB of each other so RIP-relative operands can reach any of them
// from either code page.
type Layout struct {
	Orig    uint64 // page holding Case.Code ("the original address")
	Slot    uint64 // page holding Case.Slot ("the out-of-line slot")
	Scratch uint64 // ScratchSize bytes of data memory
	Stack   uint64 // StackSize bytes of stack
}

// InitialSP is a good initial stack pointer: the middle of the stack page, so
// pushes and pops both stay inside the compared window.
func (l Layout) InitialSP() uint64 { return l.Stack + StackSize/2 }

// Regs is an architectural register file, wide enough for every
// instruction set a backend may run (Arch.RegNames says how many are used).
type Regs struct {
	GPR   [32]uint64 // x86: rax rcx rdx rbx rsp rbp rsi rdi r8..r15 (encoding order); arm64: x0..x30, sp
	Flags uint64     // RFLAGS / EFLAGS (/ NZCV)
	PC    uint64     // RIP / EIP
}

// Case is one execution: Code is copied to Layout.Orig+CodeOffset and followed
// by a return stub (a jump back into the runner, which ends the case); Slot,
// when not nil, is copied to Layout.Slot+SlotOffset. A slot that wants to
// "return" must jump to ReturnAddr. Execution starts at the code or, with
// EntrySlot, at the slot, with the registers in Regs (Regs.PC is ignored) and
// with the scratch and stack pages holding Scratch and Stack (zero-padded).
// All other bytes of both code pages are int3 (0xCC).
type Case struct {
	Code       []byte
	CodeOffset int
	Slot       []byte
	SlotOffset int
	EntrySlot  bool
	Regs       Regs
	Scratch    []byte
	Stack      []byte
	// NoMemory skips setting and capturing the scratch and stack pages: they
	// keep whatever the previous case left (faster when memory is not compared).
	NoMemory bool
}

// CodeAddr is where Code starts.
func (c *Case) CodeAddr(l Layout) uint64 {
	return l.Orig + uint64(c.CodeOffset)
}

// SlotAddr is where Slot starts.
func (c *Case) SlotAddr(l Layout) uint64 { return l.Slot + uint64(c.SlotOffset) }

// ReturnAddr is the address just past Code, where the return stub sits.
func (c *Case) ReturnAddr(l Layout) uint64 { return c.CodeAddr(l) + uint64(len(c.Code)) }

// Entry is the address execution starts at.
func (c *Case) Entry(l Layout) uint64 {
	if c.EntrySlot {
		return c.SlotAddr(l)
	}
	return c.CodeAddr(l)
}

// Check reports why a case does not fit the sandbox, wrapping ErrBadCase.
func (c *Case) Check(a *Arch) error {
	switch {
	case len(c.Code) > MaxCode:
		return fmt.Errorf("%w: code is %d bytes, at most %d fit before the return stub", ErrBadCase, len(c.Code), MaxCode)
	case c.CodeOffset < 0 || c.CodeOffset+ImageSize > PageSize:
		return fmt.Errorf("%w: code offset %d outside 0..%d", ErrBadCase, c.CodeOffset, PageSize-ImageSize)
	case len(c.Slot) > ImageSize:
		return fmt.Errorf("%w: slot is %d bytes, at most %d", ErrBadCase, len(c.Slot), ImageSize)
	case c.SlotOffset < 0 || c.SlotOffset+ImageSize > PageSize:
		return fmt.Errorf("%w: slot offset %d outside 0..%d", ErrBadCase, c.SlotOffset, PageSize-ImageSize)
	case c.EntrySlot && c.Slot == nil:
		return fmt.Errorf("%w: EntrySlot without a slot", ErrBadCase)
	case len(c.Scratch) > ScratchSize || len(c.Stack) > StackSize:
		return fmt.Errorf("%w: scratch or stack contents larger than %d bytes", ErrBadCase, PageSize)
	}
	sp := c.Regs.GPR[rSP] & a.RegMask
	if sp < a.Layout.Stack+16 || sp > a.Layout.Stack+StackSize {
		return fmt.Errorf("%w: stack pointer %#x outside the stack page %#x..%#x (use Layout.InitialSP)", ErrBadCase, sp, a.Layout.Stack+16, a.Layout.Stack+StackSize)
	}
	return nil
}

// Outcome is how a case ended.
type Outcome uint8

const (
	Completed Outcome = iota // reached the return stub
	Faulted                  // raised a signal; Result.Fault says which
	TimedOut                 // still running after the watchdog fired
	Crashed                  // the sandbox died or hung (restarted; state unknown)
)

func (o Outcome) String() string {
	switch o {
	case Completed:
		return "completed"
	case Faulted:
		return "faulted"
	case TimedOut:
		return "timed-out"
	case Crashed:
		return "sandbox-crashed"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Signal numbers as Linux reports them (same on every Linux architecture
// kboost targets for these).
const (
	SIGILL  = 4
	SIGTRAP = 5
	SIGBUS  = 7
	SIGFPE  = 8
	SIGUSR1 = 10
	SIGSEGV = 11
	SIGSYS  = 31
)

// siKernel is si_code SI_KERNEL: the signal came from a fault the kernel could
// not attribute to an address (#GP, #SS, int N...).
const SIKernel = 0x80

// Fault describes the signal a case raised.
type Fault struct {
	Signal    int    // SIGSEGV, SIGILL, ...
	Code      int32  // si_code
	Addr      uint64 // si_addr (faulting data or fetch address when meaningful)
	Trap      int    // x86 exception vector (trapno): 13 #GP, 14 #PF, 6 #UD, 1 #DB, 3 #BP...
	ErrorCode uint64 // hardware error code (page fault bits, selector)
}

func (f Fault) String() string {
	return fmt.Sprintf("%s code=%d addr=%#x trap=%d err=%#x", SignalName(f.Signal), f.Code, f.Addr, f.Trap, f.ErrorCode)
}

// NotVerifiableInUserMode is true for faults that say "the instruction cannot
// run in user mode" rather than "the instruction ran and faulted": a general
// protection fault without an address (privileged instructions such as hlt,
// cli, mov to a control register, in/out) and system calls, which the sandbox
// traps with seccomp. A #GP from a non-canonical memory operand looks the same;
// callers that know the instruction refine this.
//
// Emulators (qemu-user) report no trap number (-1); their SI_KERNEL SIGSEGV
// is taken as #GP.
func (f Fault) NotVerifiableInUserMode() bool {
	return (f.Signal == SIGSEGV && f.Code == SIKernel && (f.Trap == 13 || f.Trap < 0)) || f.Signal == SIGSYS
}

// SignalName is the name of a Linux signal number ("SIGSEGV").
func SignalName(s int) string {
	switch s {
	case SIGILL:
		return "SIGILL"
	case SIGTRAP:
		return "SIGTRAP"
	case SIGBUS:
		return "SIGBUS"
	case SIGFPE:
		return "SIGFPE"
	case SIGUSR1:
		return "SIGUSR1"
	case SIGSEGV:
		return "SIGSEGV"
	case SIGSYS:
		return "SIGSYS"
	}
	return fmt.Sprintf("signal %d", s)
}

// Result is the final architectural state of one case. For a completed case
// Regs.PC is the case's return address (or wherever the code jumped to the
// return stub from); for a fault it is the PC the signal reported.
type Result struct {
	Outcome Outcome
	Regs    Regs
	Fault   Fault  // valid when Outcome == Faulted
	Scratch []byte // ScratchSize bytes (nil with Case.NoMemory)
	Stack   []byte // StackSize bytes (nil with Case.NoMemory)
	// Vec is the FP/SIMD state where the backend captures it (arm64: v0..v31,
	// 16 bytes each, then FPSR and FPCR as 32-bit words); nil otherwise.
	Vec []byte
}

// Backend executes cases on some machine: the ptrace/runner sandbox on the host
// CPU, later an emulator through a gdb stub. Implementations are not safe for
// concurrent use; open one per goroutine.
type Backend interface {
	// Arch describes the instruction set and the layout the cases run in.
	Arch() *Arch
	// Run executes cases[i] into results[i] (len(results) >= len(cases)).
	// Result slices are reused when they have the right size. An error means
	// the batch could not be run at all; individual cases that crash the
	// sandbox are reported as Crashed and the sandbox is restarted.
	Run(cases []Case, results []Result) error
	// Close stops the backend and its processes.
	Close() error
}

// Arch is what a backend needs to know about an instruction set: register
// names and widths, the flags that are architectural state, and the default
// address layout of its sandbox.
type Arch struct {
	Name      string
	Mode      decode.Mode
	RegNames  []string // GPR names, index = Regs.GPR index
	RegMask   uint64   // value mask of a register
	FlagsMask uint64   // flags compared: CF PF AF ZF SF TF DF OF NT AC ID
	Layout    Layout
	// Reserved is the address range [lo, hi) the backend's own runner
	// occupies (code, then data): no sandbox page may overlap it.
	Reserved [2]uint64
	// MapLimit: sandbox pages lie below it (a 32-bit space above 1 GiB is
	// qemu-user's own).
	MapLimit uint64
	ISA      *ISA // 32-bit ARM: the probe model's per-ISA values
	SP       int  // the stack pointer's Regs.GPR index
}

// x86 flag bits.
const (
	FlagCF = 1 << 0
	FlagPF = 1 << 2
	FlagAF = 1 << 4
	FlagZF = 1 << 6
	FlagSF = 1 << 7
	FlagTF = 1 << 8
	FlagIF = 1 << 9
	FlagDF = 1 << 10
	FlagOF = 1 << 11
	FlagNT = 1 << 14
	FlagRF = 1 << 16
	FlagAC = 1 << 18
	FlagID = 1 << 21
)

const x86FlagsMask = FlagCF | FlagPF | FlagAF | FlagZF | FlagSF | FlagTF | FlagDF | FlagOF | FlagNT | FlagAC | FlagID

// X86_64 runs 64-bit code.
var X86_64 = &Arch{
	Name: "x86-64", Mode: decode.Mode64,
	RegNames: []string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"},
	RegMask: ^uint64(0), FlagsMask: x86FlagsMask,
	Layout: Layout{
		Orig:    0x5555_0000_0000,
		Slot:    0x5555_7000_0000,
		Scratch: 0x5555_1000_0000,
		Stack:   0x5555_1010_0000,
	},
	// far from everything case code can reach with a register or disp32
	// (kernelsim/native checks that its runner fits)
	Reserved: [2]uint64{0x7e00_0000_0000, 0x7e00_0033_7000},
	MapLimit: 0x7fff_ffff_0000,
	SP:       rSP,
}

// I386 runs 32-bit code in a compat-mode process.
var I386 = &Arch{
	Name: "i386", Mode: decode.Mode32,
	RegNames: []string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"},
	RegMask:  0xffff_ffff, FlagsMask: x86FlagsMask,
	Layout: Layout{
		// below 0x4000_0000, where qemu-user places its own mappings
		Orig:    0x2000_0000,
		Slot:    0x3000_0000,
		Scratch: 0x2800_0000,
		Stack:   0x2810_0000,
	},
	Reserved: [2]uint64{0x1000_0000, 0x1033_7000},
	MapLimit: 0x4000_0000, // qemu-user keeps the rest of the 32-bit space
	SP:       rSP,
}

// Arches lists the instruction sets kernelsim runs.
var Arches = []*Arch{X86_64, I386, ARM64, ARM32, Thumb}

// ArchFor returns the Arch for a decoder mode.
func ArchFor(m decode.Mode) (*Arch, error) {
	for _, a := range Arches {
		if a.Mode == m {
			return a, nil
		}
	}
	return nil, fmt.Errorf("kernelsim: no sandbox for mode %v: %w", m, errNotSupported)
}

// NumGPR is the number of general registers in use.
func (a *Arch) NumGPR() int { return len(a.RegNames) }

// RandomRegs returns a randomized register state for a case: the stack pointer
// at Layout.InitialSP, every other register either an address inside the
// scratch page (kept 256 bytes from both ends so ModRM memory operands with an
// 8-bit displacement stay mapped) or, with probability 1/4, a small value
// (usable as an index or count), and random arithmetic flags.
func (a *Arch) RandomRegs(rng *rand.Rand) Regs {
	var r Regs
	for i := range a.NumGPR() {
		switch {
		case i == rSP:
			r.GPR[i] = a.Layout.InitialSP()
		case rng.IntN(4) == 0:
			r.GPR[i] = uint64(rng.IntN(16))
		default:
			r.GPR[i] = a.Layout.Scratch + 256 + uint64(rng.IntN(ScratchSize-512))&^7
		}
	}
	r.Flags = rng.Uint64() & (FlagCF | FlagPF | FlagAF | FlagZF | FlagSF | FlagOF)
	return r
}

// Verdict is the result of comparing two executions.
type Verdict uint8

const (
	Equivalent    Verdict = iota // same final state, or the same fault
	Diverged                     // some architectural state differs
	NotVerifiable                // both stopped on something user mode cannot run
	Inconclusive                 // a timeout or sandbox crash on either side
)

func (v Verdict) String() string {
	switch v {
	case Equivalent:
		return "equivalent"
	case Diverged:
		return "diverged"
	case NotVerifiable:
		return "not verifiable in user mode"
	case Inconclusive:
		return "inconclusive"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Diff is the comparison of a reference execution (in place) with a candidate
// (out of line).
type Diff struct {
	Verdict Verdict
	Fields  []string // what differs: register names, "flags", "pc", "fault", "stack+0xNN", "scratch+0xNN"
}

func (d Diff) String() string {
	if len(d.Fields) == 0 {
		return d.Verdict.String()
	}
	return d.Verdict.String() + ": " + strings.Join(d.Fields, " ")
}

// Compare compares two results of the same case run in two ways. pcMap maps
// the candidate's fault PC and fault address to the reference's coordinates
// (e.g. slot address -> original address); nil means identity. A fault is
// compared as a fault: same signal, same si_code, same mapped fault address,
// same mapped PC, same registers and memory.
func (a *Arch) Compare(ref, cand *Result, pcMap func(uint64) uint64) Diff {
	var d Diff
	if ref.Outcome == TimedOut || ref.Outcome == Crashed || cand.Outcome == TimedOut || cand.Outcome == Crashed {
		return Diff{Verdict: Inconclusive, Fields: []string{ref.Outcome.String() + "/" + cand.Outcome.String()}}
	}
	if ref.Outcome != cand.Outcome {
		d.Fields = append(d.Fields, "outcome")
	}
	if ref.Outcome == Faulted && cand.Outcome == Faulted {
		if ref.Fault.NotVerifiableInUserMode() && cand.Fault.NotVerifiableInUserMode() {
			return Diff{Verdict: NotVerifiable, Fields: []string{ref.Fault.String()}}
		}
		if ref.Fault.Signal != cand.Fault.Signal || ref.Fault.Code != cand.Fault.Code {
			d.Fields = append(d.Fields, "fault")
		}
		addr := cand.Fault.Addr
		if pcMap != nil {
			addr = pcMap(addr)
		}
		if addr != ref.Fault.Addr {
			d.Fields = append(d.Fields, "fault-addr")
		}
	}
	for i := range a.NumGPR() {
		if (ref.Regs.GPR[i]^cand.Regs.GPR[i])&a.RegMask != 0 {
			d.Fields = append(d.Fields, a.RegNames[i])
		}
	}
	if (ref.Regs.Flags^cand.Regs.Flags)&a.FlagsMask != 0 {
		d.Fields = append(d.Fields, "flags")
	}
	pc := cand.Regs.PC
	if pcMap != nil {
		pc = pcMap(pc)
	}
	if pc != ref.Regs.PC {
		d.Fields = append(d.Fields, "pc")
	}
	d.Fields = appendMemDiff(d.Fields, "stack", ref.Stack, cand.Stack)
	d.Fields = appendMemDiff(d.Fields, "scratch", ref.Scratch, cand.Scratch)
	if len(d.Fields) > 0 {
		d.Verdict = Diverged
	}
	return d
}

// appendMemDiff names the first differing 8-byte word of two memory images.
func appendMemDiff(f []string, name string, x, y []byte) []string {
	if bytes.Equal(x, y) {
		return f
	}
	n := min(len(x), len(y))
	for i := 0; i < n; i++ {
		if x[i] != y[i] {
			return append(f, fmt.Sprintf("%s+%#x", name, i&^7))
		}
	}
	return append(f, name)
}

// SlotPCMap maps a PC inside c's slot to the corresponding address of the
// original code (slot offset i -> code offset i), for Compare.
func (c *Case) SlotPCMap(l Layout) func(uint64) uint64 {
	s, o := c.SlotAddr(l), c.CodeAddr(l)
	return func(pc uint64) uint64 {
		if pc >= s && pc < s+uint64(len(c.Slot)) {
			return pc - s + o
		}
		return pc
	}
}

// JmpRel32 encodes "jmp rel32" placed at from, jumping to to. It fails when
// the distance does not fit a signed 32-bit displacement.
func JmpRel32(from, to uint64) ([]byte, error) {
	d := int64(to - (from + 5))
	if d != int64(int32(d)) {
		return nil, fmt.Errorf("%w: jmp from %#x to %#x does not fit rel32", ErrBadCase, from, to)
	}
	u := uint32(int32(d))
	return []byte{0xE9, byte(u), byte(u >> 8), byte(u >> 16), byte(u >> 24)}, nil
}

// ExecMode chooses what executes a sandbox's cases.
type ExecMode uint8

const (
	// ExecAuto runs the cases on the CPU where the kernel runs the mode's
	// executables, else under the mode's qemu-user emulator (i386 on hosts
	// that refuse 32-bit code: a probe decides once per process).
	ExecAuto ExecMode = iota
	// ExecCPU runs the cases on the CPU or fails with errNotSupported.
	ExecCPU
	// ExecQEMU runs the cases under the mode's qemu-user emulator.
	ExecQEMU
)

var execNames = [...]string{ExecAuto: "auto", ExecCPU: "cpu", ExecQEMU: "qemu"}

func (m ExecMode) String() string {
	if int(m) < len(execNames) {
		return execNames[m]
	}
	return fmt.Sprintf("ExecMode(%d)", m)
}

// ExecModeNames lists the names ParseExecMode accepts.
func ExecModeNames() []string { return execNames[:] }

// ParseExecMode reads "auto", "cpu" or "qemu".
func ParseExecMode(s string) (ExecMode, error) {
	for i, n := range execNames {
		if s == n {
			return ExecMode(i), nil
		}
	}
	return 0, fmt.Errorf("kernelsim: execution backend %q: want auto, cpu or qemu", s)
}

// Options tune New.
type Options struct {
	// Exec chooses what executes the cases (ExecAuto when zero).
	Exec ExecMode
	// Emulator is the path of the qemu-user binary to use under ExecQEMU
	// (or instead of the CPU, whatever Exec says), replacing the mode's
	// default emulator found on PATH.
	Emulator string
	// Tag is appended to the sandbox's command line (to find its processes).
	Tag string
	// Layout replaces the Arch's default layout when not zero (for example
	// a slot more than 2 GiB from the code, to see a rel32 fixup refused).
	Layout Layout
	// CaseTimeout is the CPU time one case may take before the backend
	// stops it (TimedOut); zero: the backend's default.
	CaseTimeout time.Duration
}

// Check reports why l cannot be a sandbox layout for a, wrapping ErrBadCase.
func (l Layout) Check(a *Arch) error {
	pages := []struct {
		name string
		at   uint64
	}{{"code", l.Orig}, {"page after the code", l.Orig + PageSize}, {"slot", l.Slot}, {"scratch", l.Scratch}, {"stack", l.Stack}}
	limit := a.MapLimit
	for i, p := range pages {
		switch {
		case p.at%PageSize != 0:
			return fmt.Errorf("%w: %s address %#x not page aligned", ErrBadCase, p.name, p.at)
		case p.at < 0x1_0000 || p.at >= limit:
			return fmt.Errorf("%w: %s address %#x outside %#x..%#x", ErrBadCase, p.name, p.at, 0x10000, limit)
		case p.at+PageSize > a.Reserved[0] && p.at < a.Reserved[1]:
			return fmt.Errorf("%w: %s address %#x overlaps the runner at %#x..%#x", ErrBadCase, p.name, p.at, a.Reserved[0], a.Reserved[1])
		}
		for _, q := range pages[:i] {
			if q.at == p.at {
				return fmt.Errorf("%w: %s and %s share the page %#x", ErrBadCase, q.name, p.name, p.at)
			}
		}
	}
	return nil
}

// Fuzz offsets of the probed instruction and its slot in their pages: the
// middle of the code page, so short branches either way land on int3 filler.
const (
	FuzzCodeOffset = 0x800
	FuzzSlotOffset = 0x400
)
