//go:build linux && amd64

package fuzz

import (
	"fmt"
	"os"
	"testing"

	"github.com/kboost/kboost/internal/x86gen"
	"github.com/kboost/kboost/kernelsim"
)

// TestFuzzOracle runs the differential fuzzer on structured candidates for
// both modes (KBOOST_ORACLE=1): the linux-6.1 policy must have no unsafe
// boost, and the decoder no length error on what the CPU executes.
func TestFuzzOracle(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1")
	}
	pol := lookup(t, "linux-6.1")
	for _, a := range testArches(t) {
		bits := 64
		if a == kernelsim.I386 {
			bits = 32
		}
		g := x86gen.New(x86gen.Config{Seed: 5, Bits: bits})
		var unsafe []string
		fz := NewFuzzer(Config{Backend: sandboxFor(t, a), Policy: pol, Seed: 5, Source: g,
			OnFinding: func(f *Finding) {
				if f.Kind == "unsafe-boost" || f.Kind == "length" {
					unsafe = append(unsafe, fmt.Sprintf("%s %s %s %v", f.Kind, f.Bytes, f.Asm, f.Diverged))
				}
			}})
		n := 20000
		if sandboxFor(t, a).Emulator() != "" {
			n = 4000 // slower
		}
		for fz.Stats.Cases < n {
			if err := fz.Block(64); err != nil {
				t.Fatal(err)
			}
		}
		st := fz.Finish()
		t.Logf("%s: %d cases, %d checks (%.0f/s), unsafe %d, kernel divergences %d, missed %d, length errors %d of %d (oracle: %s)",
			a.Name, st.Cases, st.Checks, st.ChecksPerSecond, st.UnsafeBoosts, st.PolicyDivergences, st.MissedBoosts, st.LengthErrors, st.LengthChecked, st.LengthOracle)
		if st.UnsafeBoosts != 0 || st.LengthErrors != 0 {
			t.Errorf("%s: %v", a.Name, unsafe)
		}
		if st.Checks == 0 {
			t.Errorf("%s: no differential checks ran", a.Name)
		}
	}
}
