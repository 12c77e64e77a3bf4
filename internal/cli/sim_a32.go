package cli

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
)

// Default probe and slot addresses for 32-bit ARM: kernel text
// (PAGE_OFFSET 0xc0000000) and the module area below it, where kprobe
// slots live.
const (
	a32DefaultAddr = 0xc0100000
	a32DefaultSlot = 0xbf000000
)

// simulateA32 is simulate for A32 (linux-6.1-arm): the policy's slot
// ([renamed insn, mov pc, lr]) or simulation, then the word run in place
// and through the kernel's hit under qemu-arm (kernelsim.GDB). --force
// boost runs the word verbatim from a slot followed by a jump to addr+4
// (no PC fix-up).
func simulateA32(code []byte, pol *boost.Policy, env *boost.Env, addr, slotAddr uint64, force kernelsim.Path, ntrials int, seed uint64, set map[string]uint64) (*simReport, error) {
	a := kernelsim.ARM32
	if len(code) < 4 {
		return nil, usagef("an A32 instruction is 4 bytes (little-endian, as in memory), got %d", len(code))
	}
	if addr%4 != 0 || slotAddr%4 != 0 || addr > 0xffffffff || slotAddr > 0xffffffff {
		return nil, usagef("--addr and --slot must be 4-byte aligned 32-bit addresses for arm")
	}
	w := binary.LittleEndian.Uint32(code)
	rep := &simReport{Arch: a.Name, Policy: pol.Name, Addr: hexAddr(addr), SlotAddr: hexAddr(slotAddr), MaxInsnSize: pol.MaxInsnSize,
		Config: "ARM kprobes never boost"}
	e := *env
	e.SlotAddr = 0
	d := pol.ClassifyBytesEnv(code[:4], decode.ModeA32, addr, &e)
	var in decode.Inst
	decode.ARM.Decode(&in, code[:4], addr)
	rep.Bytes = hex.EncodeToString(code[:4])
	rep.Asm = decode.Format(&in, nil)
	rep.Verdict = d.Verdict.String()
	rep.Errno = d.Errno.String()
	rep.Rules = d.ReasonIDs()
	path := kernelsim.PathOf(&d)
	if force != kernelsim.PathNone {
		path, rep.Forced = force, true
	}
	rep.Path = path.String()
	var slot []byte
	switch path {
	case kernelsim.PathSingleStep:
		slot = d.SlotBytes()
		if slot == nil {
			return nil, usagef("--force single-step: the policy writes no slot for %08x (it is simulated or refused)", w)
		}
		rep.Problems = kernelsim.VerifySlotA32(slot)
	case kernelsim.PathBoost:
		slot = kernelsim.A32NaiveSlot(w, addr)
	}
	for off := 0; off+4 <= len(slot); off += 4 {
		var si decode.Inst
		decode.ARM.Decode(&si, slot[off:off+4], slotAddr+uint64(off))
		line := simSlotLine{Off: off, Bytes: hex.EncodeToString(slot[off : off+4]), Asm: decode.Format(&si, nil)}
		switch {
		case off == 0 && path == kernelsim.PathSingleStep:
			line.Note = "the instruction, unconditional, registers renamed to r0..r3 (decode_regs)"
		case off == 0:
			line.Note = "the probed word, copied verbatim"
		case path == kernelsim.PathSingleStep:
			line.Note = "mov pc, lr: back to the emulate_* handler, which writes the results back"
		case off == 4:
			line.Note = "ldr pc, [pc, #-4]"
		default:
			line.Asm, line.Note = ".word", fmt.Sprintf("addr+4 = %#x", addr+4)
			rep.JumpBack = hexAddr(addr + 4)
		}
		rep.Slot = append(rep.Slot, line)
	}
	if slot != nil {
		rep.SlotHex = hex.EncodeToString(slot)
	}
	if path == kernelsim.PathNone {
		rep.Conclusion = fmt.Sprintf("refused (%s): no hit to simulate; try --force boost", d.Errno)
		return rep, nil
	}
	g, err := kernelsim.NewGDB(a, kernelsim.Options{})
	if err != nil {
		return nil, err
	}
	defer g.Close()
	codeOff := min(int(addr%kernelsim.PageSize), kernelsim.PageSize-kernelsim.ImageSize)
	slotOff := min(int(slotAddr%kernelsim.PageSize), kernelsim.PageSize-kernelsim.ImageSize)
	p := &kernelsim.A32Probe{Arch: a, Word: w, Action: kernelsim.A32Action(d.ReasonIDs()), CodeOffset: codeOff, SlotOffset: slotOff}
	rep.Sandbox = fmt.Sprintf("code at %#x, slot at %#x, executed by %s through its gdb stub; kernel action %q", p.Addr(), p.SlotAddr(), g.Emulator(), p.Action)
	rng := rand.New(rand.NewPCG(seed, 0x73696d))
	ts := make([]kernelsim.Trial, max(ntrials, 1))
	for i := range ts {
		a.RandomTrialA32(rng, &ts[i])
		for k, v := range set {
			if k == "flags" || k == "cpsr" || k == "apsr" {
				ts[i].Regs.Flags = v & kernelsim.A32FlagsMask
				continue
			}
			r := slices.Index(a.RegNames, k)
			if r < 0 {
				return nil, usagef("--set %s: no register %q on %s (registers: %s, cpsr)", k, k, a.Name, strings.Join(a.RegNames, " "))
			}
			if k == "sp" {
				return nil, usagef("--set sp: the stack pointer is fixed by the sandbox")
			}
			ts[i].Regs.GPR[r] = v & 0xffffffff
		}
	}
	hc, err := kernelsim.CheckHitA32(g, p, path, slot, ts)
	var ee *kernelsim.EmulateError
	if errors.As(err, &ee) {
		rep.Conclusion = ee.Error()
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	var ds []kernelsim.Diff
	for _, h := range hc {
		rep.Trials = append(rep.Trials, simTrial{HitPath: path.String(), Verdict: h.Diff.Verdict.String(), Diverged: h.Diff.Fields,
			InPlace: stateOf(a, &h.RefR), Sim: stateOf(a, &h.HitR), regNames: a.RegNames, ref: h.RefR, hit: h.HitR})
		ds = append(ds, h.Diff)
	}
	rep.Conclusion = conclude(rep, path, ds)
	return rep, nil
}
