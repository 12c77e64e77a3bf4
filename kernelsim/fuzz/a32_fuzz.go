package fuzz

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/gdbserial"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// A32Fuzzer is the engine of `kboost fuzz --arch arm` and `--arch thumb`
// (the backend's Arch, ARM32 or Thumb, selects the instruction set): for
// each generated instruction, linux-6.1-arm's or linux-6.1-thumb's
// decision against differential execution on the 32-bit ARM backend: the
// instruction in place versus the kernel's hit (the policy's slot called
// with the handler's register set-up and written back the way the handler
// does, or the kernel's simulation; A32Probe), over random states. ARM
// kprobes never boost, so the findings are policy-divergence (the
// kernel's way differs from the instruction) and slot-model (the policy's
// slot is not [renamed insn, mov pc, lr] / [insn, bx lr]). A divergence
// counts only when it reproduces and the in-place run is deterministic.
// Hits kboost does not model count as Inconclusive, per action in
// Unmodelled: Thumb IT (the sandbox cannot resume with ITSTATE set) and
// LDM/STM simulations that move words outside the trial's pages or
// unaligned (the kernel's own memory, its alignment fix-up).
//
// Thumb cases are placed at both halfword alignments, and a quarter of
// those the architecture allows there run as the last instruction of a
// one-instruction IT block (A32Probe.Pre and IT).
type A32Fuzzer struct {
	fuzzCore
	isa *kernelsim.ISA
}

// NewA32Fuzzer prepares a fuzz run on a 32-bit ARM backend (ARM32 or
// Thumb).
func NewA32Fuzzer(cfg Config) *A32Fuzzer {
	f := &A32Fuzzer{}
	f.isa = cfg.Backend.Arch().ISA
	if f.isa == nil {
		f.isa = kernelsim.ARM32.ISA
	}
	if f.isa.Thumb {
		f.init(cfg, 0x743332667a, "not applicable: a Thumb instruction's length is in its first halfword")
	} else {
		f.init(cfg, 0x613332667a, "not applicable: A32 instructions are 4 bytes")
	}
	f.env.SlotAddr = 0 // no optprobe detour range check
	return f
}

type a32case struct {
	w    uint32
	n    int // bytes
	inst decode.Inst
	dec  boost.Decision
	path kernelsim.Path
	p    kernelsim.A32Probe
}

// place chooses where a Thumb instruction sits (Pre) and whether it ends a
// one-instruction IT block.
func (f *A32Fuzzer) place(p *kernelsim.A32Probe) {
	if !f.isa.Thumb {
		return
	}
	p.Pre = 2 * f.rng.IntN(2)
	if f.rng.IntN(4) == 0 && kernelsim.T32ITAllowed(p.Word) {
		p.Pre += 2
		p.IT = 0xBF08 | uint16(f.rng.IntN(15))<<4
	}
}

// Block runs n cases.
func (f *A32Fuzzer) Block(n int) error {
	a, isa := f.a, f.isa
	var fc []a32case
	for range n {
		b := f.cfg.Source.Next(nil)
		f.Stats.Cases++
		w, ln, ok := isa.Value(b)
		if !ok {
			f.Stats.DecodeInvalid++
			continue
		}
		c := a32case{w: w, n: ln}
		c.p = kernelsim.A32Probe{Arch: a, Word: w, CodeOffset: kernelsim.FuzzCodeOffset, SlotOffset: kernelsim.FuzzSlotOffset}
		f.place(&c.p)
		addr := c.p.Addr()
		if err := isa.Dec.Decode(&c.inst, b[:ln], addr); err != nil {
			f.Stats.DecodeInvalid++ // the policy still judges the word
		}
		c.dec = f.cfg.Policy.ClassifyBytesEnv(b[:ln], isa.Mode, addr, &f.env)
		c.path = kernelsim.PathOf(&c.dec)
		f.Stats.Verdicts[c.dec.Verdict.String()]++
		if c.path == kernelsim.PathNone {
			continue
		}
		c.p.Action = kernelsim.A32Action(c.dec.ReasonIDs())
		if c.path == kernelsim.PathSingleStep {
			if probs := isa.VerifySlot(w, c.dec.SlotBytes()); len(probs) > 0 {
				f.Stats.SlotProblems++
				f.report(&Finding{Kind: "slot-model", Key: "slot:" + isa.Group(w), Bytes: isa.Hex(w), Verdict: c.dec.Verdict.String(), Diverged: probs})
				continue
			}
		}
		fc = append(fc, c)
	}
	for k := range f.trials {
		a.RandomTrialA32(f.rng, &f.trials[k])
	}
	hs := make([]kernelsim.A32Hit, len(fc))
	for i := range fc {
		hs[i] = kernelsim.A32Hit{Probe: &fc[i].p, Path: fc[i].path, Slot: fc[i].dec.SlotBytes(), Trials: f.trials}
	}
	outs, errs, err := kernelsim.CheckHitsA32(f.cfg.Backend, hs)
	if err != nil {
		return err
	}
	for i := range fc {
		c := &fc[i]
		var ee *kernelsim.EmulateError
		if errors.As(errs[i], &ee) {
			if f.Stats.Unmodelled == nil {
				f.Stats.Unmodelled = map[string]int{}
			}
			f.Stats.Unmodelled[c.p.Action]++
			f.Stats.Inconclusive++
			continue
		} else if errs[i] != nil {
			return errs[i]
		}
		ds := make([]kernelsim.Diff, len(outs[i]))
		for k, h := range outs[i] {
			ds[k] = h.Diff
			f.Stats.Checks++
		}
		switch kernelsim.Summarize(ds) {
		case kernelsim.Diverged:
			first := -1
			for k, d := range ds {
				if d.Verdict == kernelsim.Diverged {
					first = k
					break
				}
			}
			if f.nondeterministic(c) {
				f.Stats.Nondeterministic++
				continue
			}
			hc, err := kernelsim.CheckHitA32(f.cfg.Backend, &c.p, c.path, c.dec.SlotBytes(), []kernelsim.Trial{f.trials[first]})
			if err != nil || hc[0].Diff.Verdict != kernelsim.Diverged {
				f.Stats.Unreproducible++
				continue
			}
			if inRunner(hc[0].RefR.Regs.PC) || inRunner(hc[0].HitR.Regs.PC) || f.isa.CodeStore(c.w) {
				// a store into the code image (kernel text is read-only),
				// which may change the return stub: the run may end in the
				// sandbox's runner
				f.Stats.Uncontrolled++
				continue
			}
			f.Stats.PolicyDivergences++
			if f.divergence(c, ds, &hc[0]) != "" {
				f.Stats.Unpredictable++
			}
		case kernelsim.NotVerifiable:
			f.Stats.NotVerifiable++
		case kernelsim.Inconclusive:
			f.Stats.Inconclusive++
		}
	}
	return nil
}

// unpredictable says why a divergence is on an encoding or a state the
// architecture calls UNPREDICTABLE ("" when it is not): the encoding's
// own rules, or an interworking PC write to an address with bits 1:0 =
// 0b10, which the kernel's bx_write_pc aligns and a CPU need not.
func (f *A32Fuzzer) unpredictable(c *a32case, h *kernelsim.HitCheck) string {
	if why := f.isa.Unpredictable(c.w); why != "" {
		return why
	}
	if f.isa.Thumb && c.w == 0x4778 && c.p.Addr()%4 == 2 {
		return "BX PC at an address 2 mod 4: an ARM-state target with bit 1 set"
	}
	ref, hit := h.RefR.Regs.PC, h.HitR.Regs.PC
	if ref&3 == 2 && hit == ref&^2 && !slices.ContainsFunc(h.Diff.Fields, func(s string) bool { return s != "pc" && s != "fault-addr" }) {
		return "an interworking PC write to an address with bits 1:0 = 0b10 (the kernel's bx_write_pc clears bit 1)"
	}
	if h.RefR.Outcome == kernelsim.Faulted && h.HitR.Outcome == kernelsim.Faulted && h.RefR.Fault == h.HitR.Fault && ref == hit &&
		!slices.ContainsFunc(h.Diff.Fields, func(s string) bool { return !slices.Contains(f.a.RegNames, s) }) {
		return "the same fault, registers differing: destination registers of a load that faults part-way are UNKNOWN"
	}
	return ""
}

// divergence reports a reproduced divergence (once per key) and returns
// why it is UNPREDICTABLE, if it is.
func (f *A32Fuzzer) divergence(c *a32case, ds []kernelsim.Diff, h *kernelsim.HitCheck) string {
	why := f.unpredictable(c, h)
	key := fmt.Sprintf("policy-divergence:%s/%s", strings.Join(c.dec.ReasonIDs(), ","), strings.Join(h.Diff.Fields, ","))
	if why != "" {
		key += "/unpredictable"
	}
	if f.seen[key] > 0 {
		f.seen[key]++
		return why
	}
	n := 0
	for _, d := range ds {
		if d.Verdict == kernelsim.Diverged {
			n++
		}
	}
	h = f.minimize(c, h)
	rp := &Reproducer{Bytes: f.isa.Hex(c.w), Regs: map[string]string{}, Flags: fmt.Sprintf("%#x", h.Trial.Regs.Flags),
		InPlace: describe(f.a, &h.RefR), Hit: describe(f.a, &h.HitR), Diff: h.Diff.String()}
	for r := 0; r < f.a.NumGPR(); r++ {
		if v := h.Trial.Regs.GPR[r]; v != 0 {
			rp.Regs[f.a.RegNames[r]] = fmt.Sprintf("%#x", v)
		}
	}
	fd := &Finding{Kind: "policy-divergence", Key: key, Bytes: f.isa.Hex(c.w), Asm: decode.Format(&c.inst, nil),
		Verdict: c.dec.Verdict.String(), Path: c.path.String(), Reasons: c.dec.ReasonIDs(), Details: c.dec.ReasonTexts(), Diverged: h.Diff.Fields,
		Trials: len(ds), DivergedTrials: n, Reproducer: rp}
	var notes []string
	if why != "" {
		notes = append(notes, "UNPREDICTABLE: "+why)
	}
	if sv, _, ok := f.isa.Value(c.dec.SlotBytes()); ok && c.path == kernelsim.PathSingleStep {
		if sw := f.isa.Unpredictable(sv); sw != "" {
			notes = append(notes, fmt.Sprintf("the kernel's slot instruction %s is UNPREDICTABLE (%s): a CPU may run it, QEMU need not", f.isa.Hex(sv), sw))
		}
	}
	if w := c.p.Where(); w != "" {
		notes = append(notes, "reproduce with kboost sim --arch thumb "+w)
	}
	fd.Note = strings.Join(notes, "; ")
	f.report(fd)
	return why
}

// minimize zeroes every register (but sp) whose value does not matter to
// the divergence: the same fields still differ without it.
func (f *A32Fuzzer) minimize(c *a32case, h *kernelsim.HitCheck) *kernelsim.HitCheck {
	want := strings.Join(h.Diff.Fields, ",")
	for r := 0; r < f.a.NumGPR(); r++ {
		if r == f.a.SP || h.Trial.Regs.GPR[r] == 0 {
			continue
		}
		t := h.Trial
		t.Regs.GPR[r] = 0
		hc, err := kernelsim.CheckHitA32(f.cfg.Backend, &c.p, c.path, c.dec.SlotBytes(), []kernelsim.Trial{t})
		if err == nil && hc[0].Diff.Verdict == kernelsim.Diverged && strings.Join(hc[0].Diff.Fields, ",") == want {
			h = &hc[0]
		}
	}
	return h
}

// nondeterministic runs the in-place case three times from the first state.
func (f *A32Fuzzer) nondeterministic(c *a32case) bool {
	key := uint64(c.w) | uint64(c.p.IT)<<32 | uint64(c.p.Pre)<<48
	return f.selfDiffers(string(binary.LittleEndian.AppendUint64(nil, key)), c.p.RefCase(&f.trials[0]))
}

// A32Gen generates A32 words: random words within the encoding groups the
// kernel's tables split on (data processing, loads and stores, media,
// multiplies, branches, the unconditional space), fully random words, and
// mutations of sample words. A quarter keep a condition other than AL.
type A32Gen struct {
	genRand
	samples []uint32
}

// NewA32Gen returns a generator; samples are real instruction words to
// mutate (may be empty).
func NewA32Gen(seed uint64, samples []uint32) *A32Gen {
	return &A32Gen{genRand: newGenRand(seed, 0x6133326765), samples: samples}
}

var a32Classes = []struct{ mask, value uint32 }{
	{0x0E000000, 0x00000000}, // data processing (register), misc, multiplies, extra loads/stores
	{0x0E000000, 0x02000000}, // data processing (immediate), MOVW/MOVT, MSR imm, hints
	{0x0E000000, 0x04000000}, // load/store immediate
	{0x0E000010, 0x06000000}, // load/store register
	{0x0E000010, 0x06000010}, // media
	{0x0E000000, 0x08000000}, // LDM/STM
	{0x0E000000, 0x0A000000}, // B/BL
	{0x0FFFFFD0, 0x012FFF10}, // BX/BLX register
	{0x0F9000F0, 0x01000000}, // MRS/MSR register
	{0x0E0000F0, 0x00000090}, // multiplies, SWP, exclusives
	{0x0E000090, 0x00000090}, // extra loads/stores (LDRH, LDRD...)
	{0x0FFF0000, 0x052D0000}, // push-like stores (stack checker)
	{0x0FFF0000, 0x092D0000}, // STMDB sp!
	{0x0C000000, 0x0C000000}, // coprocessor, SVC
}

// Next appends one 4-byte candidate to dst.
func (g *A32Gen) Next(dst []byte) []byte {
	var w uint32
	switch r := g.rng.IntN(20); {
	case r < 6 && len(g.samples) > 0:
		w = g.samples[g.rng.IntN(len(g.samples))]
		switch g.rng.IntN(4) {
		case 0: // as is
		case 1:
			w ^= 1 << g.rng.IntN(28)
		case 2: // new register fields
			for _, sh := range []int{0, 8, 12, 16} {
				if g.rng.IntN(2) == 0 {
					w = w&^(15<<sh) | uint32(g.rng.IntN(16))<<sh
				}
			}
		case 3:
			w = w&^0xFFF | g.rng.Uint32()&0xFFF
		}
	case r < 8:
		w = g.rng.Uint32()
	default:
		c := a32Classes[g.rng.IntN(len(a32Classes))]
		w = c.value&c.mask | g.rng.Uint32()&^c.mask&0x0FFFFFFF
		if g.rng.IntN(4) == 0 {
			w |= uint32(g.rng.IntN(14)) << 28
		} else {
			w |= 0xE0000000
		}
	}
	// short branches: targets in or next to the code page, but not the
	// probed word itself (-2: addr, or addr+2 for BLX)
	if w&0x0E000000 == 0x0A000000 && g.rng.IntN(2) == 0 {
		off := g.rng.IntN(32) - 16
		if off == -2 {
			off = 1
		}
		w = w&^0xFFFFFF | uint32(off)&0xFFFFFF
	}
	return binary.LittleEndian.AppendUint32(dst, w)
}

// T32Gen generates Thumb instructions (memory order: a halfword, or two
// for a 32-bit one): random values within the encoding groups the
// kernel's Thumb tables split on (T16: shifts and immediates, data
// processing, high-register ops and BX/BLX, literal, register, immediate
// and SP-relative loads and stores, ADR, the miscellaneous group with
// CBZ, PUSH/POP, IT and hints, LDM/STM, conditional and plain branches;
// T32: load/store multiple, dual and exclusive with TBB/TBH, shifted
// register, modified and plain immediates, branches and miscellaneous
// control, single loads and stores with literals, register data
// processing, multiplies, coprocessor), fully random values, and
// mutations of sample values. Branches and literals get short offsets
// half of the time, so their targets lie in or next to the code image.
type T32Gen struct {
	genRand
	samples []uint32
}

// NewT32Gen returns a generator; samples are Thumb values (T32Value) to
// mutate (may be empty).
func NewT32Gen(seed uint64, samples []uint32) *T32Gen {
	return &T32Gen{genRand: newGenRand(seed, 0x7433326765), samples: samples}
}

var t16Classes = []struct{ mask, value uint32 }{
	{0xC000, 0x0000}, // shift (immediate), add, subtract, move, compare
	{0xFC00, 0x4000}, // data processing
	{0xFC00, 0x4400}, // high-register operations, BX/BLX
	{0xF800, 0x4800}, // LDR literal
	{0xF000, 0x5000}, // load/store register offset
	{0xE000, 0x6000}, // LDR/STR(B) immediate
	{0xF000, 0x8000}, // LDRH/STRH immediate
	{0xF000, 0x9000}, // SP-relative LDR/STR
	{0xF000, 0xA000}, // ADR, ADD SP
	{0xF000, 0xB000}, // miscellaneous
	{0xF500, 0xB100}, // CBZ/CBNZ
	{0xFE00, 0xB400}, // PUSH
	{0xFE00, 0xBC00}, // POP
	{0xFF00, 0xBF00}, // IT, hints
	{0xF000, 0xC000}, // LDM/STM
	{0xF000, 0xD000}, // B<c>, UDF, SVC
	{0xF800, 0xE000}, // B
}

var t32Classes = []struct{ mask, value uint32 }{
	{0xFE400000, 0xE8000000}, // LDM/STM (and SRS/RFE)
	{0xFE400000, 0xE8400000}, // LDRD/STRD, exclusives, TBB/TBH
	{0xFFF0FFE0, 0xE8D0F000}, // TBB/TBH
	{0xFE000000, 0xEA000000}, // data processing (shifted register)
	{0xEC000000, 0xEC000000}, // coprocessor, VFP, NEON
	{0xF8008000, 0xF0000000}, // data processing (modified / plain immediate)
	{0xF8008000, 0xF0008000}, // branches, miscellaneous control
	{0xFFFFFF00, 0xF3AF8000}, // hints
	{0xFFFFF000, 0xF3EF8000}, // MRS
	{0xFE000000, 0xF8000000}, // load/store single, preloads
	{0xFF7F0000, 0xF85F0000}, // LDR literal
	{0xFF000000, 0xFA000000}, // data processing (register)
	{0xFF800000, 0xFB000000}, // multiply, multiply-accumulate
	{0xFF800000, 0xFB800000}, // long multiply, divide
}

// Next appends one candidate (2 or 4 bytes) to dst.
func (g *T32Gen) Next(dst []byte) []byte {
	var v uint32
	switch r := g.rng.IntN(20); {
	case r < 4 && len(g.samples) > 0:
		v = g.samples[g.rng.IntN(len(g.samples))]
		switch g.rng.IntN(3) {
		case 0:
		case 1:
			v ^= 1 << g.rng.IntN(16)
		case 2:
			if v>>16 != 0 {
				v ^= 1 << (16 + g.rng.IntN(11))
			}
		}
	case r < 6:
		v = g.rng.Uint32() >> (16 * g.rng.UintN(2))
	case r < 13:
		c := t16Classes[g.rng.IntN(len(t16Classes))]
		v = c.value&c.mask | g.rng.Uint32()&^c.mask&0xFFFF
	default:
		c := t32Classes[g.rng.IntN(len(t32Classes))]
		v = c.value&c.mask | g.rng.Uint32()&^c.mask
	}
	// a value that is neither a T16 halfword nor a T32 pair reads as the
	// halfwords it is made of: keep its first one (T32Value decides)
	if v>>16 != 0 && v>>27 < 0x1D {
		v >>= 16
	}
	if v>>16 == 0 && v>>11 >= 0x1D {
		v = v<<16 | g.rng.Uint32()&0xFFFF
	}
	if g.rng.IntN(2) == 0 {
		v = g.short(v)
	}
	if v>>16 == 0 {
		return binary.LittleEndian.AppendUint16(dst, uint16(v))
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(v>>16))
	return binary.LittleEndian.AppendUint16(dst, uint16(v))
}

// short gives branches and literal loads a short offset (1..32
// halfwords forward or 6..31 back for branches, 4..63 bytes forward for
// literals, past the instruction's own bytes).
func (g *T32Gen) short(v uint32) uint32 {
	// halfwords: forward, or back beyond the 4 bytes the code image may
	// hold before the instruction (a branch into the probed bytes would
	// run the kernel's breakpoint: real, but no code does that)
	off := uint32(g.rng.IntN(32) + 1)
	if g.rng.IntN(3) == 0 {
		off = uint32(-6 - g.rng.IntN(26))
	}
	switch {
	case v>>16 == 0 && v&0xF800 == 0xE000: // B imm11
		return v&^0x7FF | off&0x7FF
	case v>>16 == 0 && v&0xF000 == 0xD000 && v&0x0E00 != 0x0E00: // B<c> imm8
		return v&^0xFF | off&0xFF
	case v>>16 == 0 && v&0xF800 == 0x4800: // LDR literal imm8 (words)
		return v&^0xFF | uint32(g.rng.IntN(16))
	case v&0xF800D000 == 0xF0008000 && v>>23&7 != 7: // B<c>.W: S:J2:J1:imm6 from the sign, imm11
		s := off >> 31
		return v&^0x043F2FFF | s<<26 | s*0x3F<<16 | s<<13 | s<<11 | off&0x7FF
	case v&0xF8009000 == 0xF0009000, v&0xF800D000 == 0xF000C000: // B.W, BL, BLX: I1 = I2 = S
		s := off >> 31
		if v&0x1000 == 0 {
			off &^= 1 // BLX: a word-aligned target
		}
		return v&^0x07FF2FFF | s<<26 | s*0x3FF<<16 | 1<<13 | 1<<11 | off&0x7FF
	case v&0xFF7F0000 == 0xF85F0000, v&0xFE5F0000 == 0xF81F0000: // LDR(B/H) literal imm12: after the instruction
		return v&^0xFFF | 1<<23 | uint32(4+g.rng.IntN(60))
	}
	return v
}

// inRunner reports whether pc lies in the 32-bit ARM runner or its data.
func inRunner(pc uint64) bool {
	return pc >= gdbserial.A32DataBase && pc < gdbserial.A32RunnerBase+0x10_0000
}

func init() {
	starters[decode.ARM] = startARM32(kernelsim.ARM32)
	starters[decode.Thumb] = startARM32(kernelsim.Thumb)
}

// startARM32 starts the qemu-arm backend and an A32Fuzzer on it for a
// (kernelsim.ARM32 or kernelsim.Thumb). A32 words are mutated from a
// cached 32-bit ARM vmlinux when there is one; Thumb is generated from its
// encoding groups.
func startARM32(a *kernelsim.Arch) func(o *StartOptions) (Backend, Engine, string, error) {
	return func(o *StartOptions) (Backend, Engine, string, error) {
		g, err := gdbserial.New(a, o.Backend)
		if err != nil {
			return nil, nil, "", err
		}
		var src CaseSource
		from := noSamples
		if a.ISA.Thumb {
			src = NewT32Gen(o.Seed, nil)
		} else {
			var samples []uint32
			samples, from = sampleWords(elf.EM_ARM, 200000, o.Seed)
			src = NewA32Gen(o.Seed, samples)
		}
		fz := NewA32Fuzzer(Config{Backend: g, Policy: o.Policy, Trials: o.Trials, Seed: o.Seed, Source: src, OnFinding: o.OnFinding})
		return g, fz, from, nil
	}
}
