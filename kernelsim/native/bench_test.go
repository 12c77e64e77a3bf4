//go:build linux && amd64

package native

import (
	"os"
	"testing"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// BenchmarkDifferentialCheck measures differential checks (one instruction
// run in place and out of line, then compared) per second on one sandbox.
func BenchmarkDifferentialCheck(b *testing.B) {
	for _, a := range []*kernelsim.Arch{kernelsim.X86_64, kernelsim.I386} {
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

// BenchmarkHWLength measures the hardware length oracle on a mix of
// instructions.
func BenchmarkHWLength(b *testing.B) {
	s, err := New(kernelsim.X86_64)
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
	s, err := New(kernelsim.X86_64)
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
	}
}
