package uprobe

import "encoding/binary"

// The built-in workload of Bench: a static x86-64 ELF (no libc) whose entry
// calls one function COUNT times and exits. Each function starts with the
// instruction that gives its path on the running kernel.

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

// BenchFuncs are the paths Bench measures, in its table's order.
var BenchFuncs = []BenchFunc{
	{Name: "native", Code: []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}, Asm: "nopl 0x0(%rax,%rax); ret (no probe)"},
	{Name: "optimized", Code: []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}, Asm: "nopl 0x0(%rax,%rax); ret", Probe: true},
	{Name: "emulated", Code: []byte{0x55, 0x5d, 0xc3}, Asm: "push %rbp; pop %rbp; ret", Probe: true},
	{Name: "singlestep", Code: []byte{0x48, 0x8d, 0x05, 0, 0, 0, 0, 0xc3}, Asm: "lea 0x0(%rip),%rax; ret", Probe: true},
	{Name: "uretprobe", Code: []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0xc3}, Asm: "nopl 0x0(%rax,%rax); ret (entry and return)", Probe: true, Ret: true},
}

// BenchFuncOffset is the file offset of BenchFuncs[i].
func BenchFuncOffset(i int) uint64 { return uint64(benchFuncs + 32*i) }

// BenchImage is the workload calling BenchFuncs[fn] count times (count >= 1).
func BenchImage(fn int, count uint32) []byte {
	size := benchFuncs + 32*len(BenchFuncs)
	img := make([]byte, size)
	for i := benchEntry; i < size; i++ {
		img[i] = 0xcc
	}
	for i, f := range BenchFuncs {
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
