package decode

import "encoding/binary"

// ARM64 is the AArch64 (A64) instruction set.
var ARM64 = &Arch{
	Name: "arm64", Mode: ModeA64, MaxInsnLen: 4, PtrSize: 8, ObjdumpArg: "aarch64",
	Decode: decodeA64,
}

// decodeA64 decodes one A64 instruction word. Every word has a length (4); words
// that are unallocated or truncated are reported with ErrInvalid / ErrTruncated.
func decodeA64(inst *Inst, b []byte, addr uint64) error {
	*inst = Inst{Mode: ModeA64, Addr: addr}
	if len(b) < 4 {
		inst.Len = len(b)
		if inst.Len == 0 {
			inst.Len = 1
		}
		copy(inst.Raw[:], b)
		return &DecodeError{Addr: addr, Len: inst.Len, Err: ErrTruncated, Why: "an A64 instruction is 4 bytes"}
	}
	inst.Len = 4
	copy(inst.Raw[:], b[:4])
	inst.Word = binary.LittleEndian.Uint32(b)
	return nil
}
