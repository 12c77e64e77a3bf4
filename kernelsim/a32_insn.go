package kernelsim

import "encoding/binary"

// A32 instruction words used by slot models and fillers.
const (
	A32UDF      = T32CodeFill // filler of the code page: UDF in ARM state, and in Thumb state wherever entered (SIGILL)
	A32SlotFill = T32SlotFill // filler of the slot page (the same, not the code page's word)
	A32MovPCLR  = 0xE1A0F00E  // mov pc, lr: the end of the kernel's A32 emulation slot
	A32LdrPC    = 0xE51FF004  // ldr pc, [pc, #-4]: jump to the word that follows (interworking)
)

// A32B encodes "B to" placed at from (cond AL); ok false beyond +-32 MiB.
func A32B(from, to uint64) (uint32, bool) {
	d := int64(to - (from + 8))
	if d&3 != 0 || d < -(1<<25) || d >= 1<<25 {
		return 0, false
	}
	return 0xEA000000 | uint32(d>>2)&0xFFFFFF, true
}

// Filler words of the 32-bit ARM sandboxes (A32 and Thumb, A32UDF and
// A32SlotFill are the same words): each is UDF in ARM state (cond 1110, 0111 1111 ...
// 1111 ....) and, read as Thumb halfwords, UDF #0xff / #0xfe (0xdeff,
// 0xdefe) at a word boundary and "b.n .-2" (0xe7fd) at the halfword
// between, which lands on the same word's UDF: so Thumb code that enters
// the filler anywhere stops with SIGILL inside it, without running into
// the next word (the case's code image) or reaching qemu's Thumb
// breakpoint (UDF #1) or the kernel's (UDF #0x18).
const (
	T32CodeFill = 0xE7FDDEFF // filler of the code page
	T32SlotFill = 0xE7FDDEFE // filler of the slot page
)

// Thumb instruction halfwords used by the slot models.
const (
	T32BxLR    = 0x4770 // bx lr: the end of the kernel's Thumb emulation slot
	T32Nop     = 0xBF00 // nop (T16)
	T32LdrPCHi = 0xF8DF // first halfword of ldr.w pc, [pc, #imm]
	T32LdrPCLo = 0xF000 // second halfword (Rt = pc) | imm12
)

// T32JumpTo encodes Thumb code placed at the halfword-aligned address at
// that continues at to (bit 0 set: Thumb state, clear: ARM):
// "ldr.w pc, [pc, #imm]" followed by the literal, padded with a nop so the
// literal is word aligned (8 or 10 bytes). No register changes.
func T32JumpTo(at, to uint64) []byte {
	b := make([]byte, 0, 10)
	imm := uint16(0)
	pad := at%4 == 2
	if pad {
		imm = 4 // PC = at+4 is 2 mod 4; Align(PC, 4) = at+2; the literal is at at+6
	}
	b = binary.LittleEndian.AppendUint16(b, T32LdrPCHi)
	b = binary.LittleEndian.AppendUint16(b, T32LdrPCLo|imm)
	if pad {
		b = binary.LittleEndian.AppendUint16(b, T32Nop)
	}
	return binary.LittleEndian.AppendUint32(b, uint32(to))
}

// t32SysCallAt is the offset of the first SVC (0xdfxx) among img's Thumb
// instructions, or -1. The scan stops at "ldr.w pc, [pc, #imm]": what
// follows is its literal, never executed.
func T32SysCallAt(img []byte) int {
	for j := 0; j+2 <= len(img); {
		h := binary.LittleEndian.Uint16(img[j:])
		if h&0xFF00 == 0xDF00 {
			return j
		}
		if h>>11 < 0x1D {
			j += 2
			continue
		}
		if j+4 <= len(img) && h == T32LdrPCHi && binary.LittleEndian.Uint16(img[j+2:])&0xF000 == T32LdrPCLo {
			return -1
		}
		j += 4
	}
	return -1
}

// t32Bytes is a Thumb value (a T16 halfword, or a T32 instruction with its
// first halfword in bits 31..16) in memory order.
func T32Bytes(v uint32) []byte {
	if v>>16 == 0 {
		return binary.LittleEndian.AppendUint16(nil, uint16(v))
	}
	b := binary.LittleEndian.AppendUint16(nil, uint16(v>>16))
	return binary.LittleEndian.AppendUint16(b, uint16(v))
}

// t32Halves is halfwords in memory order.
func T32Halves(h ...uint16) []byte {
	b := make([]byte, 0, 2*len(h))
	for _, x := range h {
		b = binary.LittleEndian.AppendUint16(b, x)
	}
	return b
}
