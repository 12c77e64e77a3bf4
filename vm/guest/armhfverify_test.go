package guest

import (
	"encoding/binary"
	"testing"
)

func le32(ws ...uint32) []byte {
	b := make([]byte, 4*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// An ARM slot holds the instruction made unconditional with its registers
// renamed, then mov pc, lr: the matcher finds it from the original word and
// refuses other opcodes and slots without the return.
func TestSlotMatcherARM(t *testing.T) {
	const movPCLR = 0xE1A0F00E
	page := make([]byte, 64)
	copy(page[0:], le32(0xE5810004, movPCLR))  // str r0, [r1, #4]
	copy(page[8:], le32(0xE0800001, 0))        // add r0, r0, r1 without the return
	copy(page[16:], le32(0xE0800001, movPCLR)) // add r0, r0, r1
	m := SlotMatcher{Arch: ARMProbes}
	m.Reset(map[uint64][]byte{}, map[uint64][]byte{0x1000: page})
	// streq r3, [r5, #4] -> slot 0.
	if a, _, ok := m.Claim(le32(0x05853004)); !ok || a != 0x1000 {
		t.Errorf("str: slot %#x %v, want 0x1000", a, ok)
	}
	// add r4, r6, r7 -> slot 2 (slot 1 has no return).
	if a, _, ok := m.Claim(le32(0xE0864007)); !ok || a != 0x1010 {
		t.Errorf("add: slot %#x %v, want 0x1010", a, ok)
	}
	// ldr (a different opcode) matches nothing.
	if a, _, ok := m.Claim(le32(0xE5910004)); ok {
		t.Errorf("ldr: matched slot %#x", a)
	}
}

func TestCompareARM(t *testing.T) {
	r := &VerifyRecord{Predicted: Outcome{Addr: 8, Optimized: true, Slot: "00"}, Kernel: Outcome{Addr: 8}}
	m := CompareARM(r)
	if m["optimized"] || !m["errno"] || !m["addr"] {
		t.Errorf("compare %v", m)
	}
	if _, ok := m["slot"]; ok {
		t.Errorf("slot compared without a kernel slot: %v", m)
	}
	r.Kernel.Errno = "EINVAL"
	if _, ok := CompareARM(r)["optimized"]; ok {
		t.Error("optimized compared for a refused probe")
	}
}
