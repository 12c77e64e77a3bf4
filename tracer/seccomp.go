package tracer

import (
	"encoding/binary"
	"sort"
)

// Classic BPF for seccomp (linux/filter.h, linux/seccomp.h).
const (
	bpfLdAbsW    = 0x20 // BPF_LD|BPF_W|BPF_ABS
	bpfJeqK      = 0x15 // BPF_JMP|BPF_JEQ|BPF_K
	bpfRetK      = 0x06 // BPF_RET|BPF_K
	bpfJsetK     = 0x45 // BPF_JMP|BPF_JSET|BPF_K
	retTrace     = 0x7ff00000
	retAllow     = 0x7fff0000
	offNr        = 0
	offArch      = 4
	offArgs      = 16  // args[i] at 16+8i; its low word first (little-endian)
	maxListedNrs = 200 // jump offsets are 8 bits: longer sets (with 4 per argument test) trace the whole arch
)

func insn(code uint16, jt, jf uint8, k uint32) []byte {
	b := binary.LittleEndian.AppendUint16(nil, code)
	b = append(b, jt, jf)
	return binary.LittleEndian.AppendUint32(b, k)
}

// buildFilter compiles the monitored set into a seccomp program: per
// architecture a block that returns TRACE for its numbers and ALLOW for the
// rest; an architecture the set does not name is traced whole (the tracer
// then lets its calls pass). A number with an ArgTest in when jumps to a
// test of its argument (after the block's returns: BPF jumps go forward)
// that returns TRACE or ALLOW.
func buildFilter(f map[uint32]map[uint64]bool, when map[uint32]map[uint64]ArgTest) []byte {
	var p []byte
	arches := make([]uint32, 0, len(f))
	for a := range f {
		arches = append(arches, a)
	}
	sort.Slice(arches, func(i, j int) bool { return arches[i] < arches[j] })
	if f == nil {
		return insn(bpfRetK, 0, 0, retTrace)
	}
	for _, a := range arches {
		set := f[a]
		var nrs []uint32
		for nr, on := range set {
			if on {
				nrs = append(nrs, uint32(nr))
			}
		}
		sort.Slice(nrs, func(i, j int) bool { return nrs[i] < nrs[j] })
		p = append(p, insn(bpfLdAbsW, 0, 0, offArch)...)
		if set == nil || len(nrs)+4*len(when[a]) > maxListedNrs {
			p = append(p, insn(bpfJeqK, 0, 1, a)...)
			p = append(p, insn(bpfRetK, 0, 0, retTrace)...)
			continue
		}
		n := len(nrs)
		var tests []ArgTest
		at := make([]int, n) // index of nrs[k]'s test, -1: none
		for k, nr := range nrs {
			at[k] = -1
			if w, ok := when[a][uint64(nr)]; ok && w.Arg >= 0 && w.Arg < 6 {
				at[k] = len(tests)
				tests = append(tests, w)
			}
		}
		// ld arch; jeq; ld nr; n jeqs; ret allow; ret trace; 4 per test
		p = append(p, insn(bpfJeqK, 0, uint8(n+3+4*len(tests)), a)...)
		p = append(p, insn(bpfLdAbsW, 0, 0, offNr)...)
		for k, nr := range nrs {
			jt := n - k // to ret trace
			if at[k] >= 0 {
				jt = n - k + 1 + 4*at[k]
			}
			p = append(p, insn(bpfJeqK, uint8(jt), 0, nr)...)
		}
		p = append(p, insn(bpfRetK, 0, 0, retAllow)...)
		p = append(p, insn(bpfRetK, 0, 0, retTrace)...)
		for _, w := range tests {
			p = append(p, insn(bpfLdAbsW, 0, 0, uint32(offArgs+8*w.Arg))...)
			p = append(p, insn(bpfJsetK, 0, 1, w.Mask)...)
			p = append(p, insn(bpfRetK, 0, 0, retTrace)...)
			p = append(p, insn(bpfRetK, 0, 0, retAllow)...)
		}
	}
	return append(p, insn(bpfRetK, 0, 0, retTrace)...)
}
