//go:build linux

package vm

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/kboost/kboost/vm/guest"
)

// TestOracleVerifyBoost builds (or reuses from the cache) the PREEMPT_NONE kernel
// from Debian's linux-source-6.1, boots it, and compares kboost's predictions
// with what the kernel does, as TestOracleVerifyDebian does. With preemption off
// the kernel boosts: the jmpback field checks, from the kernel's slot bytes, that
// the slot ends with a jmp back exactly where kboost predicts Boost, and the
// kernel must show such slots at all. KBOOST_VERIFY_SAMPLE overrides the number
// of functions (default 300).
func TestOracleVerifyBoost(t *testing.T) {
	oracleGate(t)
	n := verifySample()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	kb, err := BuildBoostKernel(ctx, KbuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kb.Cached {
		t.Logf("boost kernel %s from the cache %s", kb.Release, kb.Dir)
	} else {
		t.Logf("built boost kernel %s in %v into %s", kb.Release, kb.Duration.Round(time.Second), kb.Dir)
	}
	v, err := Verify(ctx, VerifyConfig{Build: kb, Args: guest.VerifyArgs{Sample: n, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := v.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
	s := v.Summary
	if s.Functions < n {
		t.Errorf("%d functions verified, want %d", s.Functions, n)
	}
	if v.Report.Leftover != "" {
		t.Errorf("kprobes left behind:\n%s", v.Report.Leftover)
	}
	for _, f := range guest.VerifyFields {
		if s.Disagree[f] > 0 {
			t.Errorf("%s: %d disagreements", f, s.Disagree[f])
		}
	}
	if s.Agree["jmpback"] == 0 {
		t.Errorf("no probe had its jmp-back compared")
	}
	if s.SlotJumpsBack == 0 {
		t.Errorf("no kernel slot jumps back: the kernel does not boost (config %s)", kb.Config)
	}
}
