package boost_test

import (
	"fmt"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// What a kprobe on an instruction does under the architecture's default
// policy, with the rules that decided it.
func ExamplePolicy_Classify() {
	arch := decode.X86_64
	pol := boost.DefaultPolicy(arch)
	in, err := arch.DecodeOne([]byte{0x89, 0xc8}, arch.TextAddr) // mov %ecx,%eax
	if err != nil {
		panic(err)
	}
	d := pol.Classify(&in, nil)
	fmt.Println(pol.Name, d.Verdict, "slot bytes:", d.SlotLen)
	for _, r := range d.Reasons {
		fmt.Println(r.Rule)
	}
	// Output:
	// linux-6.1 singlestep slot bytes: 3
	// prepare_singlestep.preemption
	// prepare_singlestep.int3
}

// The same instruction under a kernel configuration that allows boosting
// (no CONFIG_PREEMPTION): every rule the kernel tries, in its order.
func ExamplePolicy_Explain() {
	arch := decode.X86_64
	pol := boost.DefaultPolicy(arch)
	env := pol.DefaultEnv()
	env.Config.Preemption = false
	in, err := arch.DecodeOne([]byte{0x89, 0xc8}, arch.TextAddr)
	if err != nil {
		panic(err)
	}
	steps, d := pol.Explain(&in, env)
	for _, s := range steps {
		fmt.Println(s.Rule, s.Outcome)
	}
	fmt.Println(d.Verdict)
	// Output:
	// trace_kprobe.notrace unknown
	// ftrace.entry unknown
	// blacklist.lookup unknown
	// can_probe.boundary unknown
	// can_boost.extable unknown
	// can_boost.ok pass
	// prepare_singlestep.boost decides
	// boost
}

// pushf under linux-6.1, rule by rule: the kernel emulates it
// (prepare_emulation's opcode switch in arch/x86/kernel/kprobes/core.c
// lists 0x9c with cli, sti and popf, and setup_singlestep runs emulate_op
// instead of the slot); arch_copy_kprobe still writes the slot, the copy
// and an int3, and with CONFIG_PREEMPTION (Debian's) nothing is boosted.
func ExamplePolicy_Explain_pushf() {
	arch := decode.X86_64
	pol := boost.DefaultPolicy(arch)
	in, err := arch.DecodeOne([]byte{0x9c}, arch.TextAddr) // pushf
	if err != nil {
		panic(err)
	}
	steps, d := pol.Explain(&in, pol.DefaultEnv())
	for _, s := range steps {
		fmt.Println(s.Rule, s.Outcome)
	}
	fmt.Printf("%s %v emulated=%v slot=% x\n", pol.Name, d.Verdict, d.Emulated, d.SlotBytes())
	// Output:
	// trace_kprobe.notrace unknown
	// ftrace.entry unknown
	// blacklist.lookup unknown
	// can_probe.boundary unknown
	// prepare_emulation.ifmodifier pass
	// prepare_singlestep.preemption fail
	// can_boost.ok note
	// setup_singlestep.emulate decides
	// linux-6.1 emulate emulated=true slot=9c cc
}
