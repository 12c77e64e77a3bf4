//go:build linux

package gdbserial

import (
	"fmt"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/internal/killtest"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestHelperGDBFuzzLoop is not a test: TestNoStrayEmulator runs it in a
// child process, which runs random A64 words under qemu until it is killed.
func TestHelperGDBFuzzLoop(t *testing.T) {
	tag := os.Getenv("KBOOST_GDB_HELPER")
	if tag == "" {
		t.Skip("helper process for TestNoStrayEmulator")
	}
	g, err := New(kernelsim.ARM64, kernelsim.Options{Tag: tag})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Println("READY")
	rng := rand.New(rand.NewPCG(1, 2))
	cases := make([]kernelsim.Case, 64)
	res := make([]kernelsim.Result, 64)
	var tr kernelsim.Trial
	for {
		for i := range cases {
			kernelsim.ARM64.RandomTrialA64(rng, &tr)
			cases[i] = kernelsim.Case{Code: kernelsim.A64Bytes(rng.Uint32()), CodeOffset: kernelsim.FuzzCodeOffset, Regs: tr.Regs, NoMemory: true}
		}
		if err := g.Run(cases, res); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(1)
		}
	}
}

// TestNoStrayEmulator kills a process running the ARM64 emulator backend
// with SIGKILL at random moments and checks that no qemu survives it.
func TestNoStrayEmulator(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-aarch64-static)")
	}
	killtest.Rounds(t, 3, "TestHelperGDBFuzzLoop", "KBOOST_GDB_HELPER", "kboost-stray-gdb", 1, "emulator",
		func(round int) time.Duration { return time.Duration(50+150*round) * time.Millisecond })
}
