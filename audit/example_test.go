package audit_test

import (
	"fmt"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/demo"
	"github.com/kboost/kboost/kimage"
)

// Audit every function of a file (here kboost's embedded demo program, built
// with kernel-like ftrace flags) under its architecture's default policy:
// per function, its ftrace site and how many of its instruction boundaries
// get each verdict.
func ExampleFile() {
	f, err := kimage.OpenBytes(demo.ELF) // kimage.Open(path) for a file, a .deb or a vmlinuz
	if err != nil {
		panic(err)
	}
	pol := boost.DefaultPolicy(f.Arch)
	fmt.Println(f.Arch.Name, pol.Name)
	_, err = audit.File(f, pol, func(r *audit.Result) error {
		if r.Err != nil {
			return r.Err
		}
		a := r.Audit
		count := map[boost.Verdict]int{}
		for _, e := range a.Entries {
			count[e.Decision.Verdict]++
		}
		if a.FtraceOff < 0 {
			fmt.Printf("%s: %d boundaries, all rejected: %s\n", a.Func.Name, len(a.Entries), a.Entries[0].Decision.Reasons[0].Rule)
			return nil
		}
		fmt.Printf("%s: %d boundaries, ftrace site +%#x; %d singlestep, %d emulate\n",
			a.Func.Name, len(a.Entries), a.FtraceOff, count[boost.SingleStep], count[boost.Emulate])
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// x86-64 linux-6.1
	// main: 16 boundaries, ftrace site +0x4; 10 singlestep, 5 emulate
	// __fentry__: 2 boundaries, all rejected: trace_kprobe.notrace
	// add_counter: 6 boundaries, ftrace site +0x4; 4 singlestep, 1 emulate
	// sum_table: 27 boundaries, ftrace site +0x4; 19 singlestep, 7 emulate
	// save_flags: 5 boundaries, ftrace site +0x4; 2 singlestep, 2 emulate
	// untraced: 5 boundaries, all rejected: trace_kprobe.notrace
	// odd_instructions: 12 boundaries, ftrace site +0x4; 10 singlestep, 1 emulate
}
