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
