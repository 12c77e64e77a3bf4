package guest

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kboost/kboost/decode"
)

// The "kboost-verify-arm" step is the fixed-width recorder of
// a64_verify.go for 32-bit ARM-mode kernels (Debian armmp): ARMProbes.

// ARMVerifyStep is the 32-bit ARM step's name.
const ARMVerifyStep = "kboost-verify-arm"

// ARMVerifyFile is its result entry (an ARM64Report with Arch "arm").
const ARMVerifyFile = "kboost-verify-arm.json"

// ARMProbes is 32-bit ARM (A32, !CONFIG_THUMB2_KERNEL): 4-byte
// instructions; an emulated instruction's slot is two words, the
// instruction as the kernel rewrites it, then mov pc, lr (ARMSlotMatch).
// Debian's armmp kernel has no /proc/kcore: function bytes come from the
// zImage, slot pages are read by the host through QEMU. It has optprobes.
var ARMProbes = &ProbeArch{Name: "arm", Mode: decode.ModeA32, Width: 4, SlotSize: 8, DefaultPolicy: "linux-6.1-arm",
	Step: ARMVerifyStep, File: ARMVerifyFile,
	SlotMatch: ARMSlotMatch,
	Symbols:   []string{"_text", "__gnu_mcount_nc"},
	KernelTTB: func() (uint64, error) {
		b, err := os.ReadFile("/proc/iomem")
		if err != nil {
			return 0, err
		}
		return ARMKernelTTB(b)
	},
	NoKcore: true, Optimizer: armOptimizer}

// armOptimizer waits for arm's optimizer (OPTIMIZE_DELAY jiffies after
// arming, then an RCU grace period): the flag is set when a probe is
// queued, so the list is read until it stops changing (at least 1 s, at
// most 8 s). With /proc/kcore, a probe counts as optimized only when its
// word has become a B<cond> (cond 101 0 imm24) to the detour.
var armOptimizer = &OptimizerWait{Min: time.Second, Stable: 500 * time.Millisecond, Max: 8 * time.Second, Poll: 100 * time.Millisecond,
	Len: 4, Align: 4, Jumped: func(b []byte) bool { return b[3]&0x0F == 0x0A },
	Note: func(round, listed, pending int, max time.Duration) string {
		return fmt.Sprintf("round %d: [OPTIMIZED] not settled after %v (%d listed, %d without the branch)", round, max, listed, pending)
	}}

// armMovPCLR is the second word of an ARM-kernel slot: mov pc, lr.
const armMovPCLR = 0xE1A0F00E

// armRenamed are the values decode_regs gives the register nibbles 0-4 of an
// emulated instruction (INSN_NEW_BITS 0x00020103), and armSameAs16 the value
// of a nibble that must equal the one at bit 16 (INSN_SAMEAS16_BITS).
var armRenamed = [5]uint32{3, 0, 1, 0, 2}

const armSameAs16 = 2

// ARMSlotMatch scores whether an ARM-kernel slot (two little-endian words)
// can hold the kernel's copy of the A32 instruction inst, by the rules of
// arch/arm/probes (6.1): the copy is made unconditional (a condition below
// AL becomes AL), each register nibble (bits 0-19, four at a time) keeps its
// value or becomes its renamed one (decode_regs), all other bits are kept,
// and mov pc, lr follows; LDM/STM keep bits 20-31 and shift base and list by
// 0, 2 or 3 registers (kprobe_decode_ldmstm). Which nibbles are registers
// depends on the decode tables, so the score, -1 when the slot cannot be
// the copy, counts the nibbles kept as they are: a slot whose immediate
// differs only where a renamed register could be scores lower than the
// true copy.
func ARMSlotMatch(slot, inst []byte) int {
	if len(slot) < 8 || len(inst) < 4 || binary.LittleEndian.Uint32(slot[4:]) != armMovPCLR {
		return -1
	}
	w, c := binary.LittleEndian.Uint32(inst), binary.LittleEndian.Uint32(slot)
	if w < 0xE0000000 {
		w = (w | 0xE0000000) &^ 0x10000000
	}
	if c>>20 != w>>20 {
		return -1
	}
	if w>>25&7 == 4 { // LDM/STM
		rn, list := w>>16&0xF, w&0xFFFF
		for _, k := range []uint32{0, 2, 3} {
			if rn >= k && c&0xFFFFF == (rn-k)<<16|list>>k {
				return 5 - int(k)
			}
		}
		return -1
	}
	kept := 0
	for i := 0; i < 5; i++ {
		sn, wn := c>>(4*i)&0xF, w>>(4*i)&0xF
		switch {
		case sn == wn:
			kept++
		case sn != armRenamed[i] && sn != armSameAs16:
			return -1
		}
	}
	return kept
}

// armPgDirSize is PG_DIR_SIZE of a non-LPAE ARM kernel: swapper_pg_dir
// (init_mm's first-level table, 4096 entries) sits that far below _text.
const armPgDirSize = 0x4000

// ARMKernelTTB returns the physical address of a 32-bit ARM (non-LPAE)
// kernel's first-level translation table, swapper_pg_dir, from /proc/iomem
// as root reads it: the "Kernel code" resource starts at the physical
// address of _text, and the table is the 16 KiB below it.
func ARMKernelTTB(iomem []byte) (uint64, error) {
	for _, l := range strings.Split(string(iomem), "\n") {
		rng, name, ok := strings.Cut(l, " : ")
		if !ok || strings.TrimSpace(name) != "Kernel code" {
			continue
		}
		lo, _, _ := strings.Cut(strings.TrimSpace(rng), "-")
		a, err := strconv.ParseUint(lo, 16, 64)
		if err != nil || a < armPgDirSize || a%armPgDirSize != 0 {
			return 0, fmt.Errorf("guest: /proc/iomem: Kernel code at %q is not where a kernel's text starts", lo)
		}
		return a - armPgDirSize, nil
	}
	return 0, fmt.Errorf("guest: /proc/iomem names no \"Kernel code\" (not root?)")
}

// ARMSlotMask returns the bits of an A32 word (little-endian) that its slot
// copy keeps: bits 20-27 (the opcode) always; bits 4-7 too, except in
// LDM/STM (bits 25-27 100), whose register list the kernel shifts
// (kprobe_decode_ldmstm).
func ARMSlotMask(inst []byte) []byte {
	if len(inst) >= 4 && inst[3]&0x0E == 0x08 {
		return []byte{0x00, 0x00, 0xF0, 0x0F} // 0x0FF00000
	}
	return []byte{0xF0, 0x00, 0xF0, 0x0F} // 0x0FF000F0
}

// ARMRecordVersion is ARM64RecordVersion for the 32-bit ARM recorder
// (4: function bytes and slot pages read by the host, slots kept per round).
const ARMRecordVersion = 4

// ARMFields are the fields CompareARM compares, in table order.
var ARMFields = []string{"errno", "addr", "ftrace", "optimized", "slot"}

// CompareARM is CompareARM64 plus [OPTIMIZED] (when both accept). It is for
// records whose slot pages were read (ARM64Report.SlotsRead): a slot on
// either side is compared. CompareARMNoSlots is for records without: the
// slot is compared only when the kernel's is known.
func CompareARM(r *VerifyRecord) map[string]bool {
	m := CompareARM64(r)
	p, k := &r.Predicted, &r.Kernel
	if p.Errno == "" && k.Errno == "" {
		m["optimized"] = p.Optimized == k.Optimized
	}
	return m
}

// CompareARMNoSlots is CompareARM for records made without reading the
// slot pages.
func CompareARMNoSlots(r *VerifyRecord) map[string]bool {
	m := CompareARM(r)
	if r.Kernel.Slot == "" {
		delete(m, "slot")
	}
	return m
}
