package guest

import (
	"encoding/binary"
	"encoding/hex"
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
// renamed (decode_regs: bits 16-19 -> r2, 12-15 -> r0, 8-11 -> r1, 0-3 ->
// r3), then mov pc, lr: the matcher finds it from the original word and
// refuses other opcodes, other immediates and slots without the return.
func TestSlotMatcherARM(t *testing.T) {
	const movPCLR = 0xE1A0F00E
	page := make([]byte, 64)
	copy(page[0:], le32(0xE5820004, movPCLR))  // str r0, [r2, #4]
	copy(page[8:], le32(0xE0820003, 0))        // add r0, r2, r3 without the return
	copy(page[16:], le32(0xE0820003, movPCLR)) // add r0, r2, r3
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
	// ldr (a different opcode), str with another offset, and pldw (an
	// unconditional-space word whose bits 20-27 are a load's) match nothing.
	for _, w := range []uint32{0xE5910004, 0xE5853008, 0xF595F004} {
		if a, _, ok := m.Claim(le32(w)); ok {
			t.Errorf("%08x: matched slot %#x", w, a)
		}
	}
	// What Debian 6.1.0-50-armmp copied into its slots for these words (read
	// by the host during TestOracleVerifyARM).
	for _, c := range [][2]uint32{{0xE5902008, 0xE5920008}, {0xE3A02A0F, 0xE3A00A0F}, {0xE24DD01C, 0xE242001C}, {0xE92D4FF0, 0xE92B13FC}} {
		if ARMSlotMatch(le32(c[1], movPCLR), le32(c[0])) < 0 {
			t.Errorf("%08x: its kernel slot %08x not matched", c[0], c[1])
		}
	}
	// push {r4, lr} (stmdb sp!, {r4, lr}) is copied as stmdb r11!, {r2, r12}
	// (kprobe_decode_ldmstm: R2..R14 window, rn and the list shifted by 2).
	copy(page[24:], le32(0xE92B1004, movPCLR))
	m.Reset(map[uint64][]byte{}, map[uint64][]byte{0x1000: page})
	if a, _, ok := m.Claim(le32(0xE92D4010)); !ok || a != 0x1018 {
		t.Errorf("push: slot %#x %v, want 0x1018", a, ok)
	}
}

func TestCompareARM(t *testing.T) {
	r := &VerifyRecord{Predicted: Outcome{Addr: 8, Optimized: true, Slot: "00"}, Kernel: Outcome{Addr: 8}}
	m := CompareARMNoSlots(r)
	if m["optimized"] || !m["errno"] || !m["addr"] {
		t.Errorf("compare %v", m)
	}
	if _, ok := m["slot"]; ok {
		t.Errorf("slot compared without a kernel slot: %v", m)
	}
	// With the slot pages read, a predicted slot the kernel did not fill
	// disagrees.
	if m := CompareARM(r); m["slot"] || len(m) != len(ARMFields) {
		t.Errorf("slots read: %v", m)
	}
	r.Kernel.Errno = "EINVAL"
	if _, ok := CompareARM(r)["optimized"]; ok {
		t.Error("optimized compared for a refused probe")
	}
}

func TestARMKernelTTB(t *testing.T) {
	iomem := "40000000-7fffffff : System RAM\n  40208000-40dfffff : Kernel code\n  40f00000-4108ffff : Kernel data\n"
	if got, err := ARMKernelTTB([]byte(iomem)); err != nil || got != 0x40204000 {
		t.Errorf("ARMKernelTTB = %#x, %v; want 0x40204000", got, err)
	}
	for _, bad := range []string{"", "40000000-7fffffff : System RAM\n", "00000000-00000000 : Kernel code\n", "zz-1 : Kernel code\n"} {
		if _, err := ARMKernelTTB([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func FuzzARMKernelTTB(f *testing.F) {
	f.Add([]byte("  40208000-40dfffff : Kernel code\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if a, err := ARMKernelTTB(b); err == nil && a%0x4000 != 0 {
			t.Fatalf("table at %#x", a)
		}
	})
}

// TestMatchRecordedSlots: slots recorded per round are matched on the host
// once the records have their bytes; a slot left from an earlier round
// (unchanged) is taken only when no changed one matches.
func TestMatchRecordedSlots(t *testing.T) {
	const movPCLR = 0xE1A0F00E
	page1 := make([]byte, 4096)
	copy(page1[0:], le32(0xE5920008, movPCLR)) // round 1: ldr r2, [r0, #8] copied
	page2 := append([]byte{}, page1...)
	copy(page2[8:], le32(0xE3A00A0F, movPCLR)) // round 2: mov r2, #0xf000 copied
	rep := &ARM64Report{RoundSlots: []RoundSlots{
		{Round: 1, Pages: map[uint64]string{0xbf000000: hexs(page1)}},
		{Round: 2, Pages: map[uint64]string{0xbf000000: hexs(page2)}},
	}}
	rep.Records = []VerifyRecord{
		{Func: "f", Round: 1, Bytes: "082090e5", Kernel: Outcome{Addr: 0x10}},
		{Func: "f", Round: 2, Bytes: "0f2aa0e3", Kernel: Outcome{Addr: 0x14}},
		{Func: "f", Round: 2, Bytes: "082090e5", Kernel: Outcome{Addr: 0x18}}, // the round-1 copy, unchanged
		{Func: "f", Round: 2, Bytes: "00f096f5", Kernel: Outcome{Addr: 0x1c}}, // pldw: no slot
		{Func: "f", Round: 2, Bytes: "082090e5", Kernel: Outcome{Errno: "EINVAL"}},
	}
	if err := MatchRecordedSlots(rep, ARMProbes); err != nil {
		t.Fatal(err)
	}
	want := []uint64{0xbf000000, 0xbf000008, 0xbf000000, 0, 0}
	for i, r := range rep.Records {
		if r.Kernel.SlotAddr != want[i] || (want[i] != 0) != (r.Kernel.Slot != "") {
			t.Errorf("record %d (%s): slot %q at %#x, want %#x", i, r.Bytes, r.Kernel.Slot, r.Kernel.SlotAddr, want[i])
		}
	}
	rep.RoundSlots[0].Pages[0xbf000000] = "zz"
	if err := MatchRecordedSlots(rep, ARMProbes); err == nil {
		t.Error("bad hex accepted")
	}
}

func hexs(b []byte) string { return hex.EncodeToString(b) }
