//go:build linux && amd64

package kernelsim_test

import (
	"context"
	"fmt"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
)

// A kprobe on a RIP-relative load, boosted under the default policy with
// CONFIG_PREEMPTION off: the slot holds the copy with its displacement
// rebased and a jmp back; the load run on this CPU in place and from the
// slot gives the same state in every one of 8 random register states (the
// seed fixes them, so the output is the same every run).
func ExampleSimulate() {
	arch := decode.X86_64
	code := []byte{0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00} // mov 0x10(%rip),%rax
	rep, err := kernelsim.Simulate(context.Background(), arch, code, boost.DefaultPolicy(arch), &kernelsim.SimOptions{
		Addr: arch.TextAddr, SlotAddr: arch.SlotAddr, Trials: 8, Seed: 1,
		Backend: kernelsim.Options{Exec: kernelsim.ExecCPU},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Asm, "->", rep.Verdict)
	for _, l := range rep.Slot {
		fmt.Printf("slot+%d %s\n", l.Off, l.Asm)
	}
	fmt.Println(rep.States.Equivalent, "of", rep.States.Total, "states equivalent")
	fmt.Println(rep.Conclusion)
	// Output:
	// mov 0x10(%rip),%rax -> boost
	// slot+0 mov -0x1efffff0(%rip),%rax
	// slot+7 jmpq 0xffffffff81000007
	// 8 of 8 states equivalent
	// boost CONFIRMED: the hit matches the CPU on 8/8 states
}
