package kernelref

import (
	"encoding/binary"
	"fmt"
)

// A probe target executable: a static ELF whose entry point sleeps in pause(2)
// forever, and whose file also holds test instructions (never executed) at known
// file offsets, so that a uprobe can be placed on each while the process maps
// the file.

const (
	exeCodeOff = 0x100  // file offset of the entry code
	exeSlotOff = 0x1000 // file offset of the first instruction slot
	exeSlotLen = 32     // bytes per slot: the instruction, its REST, then int3
	exeBase64  = 0x400000
	exeBase32  = 0x8048000
)

// Entry code: loop { pause() }.
var (
	pauseLoop64 = []byte{0xB8, 34, 0, 0, 0, 0x0F, 0x05, 0xEB, 0xF7} // mov eax,34; syscall; jmp
	pauseLoop32 = []byte{0xB8, 29, 0, 0, 0, 0xCD, 0x80, 0xEB, 0xF7} // mov eax,29; int 0x80; jmp
)

// buildProbeExe returns the executable for a bits-bit process with each of
// slots (at most exeSlotLen bytes each) at SlotOffset(i).
func buildProbeExe(bits int, slots [][]byte) ([]byte, error) {
	size := exeSlotOff + exeSlotLen*len(slots)
	img := make([]byte, size)
	for i := exeCodeOff; i < size; i++ {
		img[i] = 0xCC
	}
	for i, s := range slots {
		if len(s) > exeSlotLen {
			return nil, fmt.Errorf("slot %d: %d bytes, at most %d", i, len(s), exeSlotLen)
		}
		copy(img[SlotOffset(i):], s)
	}
	le := binary.LittleEndian
	switch bits {
	case 64:
		copy(img[exeCodeOff:], pauseLoop64)
		copy(img, "\x7fELF\x02\x01\x01")             // ELFCLASS64, little endian, version 1
		le.PutUint16(img[16:], 2)                    // ET_EXEC
		le.PutUint16(img[18:], 62)                   // EM_X86_64
		le.PutUint32(img[20:], 1)                    // EV_CURRENT
		le.PutUint64(img[24:], exeBase64+exeCodeOff) // e_entry
		le.PutUint64(img[32:], 64)                   // e_phoff
		le.PutUint16(img[52:], 64)                   // e_ehsize
		le.PutUint16(img[54:], 56)                   // e_phentsize
		le.PutUint16(img[56:], 1)                    // e_phnum
		ph := img[64:]
		le.PutUint32(ph[0:], 1)             // PT_LOAD
		le.PutUint32(ph[4:], 5)             // PF_R|PF_X
		le.PutUint64(ph[8:], 0)             // p_offset
		le.PutUint64(ph[16:], exeBase64)    // p_vaddr
		le.PutUint64(ph[24:], exeBase64)    // p_paddr
		le.PutUint64(ph[32:], uint64(size)) // p_filesz
		le.PutUint64(ph[40:], uint64(size)) // p_memsz
		le.PutUint64(ph[48:], 0x1000)       // p_align
	case 32:
		copy(img[exeCodeOff:], pauseLoop32)
		copy(img, "\x7fELF\x01\x01\x01") // ELFCLASS32
		le.PutUint16(img[16:], 2)        // ET_EXEC
		le.PutUint16(img[18:], 3)        // EM_386
		le.PutUint32(img[20:], 1)
		le.PutUint32(img[24:], exeBase32+exeCodeOff)
		le.PutUint32(img[28:], 52) // e_phoff
		le.PutUint16(img[40:], 52) // e_ehsize
		le.PutUint16(img[42:], 32) // e_phentsize
		le.PutUint16(img[44:], 1)  // e_phnum
		ph := img[52:]
		le.PutUint32(ph[0:], 1)             // PT_LOAD
		le.PutUint32(ph[4:], 0)             // p_offset
		le.PutUint32(ph[8:], exeBase32)     // p_vaddr
		le.PutUint32(ph[12:], exeBase32)    // p_paddr
		le.PutUint32(ph[16:], uint32(size)) // p_filesz
		le.PutUint32(ph[20:], uint32(size)) // p_memsz
		le.PutUint32(ph[24:], 5)            // PF_R|PF_X
		le.PutUint32(ph[28:], 0x1000)       // p_align
	default:
		return nil, fmt.Errorf("bits %d: want 32 or 64", bits)
	}
	return img, nil
}

// SlotOffset is the file offset of instruction slot i in a probe executable.
func SlotOffset(i int) int { return exeSlotOff + exeSlotLen*i }
