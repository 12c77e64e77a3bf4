package loader

import (
	"testing"

	"github.com/kboost/kboost/boost"
)

// TestCheapest places probes in a hand-made function; the expectations follow
// from the kernel rules (Debian 6.1 defaults: PREEMPTION, so no boosting;
// optprobes need 5 bytes of boostable instructions left in the function).
func TestCheapest(t *testing.T) {
	code := []byte{
		0x0f, 0x1f, 0x44, 0x00, 0x00, // 0x00 ftrace nop
		0x55,             // 0x05 push %rbp
		0x48, 0x89, 0xe5, // 0x06 mov %rsp,%rbp
		0x85, 0xff, // 0x09 test %edi,%edi
		0x74, 0x05, // 0x0b je 0x12
		0xe8, 0x00, 0x00, 0x00, 0x00, // 0x0d call 0x12
		0x5d, // 0x12 pop %rbp
		0xc3, // 0x13 ret
	}
	pol, err := boost.Lookup("linux-6.1")
	if err != nil {
		t.Fatal(err)
	}
	env := pol.DefaultEnv()
	fa, err := pol.AuditFunc(boost.Func{Name: "f", Addr: 0xffffffff81000000, Bytes: code}, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off, to uint64
		cost    Cost
	}{
		{0x00, 0x00, CostFtrace},    // entry: the ftrace site itself
		{0x05, 0x05, CostOptimized}, // push+mov+test: 6 boostable bytes, optimizable
		{0x09, 0x0b, CostEmulate},   // test is single-stepped (the region would copy je); je is emulated
		{0x0d, 0x0d, CostEmulate},   // a call ends its block at once
		{0x12, 0x13, CostEmulate},   // pop (too near the end to optimize) -> ret, emulated
	} {
		p, err := Cheapest(fa, tc.off, true)
		if err != nil {
			t.Fatal(err)
		}
		if p.To != tc.to || p.Cost != tc.cost {
			t.Errorf("+%#x: placed at +%#x (%s), want +%#x (%s): %s", tc.off, p.To, p.Cost, tc.to, tc.cost, p.Reason)
		}
	}
	// The je target starts a block: from 0x06 the scan stops at je (0x0b) and
	// never reaches 0x12.
	if p, _ := Cheapest(fa, 0x06, false); p.To > 0x0b {
		t.Errorf("+0x6 placed past the block end: %+v", p)
	}
	if _, err := Cheapest(fa, 0x07, true); err == nil {
		t.Error("a non-boundary was placed")
	}
}
