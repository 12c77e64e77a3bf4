package uprobe

import (
	"encoding/binary"

	"github.com/kboost/kboost/decode"
)

// The built-in workload of Bench: a static x86-64 ELF (no libc) whose entry
// calls one function COUNT times and exits. Each function starts with the
// instruction that gives its path on the kernel measured (BenchFuncsFor).

const (
	benchBase  = 0x400000
	benchEntry = 0x100 // file offset of the entry loop
	benchFuncs = 0x200 // file offset of the first function; 32 bytes each
)

// BenchFunc is one workload function.
type BenchFunc struct {
	Name  string
	Code  []byte // ends in ret
	Asm   string
	Probe bool // probed at its entry
	Ret   bool // a uretprobe
}

// benchNops are the NOP forms an x86-64 kernel may optimize, in the order
// BenchFuncsFor tries them: the 5-byte NOP (6.18) and the 10-byte form 7.2
// optimizes.
var benchNops = [][]byte{
	{0x0f, 0x1f, 0x44, 0x00, 0x00},
	{0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00},
}

// BenchNop is the NOP form k's policy optimizes in a 64-bit task at the
// workload's function addresses (the first of the forms kernels optimize),
// and whether there is one; the 5-byte NOP when k optimizes none.
func BenchNop(k *Kernel) ([]byte, bool) {
	env := k.Policy.DefaultEnv()
	env.Mode = decode.Mode64
	for _, nop := range benchNops {
		win := append(append([]byte(nil), nop...), 0xc3)
		for len(win) < 16 {
			win = append(win, 0xcc)
		}
		if d := k.Policy.ClassifyBytesEnv(win, decode.Mode64, benchBase+BenchFuncOffset(1), env); d.Optimizable {
			return nop, true
		}
	}
	return benchNops[0], false
}

// BenchFuncsFor are the paths Bench measures on k, in its table's order: the
// native, optimized and uretprobe functions start with BenchNop(k).
func BenchFuncsFor(k *Kernel) []BenchFunc {
	nop, _ := BenchNop(k)
	asm := "nop"
	if in, err := decode.Decode(nop, decode.Mode64, 0); err == nil {
		asm = decode.Format(&in, nil)
	}
	nopRet := append(append([]byte(nil), nop...), 0xc3)
	return []BenchFunc{
		{Name: "native", Code: nopRet, Asm: asm + "; ret (no probe)"},
		{Name: "optimized", Code: nopRet, Asm: asm + "; ret", Probe: true},
		{Name: "emulated", Code: []byte{0x55, 0x5d, 0xc3}, Asm: "push %rbp; pop %rbp; ret", Probe: true},
		{Name: "singlestep", Code: []byte{0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xc3}, Asm: "lea 0x0(%rip),%rax; ret", Probe: true},
		{Name: "uretprobe", Code: nopRet, Asm: asm + "; ret (entry and return)", Probe: true, Ret: true},
	}
}

// BenchFuncOffset is the file offset of the i-th workload function.
func BenchFuncOffset(i int) uint64 { return uint64(benchFuncs + 32*i) }

// BenchImage is the workload calling funcs[fn] count times (count >= 1).
func BenchImage(funcs []BenchFunc, fn int, count uint32) []byte {
	size := benchFuncs + 32*len(funcs)
	img := make([]byte, size)
	for i := benchEntry; i < size; i++ {
		img[i] = 0xcc
	}
	for i, f := range funcs {
		copy(img[BenchFuncOffset(i):], f.Code)
	}
	le := binary.LittleEndian
	e := img[benchEntry:]
	e[0] = 0xbb // mov $count,%ebx
	le.PutUint32(e[1:], count)
	e[5] = 0xe8 // loop: call fn
	le.PutUint32(e[6:], uint32(int32(int(BenchFuncOffset(fn))-(benchEntry+10))))
	copy(e[10:], []byte{0xff, 0xcb, 0x75, 0xf7})                    // dec %ebx; jnz loop
	copy(e[14:], []byte{0xb8, 60, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05}) // exit(0)
	copy(img, "\x7fELF\x02\x01\x01")
	le.PutUint16(img[16:], 2)  // ET_EXEC
	le.PutUint16(img[18:], 62) // EM_X86_64
	le.PutUint32(img[20:], 1)
	le.PutUint64(img[24:], benchBase+benchEntry)
	le.PutUint64(img[32:], 64) // e_phoff
	le.PutUint16(img[52:], 64)
	le.PutUint16(img[54:], 56)
	le.PutUint16(img[56:], 1)
	ph := img[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // R X
	le.PutUint64(ph[16:], benchBase)
	le.PutUint64(ph[24:], benchBase)
	le.PutUint64(ph[32:], uint64(size))
	le.PutUint64(ph[40:], uint64(size))
	le.PutUint64(ph[48:], 0x1000)
	return img
}

// BenchRow is one measured path.
type BenchRow struct {
	Path    string  `json:"path"`
	Asm     string  `json:"asm"`
	Calls   uint64  `json:"calls"`
	Hits    uint64  `json:"hits"`
	NsCall  float64 `json:"ns_per_call"`
	Ratio   float64 `json:"ratio"`   // to native
	Verdict string  `json:"verdict"` // kboost's prediction for the site
}

// TargetRow is one measured run of BenchTarget: the command unprobed, with an
// entry probe at the site, or with a uretprobe on its function.
type TargetRow struct {
	Probe   string  `json:"probe"` // "none", "entry" or "return"
	Verdict string  `json:"verdict"`
	CPUNs   float64 `json:"cpu_ns"` // median CPU time (user + system) of the command
	Hits    uint64  `json:"hits"`
	// NsHit is the added CPU time per hit against the unprobed runs (0 without hits).
	NsHit float64 `json:"ns_per_hit"`
}
