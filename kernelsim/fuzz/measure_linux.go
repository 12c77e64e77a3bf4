//go:build linux && amd64

package fuzz

import (
	"time"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/native"

	"github.com/kboost/kboost/boost"
)

// MeasureFuzz runs the differential fuzzer of `kboost fuzz` for about d on
// its own case mix (FuzzSource with samples, e.g. SampleKernelInsts: the
// structured and mutated instructions with their natural share of invalid,
// faulting and privileged ones) under the linux-6.1 policy, three trials per
// case, and reports the differential checks per wall-clock second and per
// CPU-second of tracer and sandbox together. The length oracle, the
// reproduction and minimization runs of findings and the missed-boost
// confirmations all count against the rate, as in the command.
func Measure(a *kernelsim.Arch, d time.Duration, seed uint64, samples [][]byte) (native.CheckRate, Stats, error) {
	pol, err := boost.Lookup("linux-6.1")
	if err != nil {
		return native.CheckRate{}, Stats{}, err
	}
	s, err := native.New(a)
	if err != nil {
		return native.CheckRate{}, Stats{}, err
	}
	defer s.Close()
	src := NewSource(a.Mode, seed, samples)
	fz := NewFuzzer(Config{Backend: s, Policy: pol, Seed: seed, Source: src})
	var r native.CheckRate
	cpu0 := s.CPUTime()
	start := time.Now()
	for time.Since(start) < d {
		if err := fz.Block(64); err != nil {
			return r, fz.Stats, err
		}
	}
	st := fz.Finish()
	r.Checks = st.Checks // Diverged stays 0: the FuzzStats say what diverged and why
	r.Elapsed = time.Since(start)
	r.CPU = s.CPUTime() - cpu0
	r.PerSecond = float64(r.Checks) / r.Elapsed.Seconds()
	if r.CPU > 0 {
		r.PerCPU = float64(r.Checks) / r.CPU.Seconds()
	}
	return r, st, nil
}
