package kernelsim

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
)

func init() {
	// "cpsr" last: the name an error lists
	flags := []string{"flags", "apsr", "cpsr"}
	simArches[decode.ARM] = &simArch{ka: ARM32, sim: simulateARM32, random: (*Arch).RandomTrialA32, flags: flags, mask: true}
	simArches[decode.Thumb] = &simArch{ka: Thumb, sim: simulateARM32, random: (*Arch).RandomTrialA32, flags: flags, mask: true}
}

// simulateARM32 is Simulate for A32 (linux-6.1-arm) and Thumb
// (linux-6.1-thumb): the policy's slot ([renamed insn, mov pc, lr] or
// [insn, bx lr]) or simulation, then the instruction run in place and
// through the kernel's hit under qemu-arm (GDB). A forced PathBoost runs
// it verbatim from a slot followed by a jump to addr+len (no PC fix-up).
// Thumb: Addr's alignment is kept (bit 1), and IT runs the instruction as
// the last of a one-instruction IT block.
func simulateARM32(r *simRun) error {
	a, rep := r.a, r.rep
	thumb := a.ISA.Thumb
	addr, slotAddr := r.o.Addr, r.o.SlotAddr
	w, n, ok := a.ARM32Value(r.code)
	switch {
	case !ok && thumb:
		return inputf("a Thumb instruction is 2 bytes, or 4 when its first halfword is 0xe800 or above (little-endian halfwords, as in memory), got %d bytes", len(r.code))
	case !ok:
		return inputf("an A32 instruction is 4 bytes (little-endian, as in memory), got %d", len(r.code))
	case thumb && (addr%2 != 0 || slotAddr%4 != 0 || addr > 0xffffffff || slotAddr > 0xffffffff):
		return inputf("--addr must be a 2-byte aligned and --slot a 4-byte aligned 32-bit address for thumb")
	case !thumb && (addr%4 != 0 || slotAddr%4 != 0 || addr > 0xffffffff || slotAddr > 0xffffffff):
		return inputf("--addr and --slot must be 4-byte aligned 32-bit addresses for arm")
	}
	code := r.code[:n]
	var it uint16
	if r.o.IT != "" {
		c, ok := parseCond(r.o.IT)
		if !ok || c > 14 {
			return inputf("--it %q: want a condition eq ne cs cc mi pl vs vc hi ls ge lt gt le al", r.o.IT)
		}
		it = 0xBF08 | uint16(c)<<4
		if !T32ITAllowed(w) {
			return inputf("--it: %s cannot be the last instruction of an IT block (UNPREDICTABLE or unconditional)", jsonv.Hex(code))
		}
	}
	// the probe keeps Addr's offset in its word (Thumb: bit 1) and its
	// IT instruction just before it
	pre := int(addr % 4)
	if it != 0 && pre == 0 {
		pre = 4
	}
	codeOff := min(int(addr%PageSize)&^3, PageSize-ImageSize)
	_, slotOff := pageOffsets(addr, slotAddr)
	p := &A32Probe{Arch: a, Word: w, CodeOffset: codeOff, SlotOffset: slotOff, Pre: pre, IT: it}
	rep.Config = "ARM kprobes never boost"
	if thumb {
		rep.Config = "Thumb-2 kernel (CONFIG_THUMB2_KERNEL); ARM kprobes never boost"
		if it != 0 {
			rep.Config += fmt.Sprintf("; the probe ends an IT %s block", strings.ToLower(decode.Cond(it>>4&15).String()))
		}
	}
	e := *r.env
	e.SlotAddr = 0
	d := r.pol.ClassifyBytesEnv(code, a.ISA.Mode, addr, &e)
	dec := a.ISA.Dec
	var in decode.Inst
	dec.Decode(&in, code, addr)
	rep.Bytes = jsonv.Hex(code)
	rep.Asm = decode.Format(&in, nil)
	path := r.decided(&d, PathOf(&d))
	p.Action = A32Action(d.ReasonIDs())
	var slot []byte
	switch path {
	case PathSingleStep:
		slot = d.SlotBytes()
		if slot == nil {
			return inputf("--path single-step: the policy writes no slot for %s (it is simulated or refused)", jsonv.Hex(code))
		}
		rep.Problems = p.VerifySlot(slot)
	case PathBoost:
		slot = p.NaiveSlot()
	}
	rep.Slot, rep.JumpBack = slotLines(a, slot, slotAddr, addr+uint64(n), path)
	if slot != nil {
		rep.SlotHex = jsonv.Hex(slot)
	}
	if path == PathNone {
		r.refused(&d)
		return nil
	}
	g, err := OpenBackend(a, r.o.Backend)
	if err != nil {
		return err
	}
	defer g.Close()
	rep.Sandbox = fmt.Sprintf("code at %#x, slot at %#x, executed by %s through its gdb stub; kernel action %q", p.Addr(), p.SlotAddr(), g.Emulator(), p.Action)
	return r.runOne(path, emulatorWords, func(ts []Trial) ([]HitCheck, error) {
		return CheckHitA32(g, p, path, slot, ts)
	})
}

// slotLines disassembles a 32-bit ARM slot with what each part is for;
// back is addr+len, the naive slot's jump target.
func slotLines(a *Arch, slot []byte, at, back uint64, path Path) ([]SimSlotLine, string) {
	thumb := a.ISA.Thumb
	var out []SimSlotLine
	jump := ""
	for off := 0; off < len(slot); {
		n := 4
		if thumb {
			if _, k, ok := a.ARM32Value(slot[off:]); ok {
				n = k
			} else {
				n = len(slot) - off
			}
		}
		if off+n > len(slot) {
			break
		}
		var si decode.Inst
		a.ISA.Dec.Decode(&si, slot[off:off+n], at+uint64(off))
		line := SimSlotLine{Off: off, Bytes: jsonv.Hex(slot[off : off+n]), Asm: decode.Format(&si, nil)}
		tail := binary.LittleEndian.Uint16(slot[off:])
		switch {
		case off == 0 && path == PathSingleStep:
			line.Note = "the instruction, unconditional, registers renamed (decode_regs; PUSH/POP as STMDB/LDMIA r9!)"
		case off == 0:
			line.Note = "the probed instruction, copied verbatim"
		case path == PathSingleStep && thumb && tail == T32BxLR:
			line.Note = "bx lr: back to the t16/t32_emulate_* handler, which writes the results back"
		case path == PathSingleStep:
			line.Note = "mov pc, lr: back to the emulate_* handler, which writes the results back"
		case thumb && tail == T32Nop:
			line.Note = "nop: aligns the literal"
		case thumb && tail == T32LdrPCHi, !thumb && n == 4 && binary.LittleEndian.Uint32(slot[off:]) == A32LdrPC:
			line.Note = "ldr pc, [pc, #imm]: jump to the literal's address"
			if thumb {
				line.Note += " (bit 0 set: stays in Thumb state)"
			}
		default:
			if off+4 <= len(slot) {
				line.Bytes = jsonv.Hex(slot[off : off+4])
				n = 4
			}
			line.Asm, line.Note = ".word", fmt.Sprintf("addr+len = %#x", back)
			jump = hexAddr(back)
		}
		out = append(out, line)
		off += n
	}
	return out, jump
}

// parseCond parses an ARM condition name (eq ne cs/hs cc/lo mi pl vs vc hi
// ls ge lt gt le al).
func parseCond(s string) (uint8, bool) {
	s = strings.ToLower(s)
	switch s {
	case "hs":
		return 2, true
	case "lo":
		return 3, true
	}
	for c := uint8(0); c < 15; c++ {
		if strings.ToLower(decode.Cond(c).String()) == s {
			return c, true
		}
	}
	return 0, false
}
