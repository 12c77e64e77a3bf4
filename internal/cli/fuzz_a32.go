package cli

import (
	"debug/elf"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/fuzz"
)

// newARM32Fuzz returns the fuzz constructor for a 32-bit ARM instruction
// set (kernelsim.ARM32 or kernelsim.Thumb): it starts the qemu-arm backend
// and an A32Fuzzer on it. A32 words are mutated from a cached 32-bit ARM
// vmlinux when there is one; Thumb is generated from its encoding groups.
func newARM32Fuzz(a *kernelsim.Arch) func(pol *boost.Policy, trials int, seed uint64, opts kernelsim.Options, onFinding func(*fuzz.Finding)) (fuzzBackend, fuzzEngine, string, error) {
	return func(pol *boost.Policy, trials int, seed uint64, opts kernelsim.Options, onFinding func(*fuzz.Finding)) (fuzzBackend, fuzzEngine, string, error) {
		g, err := kernelsim.NewGDB(a, opts)
		if err != nil {
			return nil, nil, "", err
		}
		var src fuzz.CaseSource
		from := "none (class-directed generation only)"
		if a == kernelsim.Thumb {
			src = fuzz.NewT32Gen(seed, nil)
		} else {
			var samples []uint32
			samples, from = sampleWords(elf.EM_ARM, 200000, seed)
			src = fuzz.NewA32Gen(seed, samples)
		}
		fz := fuzz.NewA32Fuzzer(fuzz.Config{Backend: g, Policy: pol, Trials: trials, Seed: seed, Source: src, OnFinding: onFinding})
		return g, fz, from, nil
	}
}
