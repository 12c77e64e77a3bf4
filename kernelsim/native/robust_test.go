//go:build linux && amd64

package native

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// TestRandomBytes runs random byte strings (a crude fuzz) in both modes and
// reports how they ended; the sandbox must survive (restarts are counted).
func TestRandomBytes(t *testing.T) {
	oracle(t)
	for _, s := range sandboxes(t) {
		a := s.Arch()
		s.Watchdog = 20 * time.Millisecond
		rng := rand.New(rand.NewPCG(3, 4))
		n := 20000
		if s.Emulator() != "" {
			n = 2000
		}
		cases := make([]kernelsim.Case, 128)
		res := make([]kernelsim.Result, 128)
		hist := map[string]int{}
		start := time.Now()
		for done := 0; done < n; done += len(cases) {
			for i := range cases {
				code := make([]byte, 1+rng.IntN(15))
				for j := range code {
					code[j] = byte(rng.Uint32())
				}
				cases[i] = kernelsim.Case{Code: code, Regs: a.RandomRegs(rng), NoMemory: true}
			}
			if err := s.Run(cases, res); err != nil {
				t.Fatal(err)
			}
			for i := range res {
				k := res[i].Outcome.String()
				if res[i].Outcome == kernelsim.Faulted {
					k = kernelsim.SignalName(res[i].Fault.Signal)
				}
				hist[k]++
				if res[i].Outcome == kernelsim.Crashed || res[i].Outcome == kernelsim.TimedOut {
					t.Logf("%s: % x -> %v", a.Name, cases[i].Code, res[i].Outcome)
				}
			}
		}
		t.Logf("%s: %d random cases in %v: %v; %d restarts (last: %s)", a.Name, n, time.Since(start).Round(time.Millisecond), hist, s.Restarts, s.LastCrash)
		if s.Restarts > n/100 {
			t.Errorf("%s: %d restarts in %d cases", a.Name, s.Restarts, n)
		}
		s.Close()
	}
}
