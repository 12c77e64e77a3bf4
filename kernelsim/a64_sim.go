package kernelsim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/jsonv"
)

func init() {
	simArches[decode.ARM64] = &simArch{ka: ARM64, sim: simulateA64, random: (*Arch).RandomTrialA64, flags: []string{"flags", "nzcv"}, mask: true}
}

// simulateA64 is Simulate for A64: the slot the policy's kernel (or the
// boost-arm64 model) writes, checked, then the word run in place and through
// the simulated hit under qemu-aarch64 (GDB).
func simulateA64(r *simRun) error {
	code, pol, env, addr, slotAddr := r.code, r.pol, r.env, r.o.Addr, r.o.SlotAddr
	a, rep := r.a, r.rep
	if len(code) < 4 {
		return inputf("an A64 instruction is 4 bytes (little-endian, as in memory), got %d", len(code))
	}
	if addr%4 != 0 || slotAddr%4 != 0 {
		return inputf("--addr and --slot must be 4-byte aligned for arm64")
	}
	w := binary.LittleEndian.Uint32(code)
	rep.Config = preemptionConfig(env)
	e := *env
	e.SlotAddr = slotAddr
	d := pol.ClassifyBytesEnv(code[:4], decode.ModeA64, addr, &e)
	var in decode.Inst
	decode.ARM64.Decode(&in, code[:4], addr)
	rep.Bytes = jsonv.Hex(code[:4]) // memory order, as given
	rep.Asm = decode.Format(&in, nil)
	path := r.decided(&d, PathOf(&d))
	if path == PathBoost || path == PathSingleStep {
		slot, err := BuildSlotA64(w, addr, slotAddr, path)
		var re *SlotRangeError
		switch {
		case errors.As(err, &re):
			rep.RangeError = fmt.Sprintf("B back from slot %#x to %#x is beyond +-128 MiB", slotAddr+4, addr+4)
		case err != nil:
			return err
		default:
			rep.SlotHex = jsonv.Hex(slot)
			rep.Problems = VerifySlotA64(w, addr, slotAddr, slot)
			if want := d.SlotBytes(); want != nil && !rep.Forced && !slices.Equal(want, slot) {
				rep.Problems = append(rep.Problems, fmt.Sprintf("slot model % x differs from boost's slot image % x", slot, want))
			}
			for off := 0; off < len(slot); off += 4 {
				var si decode.Inst
				decode.ARM64.Decode(&si, slot[off:off+4], slotAddr+uint64(off))
				sw := binary.LittleEndian.Uint32(slot[off:])
				line := SimSlotLine{Off: off, Bytes: jsonv.Hex(slot[off : off+4]), Asm: decode.Format(&si, nil)}
				switch {
				case off == 0:
					line.Note = "the probed word, copied verbatim (A64 has no displacement fix-ups)"
				case sw == A64BRKSS:
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
	case path == PathNone:
		r.refused(&d)
		return nil
	case rep.RangeError != "":
		rep.Conclusion = "refused: the slot is out of reach of a B back to addr+4"
		return nil
	}
	g, err := OpenBackend(a, r.o.Backend)
	if err != nil {
		return err
	}
	defer g.Close()
	codeOff, slotOff := pageOffsets(addr, slotAddr)
	p := &A64Probe{Arch: a, Word: w, CodeOffset: codeOff, SlotOffset: slotOff}
	rep.Sandbox = fmt.Sprintf("code at %#x, slot at %#x, executed by %s through its gdb stub", p.Addr(), p.SlotAddr(), g.Emulator())
	return r.runOne(path, emulatorWords, func(ts []Trial) ([]HitCheck, error) {
		return CheckHitA64(g, p, path, nil, ts)
	})
}
