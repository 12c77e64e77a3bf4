//go:build linux && amd64

package native

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/internal/killtest"
)

// TestHelperFuzzLoop is not a test: TestNoStraySandbox runs it in a child
// process, which fuzzes both sandboxes with random bytes until it is killed.
func TestHelperFuzzLoop(t *testing.T) {
	tag := os.Getenv("KBOOST_SANDBOX_HELPER")
	if tag == "" {
		t.Skip("helper process for TestNoStraySandbox")
	}
	var ss []*Sandbox
	for _, a := range testArches(t) {
		for _, o := range execOptions(t, a) {
			o.Tag = tag
			s, err := NewWithOptions(a, o)
			if err != nil {
				fmt.Println("ERROR", err)
				os.Exit(1)
			}
			ss = append(ss, s)
		}
	}
	fmt.Println("READY")
	rng := rand.New(rand.NewPCG(1, 2))
	cases := make([]kernelsim.Case, 64)
	res := make([]kernelsim.Result, 64)
	for {
		for _, s := range ss {
			for i := range cases {
				code := make([]byte, 1+rng.IntN(15))
				for j := range code {
					code[j] = byte(rng.Uint32())
				}
				cases[i] = kernelsim.Case{Code: code, Regs: s.Arch().RandomRegs(rng), NoMemory: true}
			}
			if err := s.Run(cases, res); err != nil {
				fmt.Println("ERROR", err)
				os.Exit(1)
			}
		}
	}
}

// TestNoStraySandbox kills a fuzzing process with SIGKILL at random moments
// and checks that none of its sandbox processes survive.
func TestNoStraySandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts subprocesses")
	}
	// one sandbox per backend the helper opens (see execOptions)
	n := 0
	for _, a := range testArches(t) {
		n += len(execOptions(t, a))
	}
	killtest.Rounds(t, 3, "TestHelperFuzzLoop", "KBOOST_SANDBOX_HELPER", "kboost-stray-test", n, "sandbox",
		func(round int) time.Duration { return time.Duration(50+100*round) * time.Millisecond })
}
