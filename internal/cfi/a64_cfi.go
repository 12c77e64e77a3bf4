package cfi

import "github.com/kboost/kboost/decode"

// The AArch64 DWARF ABI's register numbers: x0-x30 are 0-30 (x29 the frame
// pointer, x30 the link register, which CIEs name as the return address
// column), sp 31. Pointer authentication's DW_CFA_AARCH64_negate_ra_state
// is not evaluated (an FDE using it is a format error): Debian's arm64 C
// library has none.
func init() {
	arches[decode.ARM64] = &Arch{SP: 31, FP: 29, PC: 30, Regs: 32, PtrSize: 8, LinkReg: true}
}
