package decode

// Decode decodes one instruction from the start of b, which lies at virtual
// address addr, in the given mode. On error the returned Inst has Len set to the
// number of bytes consumed (>= 1 when b is not empty) and the error wraps one of
// the sentinels in a *DecodeError.
func Decode(b []byte, mode Mode, addr uint64) (Inst, error) {
	var inst Inst
	err := DecodeInto(&inst, b, mode, addr)
	return inst, err
}

// modeDecoders holds the decode functions of the non-x86 modes, so that
// DecodeInto (and everything built on it: Sweep, the CLI, boost) accepts them.
var modeDecoders = [...]func(inst *Inst, b []byte, addr uint64) error{
	ModeA64: decodeA64,
	ModeA32: decodeA32, // a32.go
	ModeT32: decodeT32,
}

// otherDecoder returns the decode function of a non-x86 mode, or nil.
func otherDecoder(mode Mode) func(inst *Inst, b []byte, addr uint64) error {
	if int(mode) < len(modeDecoders) {
		return modeDecoders[mode]
	}
	return nil
}

// sext sign-extends the low n bits of v.
func sext(v uint32, n uint) int64 {
	return int64(int32(v<<(32-n)) >> (32 - n))
}
