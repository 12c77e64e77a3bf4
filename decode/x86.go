package decode

// DecodeInto is Decode writing into inst, without allocating.
func DecodeInto(inst *Inst, b []byte, mode Mode, addr uint64) error {
	*inst = Inst{Mode: mode, Addr: addr}
	panic("not yet")
}
