package gdbserial

import "github.com/kboost/kboost/kernelsim"

// The Thumb target: the A32 runner (gdbrunner_a32.go) with Thumb fillers,
// every case entered in Thumb state (the runner's "ldm r0, {r0-pc}" loads
// an odd address and interworks) and a Thumb return stub,
// "ldr.w pc, [pc, #imm]" and its literal, which clobbers no register and
// interworks back to the runner's ARM-state return entry. Code and slot
// images are whole halfwords.

var emuThumb = &emuTarget{
	name: "arm", qemu: "qemu-arm-static", elfMachine: 40,
	base: A32RunnerBase, data: A32DataBase,
	gen: genA32Runner(kernelsim.T32CodeFill, kernelsim.T32SlotFill),
	stub: func(r *emuRunner, at uint64) ([]byte, error) {
		return kernelsim.T32JumpTo(at, r.retEntry), nil
	},
	launch:    func(r *emuRunner, l kernelsim.Layout, entry uint64) uint64 { return entry | 1 },
	sysCallAt: kernelsim.T32SysCallAt,
	slotFill:  kernelsim.T32SlotFill,
	codeFill:  kernelsim.T32CodeFill,
	spReg:     kernelsim.A32RegSP,
	pcReg:     15,
	regBytes:  4,
	align:     2,
	stubMax:   10,
}
