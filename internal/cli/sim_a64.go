package cli

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
	"github.com/kboost/kboost/kernelsim"
)

// simulateA64 is simulate for A64: the slot the policy's kernel (or the
// boost-arm64 model) writes, checked, then the word run in place and through
// the simulated hit under qemu-aarch64 (kernelsim.GDB).
func simulateA64(s *simArgs) (*simReport, error) {
	code, pol, env, addr, slotAddr, force := s.code, s.pol, s.env, s.addr, s.slot, s.force
	a := kernelsim.ARM64
	if len(code) < 4 {
		return nil, usagef("an A64 instruction is 4 bytes (little-endian, as in memory), got %d", len(code))
	}
	if addr%4 != 0 || slotAddr%4 != 0 {
		return nil, usagef("--addr and --slot must be 4-byte aligned for arm64")
	}
	w := binary.LittleEndian.Uint32(code)
	rep := &simReport{Arch: a.Name, Policy: pol.Name, Addr: hexAddr(addr), SlotAddr: hexAddr(slotAddr), MaxInsnSize: pol.MaxInsnSize,
		Config: "CONFIG_PREEMPTION off"}
	if env.Config.Preemption {
		rep.Config = "CONFIG_PREEMPTION on: never boosted"
	}
	e := *env
	e.SlotAddr = slotAddr
	d := pol.ClassifyBytesEnv(code[:4], decode.ModeA64, addr, &e)
	var in decode.Inst
	decode.ARM64.Decode(&in, code[:4], addr)
	rep.Bytes = jsonv.Hex(code[:4]) // memory order, as given
	rep.Asm = decode.Format(&in, nil)
	rep.Verdict = d.Verdict.String()
	rep.Errno = d.Errno.String()
	rep.Reasons, rep.Details = d.ReasonIDs(), reasonTexts(&d)
	path := kernelsim.PathOf(&d)
	if force != kernelsim.PathNone {
		path, rep.Forced = force, true
	}
	rep.Path = path.String()
	if path == kernelsim.PathBoost || path == kernelsim.PathSingleStep {
		slot, err := kernelsim.BuildSlotA64(w, addr, slotAddr, path)
		var re *kernelsim.SlotRangeError
		switch {
		case errors.As(err, &re):
			rep.RangeError = fmt.Sprintf("B back from slot %#x to %#x is beyond +-128 MiB", slotAddr+4, addr+4)
		case err != nil:
			return nil, err
		default:
			rep.SlotHex = jsonv.Hex(slot)
			rep.Problems = kernelsim.VerifySlotA64(w, addr, slotAddr, slot)
			if want := d.SlotBytes(); want != nil && !rep.Forced && !slices.Equal(want, slot) {
				rep.Problems = append(rep.Problems, fmt.Sprintf("slot model % x differs from boost's slot image % x", slot, want))
			}
			for off := 0; off < len(slot); off += 4 {
				var si decode.Inst
				decode.ARM64.Decode(&si, slot[off:off+4], slotAddr+uint64(off))
				sw := binary.LittleEndian.Uint32(slot[off:])
				line := simSlotLine{Off: off, Bytes: jsonv.Hex(slot[off : off+4]), Asm: decode.Format(&si, nil)}
				switch {
				case off == 0:
					line.Note = "the probed word, copied verbatim (A64 has no displacement fix-ups)"
				case sw == kernelsim.A64BRKSS:
					line.Note = "BRK #6: the single-step trap; the kernel sets PC = addr+4"
				default:
					line.Note = fmt.Sprintf("B back to addr+4 = %#x", addr+4)
					rep.JumpBack = hexAddr(addr + 4)
				}
				rep.Slot = append(rep.Slot, line)
			}
		}
	}
	switch {
	case path == kernelsim.PathNone:
		rep.Conclusion = fmt.Sprintf("refused (%s): no hit to simulate; try --path boost", d.Errno)
		return rep, nil
	case rep.RangeError != "":
		rep.Conclusion = "refused: the slot is out of reach of a B back to addr+4"
		return rep, nil
	}
	g, err := kernelsim.NewGDB(a, s.opts)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	codeOff := min(int(addr%kernelsim.PageSize), kernelsim.PageSize-kernelsim.ImageSize)
	slotOff := min(int(slotAddr%kernelsim.PageSize), kernelsim.PageSize-kernelsim.ImageSize)
	p := &kernelsim.A64Probe{Arch: a, Word: w, CodeOffset: codeOff, SlotOffset: slotOff}
	rep.Sandbox = fmt.Sprintf("code at %#x, slot at %#x, executed by %s through its gdb stub", p.Addr(), p.SlotAddr(), g.Emulator())
	err = newSimRun(s, rep, a, armCmds[decode.ARM64].fill(s)).runOne(path, emulatorWords, func(ts []kernelsim.Trial) ([]kernelsim.HitCheck, error) {
		return kernelsim.CheckHitA64(g, p, path, nil, ts)
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
