//go:build linux && amd64

package kernelsim

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// BenchmarkDifferentialCheck measures differential checks (one instruction
// run in place and out of line, then compared) per second on one sandbox.
func BenchmarkDifferentialCheck(b *testing.B) {
	for _, a := range []*Arch{X86_64, I386} {
		b.Run(a.Name, func(b *testing.B) {
			c, err := newChecker(a, 1)
			if err != nil {
				b.Fatal(err)
			}
			defer c.s.Close()
			b.ResetTimer()
			start := time.Now()
			checks := 0
			for checks < b.N {
				n, div, err := c.batch()
				if err != nil {
					b.Fatal(err)
				}
				if div != 0 {
					b.Fatalf("%d checks diverged", div)
				}
				checks += n
			}
			b.ReportMetric(float64(checks)/time.Since(start).Seconds(), "checks/s")
		})
	}
}

var (
	benchSamplesOnce sync.Once
	benchSamples     map[decode.Mode][][]byte
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
	for _, a := range []*Arch{X86_64, I386} {
		b.Run(a.Name, func(b *testing.B) {
			samples := fuzzSamples(a.Mode)
			pol, err := boost.Lookup("linux-6.1")
			if err != nil {
				b.Fatal(err)
			}
			s, err := New(a)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			src := NewFuzzSource(a.Mode, 1, samples)
			fz := NewFuzzer(FuzzConfig{Backend: s, Policy: pol, Seed: 1, Source: src})
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

// BenchmarkHWLength measures the hardware length oracle on a mix of
// instructions.
func BenchmarkHWLength(b *testing.B) {
	s, err := New(X86_64)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var bs [][]byte
	for i := 0; len(bs) < 1024; i++ {
		bs = append(bs, checkMix[i%len(checkMix)])
	}
	out := make([]HWLen, len(bs))
	b.ResetTimer()
	start := time.Now()
	n := 0
	for n < b.N {
		if err := s.HWLengths(bs, out); err != nil {
			b.Fatal(err)
		}
		n += len(bs)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "lengths/s")
}

// BenchmarkHWLengthHinted is BenchmarkHWLength with correct hints.
func BenchmarkHWLengthHinted(b *testing.B) {
	s, err := New(X86_64)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var bs [][]byte
	var hints []int
	for i := 0; len(bs) < 1024; i++ {
		bs = append(bs, checkMix[i%len(checkMix)])
		hints = append(hints, len(checkMix[i%len(checkMix)]))
	}
	out := make([]HWLen, len(bs))
	b.ResetTimer()
	start := time.Now()
	n := 0
	for n < b.N {
		if err := s.HWLengthsHint(bs, hints, out); err != nil {
			b.Fatal(err)
		}
		n += len(bs)
	}
	b.ReportMetric(float64(n)/time.Since(start).Seconds(), "lengths/s")
}

// TestMeasureChecks prints the figures the issue asks for (KBOOST_ORACLE=1):
// on the fixed mix of MeasureChecks and on the fuzz command's mix.
func TestMeasureChecks(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1")
	}
	for _, a := range testArches(t) {
		r, err := MeasureChecks(a, 2*time.Second, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Diverged != 0 {
			t.Errorf("%s: %d of %d checks diverged", a.Name, r.Diverged, r.Checks)
		}
		t.Logf("%s: %v", a.Name, r)
		r, st, err := MeasureFuzz(a, 5*time.Second, 1, fuzzSamples(a.Mode))
		if err != nil {
			t.Fatal(err)
		}
		if st.UnsafeBoosts != 0 {
			t.Errorf("%s: %d unsafe boosts", a.Name, st.UnsafeBoosts)
		}
		t.Logf("%s, fuzz mix (%d cases): %v", a.Name, st.Cases, r)
	}
}
