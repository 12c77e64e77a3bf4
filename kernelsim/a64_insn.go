package kernelsim

// A64 instruction words used by slot models and fillers.
const (
	A64BRKKprobe = 0xD4200080 // BRK #4: the kprobe breakpoint
	A64BRKSS     = 0xD42000C0 // BRK #6: the single-step return breakpoint after the slot copy
	A64UDF       = 0x00000000 // UDF #0: filler of the code page (SIGILL)
	A64SlotFill  = 0x000051A7 // UDF #0x51a7: filler of the slot page (SIGILL, but not the code page's word)
)

// A64B encodes "B to" placed at from; ok is false beyond +-128 MiB or for
// unaligned addresses.
func A64B(from, to uint64) (uint32, bool) {
	return a64Branch(0x14000000, from, to)
}

func a64Branch(op uint32, from, to uint64) (uint32, bool) {
	d := int64(to - from)
	if d&3 != 0 || d < -(1<<27) || d >= 1<<27 {
		return 0, false
	}
	return op | uint32(d>>2)&0x03FF_FFFF, true
}
