//go:build linux

package fuzz

import (
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kernelsim"
)

// TestA32Fuzz runs a short fuzz under linux-6.1-arm and checks the engine
// ran the kernel's hits (checks made, no slot problems).
func TestA32Fuzz(t *testing.T) {
	g := newTestGDB32(t, kernelsim.Options{})
	pol, err := boost.Lookup("linux-6.1-arm")
	if err != nil {
		t.Fatal(err)
	}
	gen := NewA32Gen(1, nil)
	f := NewA32Fuzzer(Config{Backend: g, Policy: pol, Seed: 1, Source: gen})
	if err := f.Block(300); err != nil {
		t.Fatal(err)
	}
	st := f.Finish()
	if st.Checks < 200 || st.SlotProblems != 0 {
		t.Errorf("checks %d, slot problems %d", st.Checks, st.SlotProblems)
	}
	t.Logf("%d cases, %d checks, %d kernel divergences, %d not verifiable, %d inconclusive (unmodelled %v)", st.Cases, st.Checks, st.PolicyDivergences, st.NotVerifiable, st.Inconclusive, f.Stats.Unmodelled)
}
