package cli

import (
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/fuzz"
)

// armFuzz starts, per ARM instruction set, the backend (qemu-user through
// kernelsim.GDB) and the fuzzer with its generator (x86 runs on the CPU:
// fuzz.NewFuzzer).
var armFuzz = map[*decode.Arch]func(pol *boost.Policy, trials int, seed uint64, opts kernelsim.Options, onFinding func(*fuzz.Finding)) (fuzzBackend, fuzzEngine, string, error){
	decode.ARM64: newA64Fuzz,
	decode.ARM:   newARM32Fuzz(kernelsim.ARM32),
	decode.Thumb: newARM32Fuzz(kernelsim.Thumb),
}
