package guest

import "github.com/kboost/kboost/decode"

// The "kboost-verify-arm" step is the fixed-width recorder of
// arm64verify.go for 32-bit ARM-mode kernels (Debian armmp): ARMProbes.

// ARMVerifyStep is the 32-bit ARM step's name.
const ARMVerifyStep = "kboost-verify-arm"

// ARMVerifyFile is its result entry (an ARM64Report with Arch "arm").
const ARMVerifyFile = "kboost-verify-arm.json"

// ARMProbes is 32-bit ARM (A32, !CONFIG_THUMB2_KERNEL): 4-byte
// instructions; an emulated instruction's slot is two words, the instruction
// made unconditional with its registers renamed, then mov pc, lr (e1a0f00e),
// so slots are matched on the opcode bits outside the condition and register
// fields. Debian's armmp kernel has no /proc/kcore (bytes come from the
// zImage) and has optprobes.
var ARMProbes = &ProbeArch{Name: "arm", Mode: decode.ModeA32, Width: 4, SlotSize: 8, DefaultPolicy: "linux-6.1-arm",
	Step: ARMVerifyStep, File: ARMVerifyFile,
	// Little-endian 0x0FF000F0: bits 4-7 and 20-27 survive renaming.
	SlotMask: []byte{0xF0, 0x00, 0xF0, 0x0F}, SlotTail: []byte{0x0e, 0xf0, 0xa0, 0xe1},
	Symbols: []string{"_text", "__gnu_mcount_nc"},
	NoKcore: true, Optprobes: true}

// ARMRecordVersion is ARM64RecordVersion for the 32-bit ARM recorder.
const ARMRecordVersion = 1

// ARMFields are the fields CompareARM compares, in table order.
var ARMFields = []string{"errno", "addr", "ftrace", "optimized", "slot"}

// CompareARM is CompareARM64 plus [OPTIMIZED] (when both accept); the slot is
// compared only when the kernel's slot was read (never without /proc/kcore).
func CompareARM(r *VerifyRecord) map[string]bool {
	m := CompareARM64(r)
	p, k := &r.Predicted, &r.Kernel
	if p.Errno == "" && k.Errno == "" {
		m["optimized"] = p.Optimized == k.Optimized
	}
	if k.Slot == "" {
		delete(m, "slot")
	}
	return m
}
