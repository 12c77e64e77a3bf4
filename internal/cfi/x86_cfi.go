package cfi

import "github.com/kboost/kboost/decode"

// The System V psABIs' DWARF register numbers: x86-64 rsp 7, rbp 6, the
// return address (rip) 16; i386 esp 4, ebp 5, eip 8.
func init() {
	arches[decode.X86_64] = &Arch{SP: 7, FP: 6, PC: 16, Regs: 17, PtrSize: 8, FrameAtCFA: true}
	arches[decode.I386] = &Arch{SP: 4, FP: 5, PC: 8, Regs: 9, PtrSize: 4, FrameAtCFA: true}
}
