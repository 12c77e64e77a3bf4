package cli

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
	"github.com/kboost/kboost/kernelsim"
)

// simulateARM32 is simulate for A32 (linux-6.1-arm) and Thumb
// (linux-6.1-thumb): the policy's slot ([renamed insn, mov pc, lr] or
// [insn, bx lr]) or simulation, then the instruction run in place and
// through the kernel's hit under qemu-arm (kernelsim.GDB). --path boost
// runs it verbatim from a slot followed by a jump to addr+len (no PC
// fix-up). Thumb: --addr's alignment is kept (bit 1), and --it COND runs
// the instruction as the last of a one-instruction IT block.
func simulateARM32(s *simArgs) (*simReport, error) {
	ac := armCmds[s.arch]
	a := ac.arch
	thumb := s.mode == decode.ModeT32
	addr, slotAddr, force := s.addr, s.slot, s.force
	w, n, ok := a.ARM32Value(s.code)
	switch {
	case !ok && thumb:
		return nil, usagef("a Thumb instruction is 2 bytes, or 4 when its first halfword is 0xe800 or above (little-endian halfwords, as in memory), got %d bytes", len(s.code))
	case !ok:
		return nil, usagef("an A32 instruction is 4 bytes (little-endian, as in memory), got %d", len(s.code))
	case thumb && (addr%2 != 0 || slotAddr%4 != 0 || addr > 0xffffffff || slotAddr > 0xffffffff):
		return nil, usagef("--addr must be a 2-byte aligned and --slot a 4-byte aligned 32-bit address for thumb")
	case !thumb && (addr%4 != 0 || slotAddr%4 != 0 || addr > 0xffffffff || slotAddr > 0xffffffff):
		return nil, usagef("--addr and --slot must be 4-byte aligned 32-bit addresses for arm")
	}
	code := s.code[:n]
	var it uint16
	if s.it != "" {
		c, ok := parseCond(s.it)
		if !ok || c > 14 {
			return nil, usagef("--it %q: want a condition eq ne cs cc mi pl vs vc hi ls ge lt gt le al", s.it)
		}
		it = 0xBF08 | uint16(c)<<4
		if !kernelsim.T32ITAllowed(w) {
			return nil, usagef("--it: %s cannot be the last instruction of an IT block (UNPREDICTABLE or unconditional)", jsonv.Hex(code))
		}
	}
	// the probe keeps --addr's offset in its word (Thumb: bit 1) and its
	// IT instruction just before it
	pre := int(addr % 4)
	if it != 0 && pre == 0 {
		pre = 4
	}
	codeOff := min(int(addr%kernelsim.PageSize)&^3, kernelsim.PageSize-kernelsim.ImageSize)
	slotOff := min(int(slotAddr%kernelsim.PageSize), kernelsim.PageSize-kernelsim.ImageSize)
	p := &kernelsim.A32Probe{Arch: a, Word: w, CodeOffset: codeOff, SlotOffset: slotOff, Pre: pre, IT: it}
	config := "ARM kprobes never boost"
	if thumb {
		config = "Thumb-2 kernel (CONFIG_THUMB2_KERNEL); ARM kprobes never boost"
		if it != 0 {
			config += fmt.Sprintf("; the probe ends an IT %s block", strings.ToLower(decode.Cond(it>>4&15).String()))
		}
	}
	rep := &simReport{Arch: a.Name, Policy: s.pol.Name, Addr: hexAddr(addr), SlotAddr: hexAddr(slotAddr), MaxInsnSize: s.pol.MaxInsnSize, Config: config}
	e := *s.env
	e.SlotAddr = 0
	d := s.pol.ClassifyBytesEnv(code, s.mode, addr, &e)
	dec := decode.ARM
	if thumb {
		dec = decode.Thumb
	}
	var in decode.Inst
	dec.Decode(&in, code, addr)
	rep.Bytes = jsonv.Hex(code)
	rep.Asm = decode.Format(&in, nil)
	rep.Verdict = d.Verdict.String()
	rep.Errno = d.Errno.String()
	rep.Reasons, rep.Details = d.ReasonIDs(), reasonTexts(&d)
	path := kernelsim.PathOf(&d)
	if force != kernelsim.PathNone {
		path, rep.Forced = force, true
	}
	rep.Path = path.String()
	p.Action = kernelsim.A32Action(d.ReasonIDs())
	var slot []byte
	switch path {
	case kernelsim.PathSingleStep:
		slot = d.SlotBytes()
		if slot == nil {
			return nil, usagef("--path single-step: the policy writes no slot for %s (it is simulated or refused)", jsonv.Hex(code))
		}
		rep.Problems = p.VerifySlot(slot)
	case kernelsim.PathBoost:
		slot = p.NaiveSlot()
	}
	rep.Slot, rep.JumpBack = slotLines(dec, slot, slotAddr, addr+uint64(n), path, thumb)
	if slot != nil {
		rep.SlotHex = jsonv.Hex(slot)
	}
	if path == kernelsim.PathNone {
		rep.Conclusion = fmt.Sprintf("refused (%s): no hit to simulate; try --path boost", d.Errno)
		return rep, nil
	}
	g, err := kernelsim.NewGDB(a, s.opts)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	rep.Sandbox = fmt.Sprintf("code at %#x, slot at %#x, executed by %s through its gdb stub; kernel action %q", p.Addr(), p.SlotAddr(), g.Emulator(), p.Action)
	err = newSimRun(s, rep, a, ac.fill(s)).runOne(path, emulatorWords, func(ts []kernelsim.Trial) ([]kernelsim.HitCheck, error) {
		return kernelsim.CheckHitA32(g, p, path, slot, ts)
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// slotLines disassembles a 32-bit ARM slot with what each part is for;
// back is addr+len, the naive slot's jump target.
func slotLines(dec *decode.Arch, slot []byte, at, back uint64, path kernelsim.Path, thumb bool) ([]simSlotLine, string) {
	var out []simSlotLine
	jump := ""
	for off := 0; off < len(slot); {
		n := 4
		if thumb {
			if _, k, ok := kernelsim.Thumb.ARM32Value(slot[off:]); ok {
				n = k
			} else {
				n = len(slot) - off
			}
		}
		if off+n > len(slot) {
			break
		}
		var si decode.Inst
		dec.Decode(&si, slot[off:off+n], at+uint64(off))
		line := simSlotLine{Off: off, Bytes: jsonv.Hex(slot[off : off+n]), Asm: decode.Format(&si, nil)}
		tail := binary.LittleEndian.Uint16(slot[off:])
		switch {
		case off == 0 && path == kernelsim.PathSingleStep:
			line.Note = "the instruction, unconditional, registers renamed (decode_regs; PUSH/POP as STMDB/LDMIA r9!)"
		case off == 0:
			line.Note = "the probed instruction, copied verbatim"
		case path == kernelsim.PathSingleStep && thumb && tail == kernelsim.T32BxLR:
			line.Note = "bx lr: back to the t16/t32_emulate_* handler, which writes the results back"
		case path == kernelsim.PathSingleStep:
			line.Note = "mov pc, lr: back to the emulate_* handler, which writes the results back"
		case thumb && tail == kernelsim.T32Nop:
			line.Note = "nop: aligns the literal"
		case thumb && tail == kernelsim.T32LdrPCHi, !thumb && n == 4 && binary.LittleEndian.Uint32(slot[off:]) == kernelsim.A32LdrPC:
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
