package decode

import "sort"

// Sweep decodes code linearly, as `objdump -d` does: from addr (the address of
// code[0]) to the end, restarting at every address in starts (sorted symbol
// starts inside the range) even when the previous instruction overlaps it. A
// failed decode advances by the error's length. fn receives each instruction (valid
// until fn returns) and its error; returning false stops the sweep.
func Sweep(mode Mode, code []byte, addr uint64, starts []uint64, fn func(inst *Inst, err error) bool) {
	var inst Inst
	i := sort.Search(len(starts), func(k int) bool { return starts[k] > addr })
	off := uint64(0)
	end := uint64(len(code))
	for off < end {
		next := end
		if i < len(starts) && starts[i]-addr < end {
			next = starts[i] - addr
		}
		for off < next {
			err := DecodeInto(&inst, code[off:], mode, addr+off)
			if !fn(&inst, err) {
				return
			}
			n := uint64(inst.Len)
			if n == 0 {
				n = 1
			}
			off += n
		}
		if off > next && next < end {
			// The last instruction ran over a symbol start: restart there.
			off = next
		}
		for i < len(starts) && starts[i]-addr <= off {
			i++
		}
	}
}
