package kernelsim

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/kboost/kboost/decode"
)

// ARM32 registers in Regs.GPR: r0..r12, sp (13), lr (14); the PC is Regs.PC.
const (
	A32RegSP = 13
	a32RegLR = 14
)

// A32FlagsMask is the APSR state compared on 32-bit ARM: N Z C V Q and the
// GE bits (the kernel's APSR_MASK).
const A32FlagsMask = 0xF80F0000

// ARM32 runs A32 code under qemu-arm through its gdb stub (NewGDB).
var ARM32 = &Arch{
	Name: "arm", Mode: decode.ModeA32,
	RegNames: []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr"},
	RegMask:  0xFFFF_FFFF, FlagsMask: A32FlagsMask,
	Layout: Layout{
		Orig:    0x1100_0000,
		Slot:    0x1400_0000,
		Scratch: 0x1080_0000,
		Stack:   0x1081_0000,
	},
	MapLimit: 0x4000_0000, // qemu-arm keeps the rest of the 32-bit space
	ISA:      isaA32,
	SP:       A32RegSP,
}

// Thumb runs Thumb-2 (T16/T32) code under qemu-arm through its gdb stub
// (NewGDB): the ARM32 sandbox with every case entered in Thumb state.
var Thumb = &Arch{
	Name: "thumb", Mode: decode.ModeT32,
	RegNames: ARM32.RegNames, RegMask: 0xFFFF_FFFF, FlagsMask: A32FlagsMask,
	Layout:   ARM32.Layout,
	MapLimit: ARM32.MapLimit,
	ISA:      isaT32,
	SP:       A32RegSP,
}

// armISA is what differs between the two 32-bit ARM instruction sets in
// the probe model (A32Probe, CheckHitsA32) and the fuzzer (A32Fuzzer): one
// value per instruction set, isaA32 and isaT32.
type ISA struct {
	name       string
	Thumb      bool // code runs in Thumb state
	Mode       decode.Mode
	Dec        *decode.Arch
	rulePrefix string // of the policy's rule ids: "arm." or "thumb."
	// insnLen, insnBytes and brkBytes: an instruction value's length, its
	// bytes in memory and the breakpoint an armed probe leaves over it.
	insnLen   func(w uint32) int
	insnBytes func(w uint32) []byte
	brkBytes  func(w uint32) []byte
	// jump is code at at that continues at to (bit 0: Thumb state).
	jump func(at, to uint64) []byte
	// hit builds the kernel's hit on path from trial t: the case it runs
	// (nil: none, the state is in the returned hit) and how its result is
	// written back.
	hit func(p *A32Probe, path Path, slot []byte, t *Trial) (*Case, *a32Hit, error)
	// verifySlot checks the policy's slot image for w.
	VerifySlot func(w uint32, img []byte) []string
	// value reads an instruction value from memory bytes: the value, its
	// length, false when b is too short.
	Value func(b []byte) (uint32, int, bool)
	// codeStore reports a store addressed from the PC: it writes the
	// sandbox's code image (kernel text is read-only).
	CodeStore func(w uint32) bool
	// unpredictable names why the architecture calls an encoding
	// UNPREDICTABLE ("" when it does not, or is not modelled).
	Unpredictable func(w uint32) string
	// hex renders a value as kboost prints it (memory order); group is
	// the encoding group findings are keyed by.
	Hex, Group func(w uint32) string
}

var isaA32 = &ISA{
	name: "arm", Mode: decode.ModeA32, Dec: decode.ARM, rulePrefix: "arm.",
	insnLen:   func(uint32) int { return 4 },
	insnBytes: func(w uint32) []byte { return A64Bytes(w) },
	brkBytes:  func(w uint32) []byte { return A64Bytes(a32Breakpoint(w)) },
	jump: func(at, to uint64) []byte {
		return A64Bytes(A32LdrPC, uint32(to))
	},
	hit:        a32KernelHit,
	VerifySlot: func(_ uint32, img []byte) []string { return VerifySlotA32(img) },
	Value: func(b []byte) (uint32, int, bool) {
		if len(b) < 4 {
			return 0, 0, false
		}
		return binary.LittleEndian.Uint32(b), 4, true
	},
	Unpredictable: A32Unpredictable,
	CodeStore: func(w uint32) bool {
		return w>>16&15 == 15 && (w&0x0C100000 == 0x04000000 || w&0x0E100090 == 0x00000090 && w&0x60 != 0)
	},
	Hex:   A64Hex,
	Group: func(w uint32) string { return fmt.Sprintf("%03x", w>>20&0xff) },
}

// RandomTrialA32 fills t for an A32 case: r0..r12 and lr point into the
// scratch page (256 bytes from either end, 8-byte aligned) or, with
// probability 1/4, hold a small value; sp is Layout.InitialSP; the APSR
// flags (NZCVQ, GE) random; scratch and stack pages random, a quarter of
// their words pointers into the scratch page.
func (a *Arch) RandomTrialA32(rng *rand.Rand, t *Trial) {
	var r Regs
	for i := 0; i < 15; i++ {
		if rng.IntN(4) == 0 {
			r.GPR[i] = uint64(rng.IntN(16))
		} else {
			r.GPR[i] = a.Layout.Scratch + 256 + uint64(rng.IntN(ScratchSize-512))&^7
		}
	}
	r.GPR[A32RegSP] = a.Layout.InitialSP()
	r.Flags = uint64(rng.Uint32()) & A32FlagsMask
	t.Regs = r
	if len(t.Scratch) != ScratchSize {
		t.Scratch = make([]byte, ScratchSize)
	}
	if len(t.Stack) != StackSize {
		t.Stack = make([]byte, StackSize)
	}
	for _, m := range [][]byte{t.Scratch, t.Stack} {
		for j := 0; j < len(m); j += 4 {
			v := rng.Uint32()
			if rng.IntN(4) == 0 {
				v = uint32(a.Layout.Scratch) + uint32(rng.IntN(ScratchSize))
			}
			binary.LittleEndian.PutUint32(m[j:], v)
		}
	}
}

// A32Probe is one 32-bit ARM probe site placed in a sandbox (Arch ARM32
// or Thumb): the instruction at Layout.Orig+CodeOffset+Pre, its slot at
// Layout.Slot+SlotOffset. Word is an A32 word, or a Thumb value (a T16
// halfword, or a T32 instruction with its first halfword in bits 31..16,
// as package boost and the kernel write it). Action is the kernel's
// action for it (the suffix of the policy's arm.emulate.*,
// arm.simulate.*, thumb.emulate.* or thumb.simulate.* rule:
// "data_processing_reg", "b_bl", "cbz_cbnz"...), which selects the handler
// the hit runs.
//
// Thumb only: Pre (0, 2 or 4, CodeOffset stays word aligned) is the number
// of bytes of code before the instruction: nops, the last of them the IT
// instruction IT when IT is not zero (a one-instruction IT block, 0xbfc8
// form, so the probed instruction is the block's last and the return stub
// after it runs unconditionally).
type A32Probe struct {
	Arch       *Arch
	Word       uint32
	Action     string
	CodeOffset int
	SlotOffset int
	Pre        int
	IT         uint16
}

// Addr and SlotAddr are the sandbox addresses of the probe and its slot.
func (p *A32Probe) Addr() uint64 {
	return p.Arch.Layout.Orig + uint64(p.CodeOffset) + uint64(p.Pre)
}
func (p *A32Probe) SlotAddr() uint64 { return p.Arch.Layout.Slot + uint64(p.SlotOffset) }

// Len is the instruction's length in bytes.
func (p *A32Probe) Len() int { return p.Arch.ISA.insnLen(p.Word) }

// code is the code image with insn at the probe: the Thumb prefix, then insn.
func (p *A32Probe) code(insn []byte) []byte {
	if p.Pre == 0 {
		return insn
	}
	b := make([]byte, 0, p.Pre+len(insn))
	for i := 0; i < p.Pre; i += 2 {
		h := uint16(T32Nop)
		if i+2 == p.Pre && p.IT != 0 {
			h = p.IT
		}
		b = binary.LittleEndian.AppendUint16(b, h)
	}
	return append(b, insn...)
}

// hitCode is the code image while the probe is armed (the breakpoint over
// the instruction).
func (p *A32Probe) hitCode() []byte { return p.code(p.Arch.ISA.brkBytes(p.Word)) }

// slotMap maps a PC in c's slot to the probed instruction's coordinates
// (slot+i -> addr+i).
func (p *A32Probe) slotMap(c *Case) func(uint64) uint64 {
	s, o := c.SlotAddr(p.Arch.Layout), p.Addr()
	return func(pc uint64) uint64 {
		if pc >= s && pc < s+uint64(len(c.Slot)) {
			return pc - s + o
		}
		return pc
	}
}

// NaiveSlot is the instruction copied verbatim to a slot followed by a
// jump back to addr+len: what running it out of line without the kernel's
// emulation would do (PC reads see the slot's address).
func (p *A32Probe) NaiveSlot() []byte {
	if !p.Arch.ISA.Thumb {
		return A32NaiveSlot(p.Word, p.Addr())
	}
	b := T32Bytes(p.Word)
	return append(b, T32JumpTo(p.SlotAddr()+uint64(len(b)), (p.Addr()+uint64(len(b)))|1)...)
}

// A32Action returns the kernel action named by a linux-6.1-arm or
// linux-6.1-thumb decision's rule ids ("arm.emulate.load" -> "load",
// "thumb.simulate.b_cond" -> "b_cond"), "" when there is none.
func A32Action(ids []string) string {
	for _, id := range ids {
		for _, pre := range []string{"arm.emulate.", "arm.simulate.", "thumb.emulate.", "thumb.simulate."} {
			if s, ok := strings.CutPrefix(id, pre); ok {
				return s
			}
		}
	}
	return ""
}

// a32Handler is how the kernel's emulate_* handler passes registers to the
// slot: the renamed r0..r3 take the original fields' values (regs[field],
// or the PC value addr+8 where the handler substitutes it) and which are
// written back.
type a32Handler struct {
	name  string
	in    [4]int8 // source field (bit position of the register nibble) per r0..r3, -1 none
	pcIn  [4]bool // a PC field reads addr+8 (the handler's "pc")
	out   []int8  // r0..r3 written back to the field at in[i]
	wb    int8    // written back only with writeback (P=0 or W=1): r index, -1 none
	flags bool    // APSR read and written
	pcOut bool    // a write of r0 to PC interworks (alu_write_pc / load_write_pc)
	store bool    // emulate_str: a PC Rt reads addr+8 (str_pc_offset 8)
}

// a32Handlers are the ARM emulation handlers of Linux 6.1
// (arch/arm/probes/kprobes/actions-arm.c), keyed by action.
var a32Handlers = func() map[string]*a32Handler {
	dp := &a32Handler{name: "emulate_rd12rn16rm0rs8_rwflags", in: [4]int8{12, 8, 16, 0}, pcIn: [4]bool{false, false, true, true}, out: []int8{0}, wb: -1, flags: true, pcOut: true}
	rnm := &a32Handler{name: "emulate_rd12rn16rm0_rwflags_nopc", in: [4]int8{12, -1, 16, 0}, out: []int8{0}, wb: -1, flags: true}
	rm := &a32Handler{name: "emulate_rd12rm0_noflags_nopc", in: [4]int8{12, -1, -1, 0}, out: []int8{0}, wb: -1}
	lng := &a32Handler{name: "emulate_rdlo12rdhi16rn0rm8_rwflags_nopc", in: [4]int8{12, 8, 16, 0}, out: []int8{0, 2}, wb: -1, flags: true}
	mla := &a32Handler{name: "emulate_rd16rn12rm0rs8_rwflags_nopc", in: [4]int8{12, 8, 16, 0}, out: []int8{2}, wb: -1, flags: true}
	ldr := &a32Handler{name: "emulate_ldr", in: [4]int8{-1, -1, 16, 0}, pcIn: [4]bool{false, false, true, false}, out: nil, wb: 2, pcOut: true}
	str := &a32Handler{name: "emulate_str", in: [4]int8{12, -1, 16, 0}, pcIn: [4]bool{true, false, true, false}, wb: 2, store: true}
	ldrd := &a32Handler{name: "emulate_ldrdstrd", in: [4]int8{12, -1, 16, 0}, pcIn: [4]bool{false, false, true, false}, out: []int8{0, 1}, wb: 2}
	none := &a32Handler{name: "probes_emulate_none", in: [4]int8{-1, -1, -1, -1}, wb: -1}
	return map[string]*a32Handler{
		"data_processing_reg": dp, "data_processing_imm": dp,
		"saturating_arithmetic": rnm, "saturate": rnm, "parallel_arith": rnm, "pack": rnm, "extend_add": rnm,
		"clz": rm, "movw_movt": rm, "rev": rm, "extend": rm, "bitfield": rm,
		"mul1": lng, "mul_add_long": lng, "mul2": mla, "mul_add": mla,
		"load": ldr, "load_extra": ldr, "store": str, "store_extra": str, "ldrd_strd": ldrd,
		"sev_yield": none,
	}
}()

// a32CondHolds evaluates an A32 condition on APSR flags; 14 and 15 hold.
func a32CondHolds(cond uint32, f uint64) bool {
	// same evaluation as A64's on NZCV, which sit at the same bits
	return a64CondHolds(cond, f)
}

// A32NaiveSlot is the instruction copied verbatim to the slot followed by a
// jump back to addr+4: what running it out of line without the kernel's
// emulation would do (PC reads see the slot's address).
func A32NaiveSlot(word uint32, addr uint64) []byte { return A64Bytes(word, A32LdrPC, uint32(addr+4)) }

// a32Field is the register number at bit position pos of w.
func a32Field(w uint32, pos int8) int { return int(w>>uint(pos)) & 15 }

// a32Writeback reports P=0 or W=1 (a load/store that updates its base).
func a32Writeback(w uint32) bool { return w&(1<<24) == 0 || w&(1<<21) != 0 }

// a32Hit is the state of one kernel hit in progress.
type a32Hit struct {
	regs  Regs // the probed context's registers after the handler
	thumb bool // CPSR.T after the handler
	mem   *Result
	fault *Result
	skip  bool // condition failed: the kernel skips the instruction
	// wb writes the result of the hit's case back into regs the way the
	// handler does (regs.PC is addr+len and thumb the ISA's state before).
	wb func(h *a32Hit, r *Result)
}

// newHit is a hit that leaves the registers of t and continues after the
// instruction in the ISA's state.
func (p *A32Probe) newHit(t *Trial) *a32Hit {
	h := &a32Hit{regs: t.Regs, thumb: p.Arch.ISA.Thumb}
	h.regs.PC = p.Addr() + uint64(p.Len())
	return h
}

// slotCase is the case that calls slot as the handler does: entered at
// the slot with the registers of t (the caller sets the handler's), lr the
// return stub after the armed probe.
func (p *A32Probe) slotCase(slot []byte, t *Trial) *Case {
	c := &Case{Code: p.hitCode(), CodeOffset: p.CodeOffset, Slot: slot, SlotOffset: p.SlotOffset, EntrySlot: true, Regs: t.Regs, Scratch: t.Scratch, Stack: t.Stack}
	c.Regs.GPR[a32RegLR] = c.ReturnAddr(p.Arch.Layout)
	if p.Arch.ISA.Thumb {
		c.Regs.GPR[a32RegLR] |= 1
	}
	return c
}

// a32KernelHit is the A32 hit: the condition check, then the kernel's
// simulation (PathEmulate) or its slot called with the handler's register
// set-up (PathSingleStep).
func a32KernelHit(p *A32Probe, path Path, slot []byte, t *Trial) (*Case, *a32Hit, error) {
	w := p.Word
	h := p.newHit(t)
	addr := p.Addr()
	cond := w >> 28
	if cond != 15 && !a32CondHolds(cond, t.Regs.Flags) {
		h.skip = true
		return nil, h, nil
	}
	if p.Action == "ldm_stm" {
		c, err := ldmstmHit(p, path, slot, t, h)
		if err != nil {
			return nil, nil, err
		}
		return c, h, nil
	}
	switch path {
	case PathEmulate:
		r, thumb, err := p.Arch.SimulateA32(w, p.Action, addr, t)
		if err != nil {
			return nil, nil, err
		}
		h.regs, h.thumb = r, thumb
		return nil, h, nil
	case PathSingleStep:
	default:
		return nil, nil, ErrNoSlot
	}
	hd := a32Handlers[p.Action]
	if hd == nil {
		return nil, nil, &EmulateError{Inst: fmt.Sprintf("%08x", w), Why: fmt.Sprintf("no model of the kernel's handler for action %q", p.Action)}
	}
	h.wb = p.a32Writeback
	c := p.slotCase(slot, t)
	for i, pos := range hd.in {
		if pos < 0 {
			continue
		}
		n := a32Field(w, pos)
		v := t.Regs.GPR[min(n, 14)]
		if n == 15 {
			v = addr + 8
		}
		c.Regs.GPR[i] = v
	}
	if hd.name == "emulate_ldrdstrd" {
		// r1 is Rt+1's value (Rt2 is implied)
		c.Regs.GPR[1] = t.Regs.GPR[min(a32Field(w, 12)+1, 14)]
	}
	if !hd.flags {
		// the flags at the slot are whatever the kernel had; the handler
		// does not read them back
		c.Regs.Flags = t.Regs.Flags
	}
	return c, h, nil
}

// a32Writeback applies the A32 handler's write-back of the slot's result r.
func (p *A32Probe) a32Writeback(h *a32Hit, r *Result) {
	w := p.Word
	hd := a32Handlers[p.Action]
	set := func(n int, v uint64) {
		if n == 15 {
			if hd.pcOut {
				h.thumb = v&1 != 0
				if v&1 != 0 {
					v &^= 1
				} else {
					v &^= 3
				}
			}
			h.regs.PC = v
			return
		}
		h.regs.GPR[n] = v
	}
	switch hd.name {
	case "emulate_ldr":
		set(a32Field(w, 12), r.Regs.GPR[0])
	case "emulate_ldrdstrd":
		rt := a32Field(w, 12)
		set(rt, r.Regs.GPR[0])
		set(rt+1, r.Regs.GPR[1])
	default:
		for _, i := range hd.out {
			set(a32Field(w, hd.in[i]), r.Regs.GPR[i])
		}
	}
	if hd.wb >= 0 && a32Writeback(w) {
		set(a32Field(w, hd.in[hd.wb]), r.Regs.GPR[hd.wb])
	}
	if hd.flags {
		h.regs.Flags = r.Regs.Flags & A32FlagsMask
	}
}

// SimulateA32 is an independent model of the Linux 6.1 ARM simulation
// handlers (decode-arm.c simulate_*, probes_simulate_nop) that run no slot.
// It returns the registers after the hit and whether the CPSR T bit is set.
func (a *Arch) SimulateA32(w uint32, action string, addr uint64, t *Trial) (Regs, bool, error) {
	r := t.Regs
	r.PC = addr + 4
	disp := uint64(int64(int32(w<<8) >> 6)) // branch_displacement: sign-extended imm24 << 2
	switch action {
	case "preload_imm", "preload_reg", "nop_wfe_wfi":
	case "b_bl":
		if w&(1<<24) != 0 {
			r.GPR[a32RegLR] = addr + 4
		}
		r.PC = (addr + 8 + disp) & 0xFFFF_FFFF
	case "blx_imm":
		r.GPR[a32RegLR] = addr + 4
		r.PC = (addr + 8 + disp + uint64(w>>23&2)) & 0xFFFF_FFFF
		return r, true, nil
	case "bx_blx_reg":
		v := t.Regs.GPR[min(int(w&15), 14)]
		if w&15 == 15 {
			v = addr + 8
		}
		if w&(1<<5) != 0 {
			r.GPR[a32RegLR] = addr + 4
		}
		r.PC = v &^ 1
		return r, v&1 != 0, nil
	case "mrs":
		// the probed context's CPSR: user mode (0x10) here, flags from the trial
		r.GPR[a32Field(w, 12)] = (t.Regs.Flags&A32FlagsMask | 0x10) & 0xF8FF03DF
	case "mov_ip_sp":
		r.GPR[12] = r.GPR[A32RegSP]
	default:
		return r, false, &EmulateError{Inst: fmt.Sprintf("%08x", w), Why: fmt.Sprintf("no model of the kernel's simulation for action %q", action)}
	}
	return r, false, nil
}

// A32BreakpointInsn is the ARM kprobe breakpoint (an undefined
// instruction, KPROBE_ARM_BREAKPOINT_INSTRUCTION) without its condition.
const A32BreakpointInsn = 0x07F001F8

// Breakpoint is the A32 word an armed probe leaves at the probed address:
// the breakpoint with the instruction's condition (AL for the
// unconditional space), as arch_arm_kprobe writes it. The kernel's hit
// runs with it in place, so a PC-relative load of the probed word reads
// it. (Thumb: BreakpointBytes.)
func (p *A32Probe) Breakpoint() uint32 { return a32Breakpoint(p.Word) }

func a32Breakpoint(w uint32) uint32 {
	if w >= 0xF0000000 {
		return A32BreakpointInsn | 0xE0000000
	}
	return A32BreakpointInsn | w&0xF0000000
}

// BreakpointBytes is what an armed probe leaves over the instruction, in
// memory order: the A32 breakpoint word, or the Thumb 16- or 32-bit
// breakpoint (0xde18, 0xf7f0 0xa018).
func (p *A32Probe) BreakpointBytes() []byte { return p.Arch.ISA.brkBytes(p.Word) }

// RefCase is the instruction run in place from trial t (after the Thumb
// prefix, when there is one).
func (p *A32Probe) RefCase(t *Trial) Case {
	return Case{Code: p.code(p.Arch.ISA.insnBytes(p.Word)), CodeOffset: p.CodeOffset, Regs: t.Regs, Scratch: t.Scratch, Stack: t.Stack}
}

// CheckHitA32 runs p (A32 or Thumb) in place and through the kernel's hit
// on path for every trial on b and compares them:
//   - PathSingleStep: the kernel's slot (slot, from the policy: the renamed
//     instruction and mov pc, lr, or [insn, bx lr] for Thumb) is called
//     with the handler's register set-up (A32: r0..r3 from the original
//     register fields, PC fields reading addr+8, the APSR for the rwflags
//     handlers; Thumb: see a32_thumb.go) and its results are written back the
//     way the handler does;
//   - PathEmulate: the kernel's simulation (SimulateA32, the Thumb and
//     LDM/STM simulations) computes the state;
//   - PathBoost: the instruction runs verbatim from a slot followed by a
//     jump to addr+len (no PC fix-up: what a naive out-of-line copy does).
//
// A condition that fails (the instruction's, or for Thumb the IT block's)
// skips the instruction (PC = addr+len), as kprobe_handler does. When the
// hit leaves the PC elsewhere than addr+len, or in the other instruction
// set, the case continues there in a second run, so both sides are
// compared where the in-place run ends.
func CheckHitA32(b Backend, p *A32Probe, path Path, slot []byte, trials []Trial) ([]HitCheck, error) {
	out, errs, err := CheckHitsA32(b, []A32Hit{{Probe: p, Path: path, Slot: slot, Trials: trials}})
	if err != nil {
		return nil, err
	}
	if errs[0] != nil {
		return nil, errs[0]
	}
	return out[0], nil
}

// A32Hit is one probe to check on a path over trials (CheckHitsA32).
type A32Hit struct {
	Probe  *A32Probe
	Path   Path
	Slot   []byte
	Trials []Trial
}

// CheckHitsA32 is CheckHitA32 for many probes in one batch (plus one for
// the continuations). errs[i] is the model error of hs[i] (an
// *EmulateError when the kernel's handler is not modelled).
func CheckHitsA32(b Backend, hs []A32Hit) ([][]HitCheck, []error, error) {
	type item struct {
		h        *A32Hit
		hc       *HitCheck
		hit      *a32Hit
		tr       *Trial
		ref, run int
		cont     int
	}
	outs := make([][]HitCheck, len(hs))
	errs := make([]error, len(hs))
	var items []item
	var cases []Case
	for j := range hs {
		h := &hs[j]
		p := h.Probe
		out := make([]HitCheck, len(h.Trials))
		var its []item
		var cs []Case
		for i := range h.Trials {
			tr := &h.Trials[i]
			it := item{h: h, hc: &out[i], tr: tr, run: -1, cont: -1}
			out[i].Trial = *tr
			out[i].Ref = p.RefCase(tr)
			if h.Path == PathBoost {
				out[i].Hit = Case{CodeOffset: p.CodeOffset, Code: out[i].Ref.Code, Slot: p.NaiveSlot(), SlotOffset: p.SlotOffset, EntrySlot: true,
					Regs: tr.Regs, Scratch: tr.Scratch, Stack: tr.Stack}
				out[i].Ref.Slot, out[i].Ref.SlotOffset = out[i].Hit.Slot, p.SlotOffset
				it.ref = len(cases) + len(cs)
				it.run = it.ref + 1
				cs = append(cs, out[i].Ref, out[i].Hit)
				its = append(its, it)
				continue
			}
			c, kh, err := p.Arch.ISA.hit(p, h.Path, h.Slot, tr)
			if err != nil {
				errs[j] = err
				its, cs = nil, nil
				break
			}
			it.hit = kh
			out[i].Ref.Slot, out[i].Ref.SlotOffset = h.Slot, p.SlotOffset
			it.ref = len(cases) + len(cs)
			cs = append(cs, out[i].Ref)
			if c != nil {
				out[i].Hit = *c
				it.run = len(cases) + len(cs)
				cs = append(cs, *c)
			}
			its = append(its, it)
		}
		if errs[j] != nil {
			continue
		}
		outs[j] = out
		items = append(items, its...)
		cases = append(cases, cs...)
	}
	res := make([]Result, len(cases))
	if err := b.Run(cases, res); err != nil {
		return nil, nil, err
	}
	var cont []Case
	for k := range items {
		it := &items[k]
		p, hc := it.h.Probe, it.hc
		l := p.Arch.Layout
		hc.RefR = res[it.ref]
		if it.h.Path == PathBoost {
			hc.HitR = res[it.run]
			continue
		}
		h := it.hit
		if it.run >= 0 {
			if r := &res[it.run]; r.Outcome != Completed {
				h.fault = r
			} else {
				h.mem = r
				if h.wb != nil {
					h.wb(h, r)
				}
			}
		}
		if h.fault != nil {
			// the handler's access faulted: reported at the probe with the
			// probed context's registers
			r := *h.fault
			r.Regs = it.tr.Regs
			r.Regs.PC = p.Addr()
			if r.Outcome == Faulted {
				r.Fault.Addr = p.slotMap(&hc.Hit)(r.Fault.Addr)
			}
			hc.HitR = r
			continue
		}
		r := Result{Outcome: Completed, Regs: h.regs}
		if h.mem != nil {
			r.Scratch, r.Stack = h.mem.Scratch, h.mem.Stack
		} else {
			r.Scratch, r.Stack = padPage(it.tr.Scratch), padPage(it.tr.Stack)
		}
		if h.regs.PC == p.Addr()+uint64(p.Len()) && h.thumb == p.Arch.ISA.Thumb {
			hc.HitR = r
			continue
		}
		// continue at the new PC: a slot that jumps there
		to := h.regs.PC
		if h.thumb {
			to |= 1
		}
		c := Case{Code: p.hitCode(), CodeOffset: p.CodeOffset, Slot: p.Arch.ISA.jump(p.SlotAddr(), to), SlotOffset: p.SlotOffset, EntrySlot: true,
			Regs: h.regs, Scratch: r.Scratch, Stack: r.Stack}
		hc.Hit = c
		if sp := h.regs.GPR[A32RegSP]; sp < l.Stack+16 || sp > l.Stack+StackSize {
			// the sandbox needs sp in its stack page to run a case: the
			// continuation cannot run (counted inconclusive)
			hc.HitR = Result{Outcome: Crashed, Regs: h.regs}
			continue
		}
		it.cont = len(cont)
		cont = append(cont, c)
	}
	if len(cont) > 0 {
		cres := make([]Result, len(cont))
		if err := b.Run(cont, cres); err != nil {
			return nil, nil, err
		}
		for k := range items {
			if items[k].cont >= 0 {
				items[k].hc.HitR = cres[items[k].cont]
			}
		}
	}
	for k := range items {
		hc := items[k].hc
		hc.Diff = items[k].h.Probe.CompareHit(&hc.Hit, &hc.RefR, &hc.HitR)
	}
	return outs, errs, nil
}

func padPage(b []byte) []byte {
	p := make([]byte, PageSize)
	copy(p, b)
	return p
}

// CompareHit compares the in-place result ref with the hit cand. A
// reference refused as a system call, or undefined in user mode (SIGILL at
// the probed address), is NotVerifiable.
func (p *A32Probe) CompareHit(c *Case, ref, cand *Result) Diff {
	if ref.Outcome == Faulted && ref.Fault.Signal == SIGSYS {
		return Diff{Verdict: NotVerifiable, Fields: []string{ref.Fault.String()}}
	}
	if ref.Outcome == Faulted && ref.Fault.Signal == SIGILL && ref.Regs.PC == p.Addr() {
		return Diff{Verdict: NotVerifiable, Fields: []string{"undefined in user mode: " + ref.Fault.String()}}
	}
	return p.Arch.Compare(ref, cand, p.slotMap(c))
}

// VerifySlot checks the policy's slot image for p's instruction: the
// (renamed) instruction then mov pc, lr (A32) or bx lr (Thumb).
func (p *A32Probe) VerifySlot(img []byte) []string { return p.Arch.ISA.VerifySlot(p.Word, img) }

// ARM32Value reads a 32-bit ARM instruction value from memory bytes for
// a (ARM32: a word; Thumb: see T32Value): the value, its length, false
// when b is too short or a is not a 32-bit ARM Arch.
func (a *Arch) ARM32Value(b []byte) (uint32, int, bool) {
	if a.ISA == nil {
		return 0, 0, false
	}
	return a.ISA.Value(b)
}

// A32Unpredictable names why the architecture calls the A32 word w
// UNPREDICTABLE, for the forms whose kernel emulation can differ from a
// CPU's: a load or store with writeback into its transfer register, an
// LDM with writeback whose base is in the list; "" otherwise.
func A32Unpredictable(w uint32) string {
	rn, rt := w>>16&15, w>>12&15
	wback := w&(1<<24) == 0 || w&(1<<21) != 0
	switch {
	case w>>28 == 15:
	case w&0x0C000000 == 0x04000000 && !(w&0x02000000 != 0 && w&0x10 != 0), // LDR/STR(B) immediate, register
		w&0x0E000090 == 0x00000090 && w&0x60 != 0: // LDRH/STRH/LDRSB/LDRSH/LDRD/STRD
		if wback && rn == rt && rn != 15 {
			return "a load/store with writeback and Rn = Rt"
		}
	case w&0x0E100000 == 0x08100000: // LDM
		if w&(1<<21) != 0 && w&(1<<rn) != 0 {
			return "LDM with writeback and Rn in the list"
		}
	}
	return ""
}

// VerifySlotA32 checks an A32 emulation slot image: one instruction word
// and mov pc, lr.
func VerifySlotA32(img []byte) []string {
	if len(img) != 8 {
		return []string{fmt.Sprintf("slot is %d bytes, want 8 (insn + mov pc, lr)", len(img))}
	}
	if t := binary.LittleEndian.Uint32(img[4:]); t != A32MovPCLR {
		return []string{fmt.Sprintf("slot tail %#08x is not mov pc, lr", t)}
	}
	return nil
}

// Where says where a Thumb probe sits, as `kboost sim --arch thumb` flags:
// --it COND when it ends a one-instruction IT block, and an --addr with
// its alignment ("" for A32).
func (p *A32Probe) Where() string {
	if !p.Arch.ISA.Thumb {
		return ""
	}
	s := fmt.Sprintf("--addr %#x", 0xc0100000+p.Addr()%4)
	if p.IT != 0 {
		s = fmt.Sprintf("--it %s %s", strings.ToLower(decode.Cond(p.IT>>4&15).String()), s)
	}
	return s
}
