package kernelsim

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	"github.com/kboost/kboost/decode"
)

// ARM64 registers in Regs.GPR: x0..x30, then sp at index 31.
const (
	A64RegSP = 31
	a64RegLR = 30
)

// NZCV flag bits of PSTATE as Regs.Flags holds them on arm64.
const (
	FlagV = 1 << 28
	FlagC = 1 << 29
	FlagZ = 1 << 30
	FlagN = 1 << 31
)

// ARM64 runs A64 code under qemu-aarch64 through its gdb stub (NewGDB). The
// code page and the slot page are 48 MiB apart (within the +-128 MiB of a B),
// the runner and its data lie beyond the reach of case registers.
var ARM64 = &Arch{
	Name: "arm64", Mode: decode.ModeA64,
	RegNames: []string{"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
		"x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp"},
	RegMask: ^uint64(0), FlagsMask: FlagN | FlagZ | FlagC | FlagV,
	Layout: Layout{
		Orig:    0x4100_0000,
		Slot:    0x4400_0000,
		Scratch: 0x4080_0000,
		Stack:   0x4081_0000,
	},
	MapLimit: 0x7fff_ffff_0000,
	SP:       A64RegSP,
}

// RandomTrialA64 fills t for an A64 case: x0..x30 point into the scratch
// page (256 bytes from either end, 16-byte aligned) or, with probability 1/4,
// hold a small value; sp is Layout.InitialSP (16-byte aligned, as the
// architecture's SP alignment check wants); NZCV random; scratch and stack
// pages random, a quarter of their words pointers into the scratch page.
func (a *Arch) RandomTrialA64(rng *rand.Rand, t *Trial) {
	var r Regs
	for i := 0; i < 31; i++ {
		if rng.IntN(4) == 0 {
			r.GPR[i] = uint64(rng.IntN(16))
		} else {
			r.GPR[i] = a.Layout.Scratch + 256 + uint64(rng.IntN(ScratchSize-512))&^15
		}
	}
	r.GPR[A64RegSP] = a.Layout.InitialSP()
	r.Flags = uint64(rng.Uint32()) & (FlagN | FlagZ | FlagC | FlagV)
	t.Regs = r
	if len(t.Scratch) != ScratchSize {
		t.Scratch = make([]byte, ScratchSize)
	}
	if len(t.Stack) != StackSize {
		t.Stack = make([]byte, StackSize)
	}
	for _, m := range [][]byte{t.Scratch, t.Stack} {
		for j := 0; j < len(m); j += 8 {
			v := rng.Uint64() & 0x7fff_ffff_ffff
			if rng.IntN(4) == 0 {
				v = a.Layout.Scratch + uint64(rng.IntN(ScratchSize))
			}
			binary.LittleEndian.PutUint64(m[j:], v)
		}
	}
}

// A64Probe is one A64 probe site placed in a sandbox: the word at
// Layout.Orig+CodeOffset, its slot at Layout.Slot+SlotOffset.
type A64Probe struct {
	Arch       *Arch
	Word       uint32
	CodeOffset int
	SlotOffset int
}

// Addr and SlotAddr are the sandbox addresses of the probe and its slot.
func (p *A64Probe) Addr() uint64     { return p.Arch.Layout.Orig + uint64(p.CodeOffset) }
func (p *A64Probe) SlotAddr() uint64 { return p.Arch.Layout.Slot + uint64(p.SlotOffset) }

func A64Bytes(w ...uint32) []byte {
	b := make([]byte, 4*len(w))
	for i, x := range w {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// BuildSlotA64 writes what an arm64 kernel (or the boost-arm64 model) puts in
// the slot at slot for the word probed at addr: PathSingleStep is Linux's
// [insn, BRK #6] (arch_prepare_ss_slot; the BRK handler then sets PC =
// addr+4); PathBoost is [insn, B addr+4], refused with a SlotRangeError when
// addr+4 is beyond +-128 MiB of the slot. The copy is verbatim: A64 has no
// displacement fixups, which is why PC-relative instructions are never
// stepped out of line.
func BuildSlotA64(word uint32, addr, slot uint64, path Path) ([]byte, error) {
	switch path {
	case PathSingleStep:
		return A64Bytes(word, A64BRKSS), nil
	case PathBoost:
		b, ok := A64B(slot+4, addr+4)
		if !ok {
			return nil, &SlotRangeError{Addr: addr, SlotAddr: slot, NewDisp: int64(addr + 4 - (slot + 4))}
		}
		return A64Bytes(word, b), nil
	}
	return nil, ErrNoSlot
}

// VerifySlotA64 checks an A64 slot image: the copy is the probed word, the
// tail is BRK #6 (single-step) or a B landing on addr+4 (boost), and the
// slot holds two words.
func VerifySlotA64(word uint32, addr, slot uint64, img []byte) []string {
	var p []string
	if len(img) != 8 {
		return append(p, fmt.Sprintf("slot is %d bytes, want 8 (insn + tail)", len(img)))
	}
	if w := binary.LittleEndian.Uint32(img); w != word {
		p = append(p, fmt.Sprintf("slot copy %#08x is not the probed word %#08x", w, word))
	}
	t := binary.LittleEndian.Uint32(img[4:])
	switch {
	case t == A64BRKSS:
	case t&0xFC000000 == 0x14000000:
		d := int64(int32(t<<6)>>6) * 4
		if to := slot + 4 + uint64(d); to != addr+4 {
			p = append(p, fmt.Sprintf("B back lands on %#x, not addr+4 %#x", to, addr+4))
		}
	default:
		p = append(p, fmt.Sprintf("unexpected slot tail %#08x", t))
	}
	return p
}

// RefCase is the word run in place from trial t.
func (p *A64Probe) RefCase(t *Trial) Case {
	return Case{Code: A64Bytes(p.Word), CodeOffset: p.CodeOffset, Regs: t.Regs, Scratch: t.Scratch, Stack: t.Stack}
}

// HitCase is the simulated kprobe hit on path from trial t: the kprobe BRK
// and an empty pre-handler (no architectural effect), then
//   - PathBoost: the slot [insn, B addr+4] runs and lands on addr+4;
//   - PathSingleStep: the slot [insn, BRK #6] runs up to its BRK (FixHit
//     then sets PC = addr+4, as the kernel's post_kprobe_handler does);
//   - PathEmulate: the kernel's simulate_* handler (SimulateA64) computes the
//     result, and the case resumes there through a B from the slot.
//
// slot overrides the slot image for boost and single-step (nil: BuildSlotA64).
func (p *A64Probe) HitCase(path Path, slot []byte, t *Trial) (Case, error) {
	c := p.RefCase(t)
	c.SlotOffset = p.SlotOffset
	c.EntrySlot = true
	switch path {
	case PathBoost, PathSingleStep:
		if slot == nil {
			var err error
			if slot, err = BuildSlotA64(p.Word, p.Addr(), p.SlotAddr(), path); err != nil {
				return c, err
			}
		}
		c.Slot = slot
	case PathEmulate:
		regs, err := p.Arch.SimulateA64(p.Word, p.Addr(), t)
		if err != nil {
			return c, err
		}
		c.Regs = regs
		b, ok := A64B(p.SlotAddr(), regs.PC)
		if !ok {
			// the simulated PC is out of reach of a B from the slot: go
			// there through a register the simulation does not define
			return c, &EmulateError{Inst: fmt.Sprintf("%08x", p.Word), Why: fmt.Sprintf("simulated PC %#x out of reach of a B from the slot", regs.PC)}
		}
		c.Slot = A64Bytes(b)
	default:
		return c, ErrNoSlot
	}
	return c, nil
}

// FixHit applies the kernel's resume fix-up to a single-step hit: the BRK #6
// after the copy traps with PC at the BRK; the kernel sets PC = addr+4 and
// returns, so the case continues where the in-place run does.
func (p *A64Probe) FixHit(path Path, r *Result) {
	if path != PathSingleStep || r.Outcome != Faulted || r.Fault.Signal != SIGTRAP {
		return
	}
	if r.Regs.PC != p.SlotAddr()+4 {
		return
	}
	r.Outcome = Completed
	r.Fault = Fault{}
	r.Regs.PC = p.Addr() + 4
}

// CompareHit compares the in-place result ref with the simulated hit cand.
// A reference that was refused as a system call (SIGSYS) is NotVerifiable,
// and so is a probed word that is undefined at EL0 in place (SIGILL at the
// probed address): user mode cannot tell a privileged instruction, which
// the kernel runs, from an undefined one, nor an instruction the emulator
// does not implement (qemu 7.2 lacks FEAT_HBC's BC.cond) from either.
func (p *A64Probe) CompareHit(c *Case, ref, cand *Result) Diff {
	if ref.Outcome == Faulted && ref.Fault.Signal == SIGSYS {
		return Diff{Verdict: NotVerifiable, Fields: []string{ref.Fault.String()}}
	}
	if ref.Outcome == Faulted && ref.Fault.Signal == SIGILL && ref.Regs.PC == p.Addr() {
		return Diff{Verdict: NotVerifiable, Fields: []string{"undefined at EL0: " + ref.Fault.String()}}
	}
	d := p.Arch.Compare(ref, cand, c.SlotPCMap(p.Arch.Layout))
	if d.Verdict == Equivalent || d.Verdict == Diverged {
		d.Fields = appendVecDiff(d.Fields, ref.Vec, cand.Vec)
		if len(d.Fields) > 0 {
			d.Verdict = Diverged
		}
	}
	return d
}

// appendVecDiff names the FP/SIMD registers that differ (v0..v31, fpsr,
// fpcr) when both results carry them.
func appendVecDiff(f []string, x, y []byte) []string {
	if len(x) != len(y) || len(x) < 32*16+8 || bytes.Equal(x, y) {
		return f
	}
	for v := 0; v < 32; v++ {
		if !bytes.Equal(x[16*v:16*v+16], y[16*v:16*v+16]) {
			f = append(f, fmt.Sprintf("v%d", v))
		}
	}
	if !bytes.Equal(x[512:516], y[512:516]) {
		f = append(f, "fpsr")
	}
	if !bytes.Equal(x[516:520], y[516:520]) {
		f = append(f, "fpcr")
	}
	return f
}

// CheckHitA64 runs p in place and through the hit on path for every trial on
// b (in one batch) and compares them. Both runs have the hit's slot page
// mapped with the same contents.
func CheckHitA64(b Backend, p *A64Probe, path Path, slot []byte, trials []Trial) ([]HitCheck, error) {
	return CheckModel(b, p, path, slot, trials)
}

func (p *A64Probe) ComparePath(_ Path, c *Case, ref, cand *Result) Diff {
	return p.CompareHit(c, ref, cand)
}

func A64Hex(w uint32) string {
	return fmt.Sprintf("%02x%02x%02x%02x", byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
}
