//go:build linux && amd64

package fuzz

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/native"
)

// fuzzSamples are the real instructions `kboost fuzz` mutates (loaded once).
func fuzzSamples(m decode.Mode) [][]byte {
	benchSamplesOnce.Do(func() {
		benchSamples = map[decode.Mode][][]byte{}
		for _, m := range []decode.Mode{decode.Mode64, decode.Mode32} {
			benchSamples[m], _ = SampleKernelInsts(m, 200000, 1)
		}
	})
	return benchSamples[m]
}

// BenchmarkFuzzChecks measures differential checks per second on the case
// mix of `kboost fuzz` (structured and mutated kernel instructions, three
// trials each, under linux-6.1; the length oracle, reproductions,
// minimizations and missed-boost confirmations included), one sandbox, one
// goroutine. It reports checks per wall-clock second and per CPU-second of
// the tracer and the sandbox together (they take turns, so either is one
// core's rate; on a busy machine the CPU figure is the one to compare).
// i386 runs under qemu-i386-static where the kernel refuses 32-bit code.
func BenchmarkFuzzChecks(b *testing.B) {
	for _, a := range []*kernelsim.Arch{kernelsim.X86_64, kernelsim.I386} {
		b.Run(a.Name, func(b *testing.B) {
			samples := fuzzSamples(a.Mode)
			pol, err := boost.Lookup("linux-6.1")
			if err != nil {
				b.Fatal(err)
			}
			s, err := native.New(a)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			src := NewSource(a.Mode, 1, samples)
			fz := NewFuzzer(Config{Backend: s, Policy: pol, Seed: 1, Source: src})
			b.ResetTimer()
			cpu0, start := s.CPUTime(), time.Now()
			for fz.Stats.Checks < b.N {
				if err := fz.Block(64); err != nil {
					b.Fatal(err)
				}
			}
			el, cpu := time.Since(start), s.CPUTime()-cpu0
			if fz.Stats.UnsafeBoosts != 0 {
				b.Errorf("%d unsafe boosts", fz.Stats.UnsafeBoosts)
			}
			b.ReportMetric(float64(fz.Stats.Checks)/el.Seconds(), "checks/s")
			if cpu > 0 {
				b.ReportMetric(float64(fz.Stats.Checks)/cpu.Seconds(), "checks/cpu-s")
			}
			b.ReportMetric(float64(fz.Stats.Cases)/el.Seconds(), "cases/s")
		})
	}
}

var (
	benchSamplesOnce sync.Once
	benchSamples     map[decode.Mode][][]byte
)

// TestMeasure runs the fuzz mix for a few seconds per arch: no unsafe boost,
// and the rate it reports (logged).
func TestMeasure(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1")
	}
	for _, a := range testArches(t) {
		r, st, err := Measure(a, 5*time.Second, 1, fuzzSamples(a.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if st.UnsafeBoosts != 0 {
			t.Errorf("%s: %d unsafe boosts", a.Name, st.UnsafeBoosts)
		}
		t.Logf("%s, fuzz mix (%d cases): %v", a.Name, st.Cases, r)
	}
}
