//go:build linux && amd64

package native

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// FuzzRun: any code bytes run in place and from a direct slot must produce
// results (never an error), and a completed case ends at its return address.
func FuzzRun(f *testing.F) {
	for _, b := range checkMix {
		f.Add(b, uint64(1))
	}
	f.Add([]byte{0xEB, 0xFE}, uint64(2))
	f.Add([]byte{0x0F, 0x05}, uint64(3))
	s, err := New(kernelsim.X86_64)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	s.Watchdog = 20 * time.Millisecond
	l := s.Arch().Layout
	f.Fuzz(func(t *testing.T, code []byte, seed uint64) {
		if len(code) > 15 {
			code = code[:15]
		}
		c := kernelsim.Case{Code: code, Regs: kernelsim.X86_64.RandomRegs(rand.New(rand.NewPCG(seed, 0)))}
		o := c
		if err := DirectSlot(&o, l); err != nil {
			t.Fatal(err)
		}
		o.EntrySlot = true
		res := make([]kernelsim.Result, 2)
		if err := s.Run([]kernelsim.Case{c, o}, res); err != nil {
			t.Fatal(err)
		}
		if res[0].Outcome == kernelsim.Completed && res[0].Regs.PC != c.ReturnAddr(l) {
			t.Fatalf("% x completed at %#x", code, res[0].Regs.PC)
		}
		_ = kernelsim.X86_64.Compare(&res[0], &res[1], o.SlotPCMap(l))
	})
}
