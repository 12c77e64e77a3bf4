package cli

import (
	"encoding/json"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/schemacheck"
	"github.com/kboost/kboost/loader"
	"github.com/kboost/kboost/uprobe"
)

// TestProbeJSONSchema: the records probe add, list and watch print for
// loader's values (an optimized probe with its readback, a refused one, a
// listed event, a count) validate against schemas/probe.json. The commands
// themselves need a kernel with kprobes (TestLive* with KBOOST_ROOT=1).
func TestProbeJSONSchema(t *testing.T) {
	pol, _ := boost.Lookup("linux-6.1")
	d := boost.Decision{Verdict: boost.Boost, Reasons: []boost.Reason{{Rule: "prepare_singlestep.boost", Text: "boosted"}}}
	yes := true
	lv := &loader.Live{Pred: &loader.Predictor{Policy: pol}}
	le := &loader.ListEntry{Addr: 0xffffffff811c3e30, Kind: "k", Point: "vfs_read+0x0", Flags: []string{"OPTIMIZED"}}
	recs := []any{
		probeAdd(lv, &addRecord{Event: "kboost/p1", Point: "vfs_read", Kernel: le,
			Predicted: loader.Expectation{Point: "vfs_read", Addr: 0xffffffff811c3e30, Decision: d, Verdict: "boost", Optimized: true, Bytes: []byte{0x55, 0x48}, OptBytes: []byte{0x55}},
			Readback:  loader.Readback{SlotAddr: 0xffffffffa0000000, Slot: "55e9", PredictedSlot: "55e9", SlotAgree: &yes, Detour: 0xffffffffa0001000, OptSlot: "55..", PredictedOptSlot: "55.."},
			Agree:     map[string]bool{"listed": true}}),
		probeAdd(lv, &addRecord{Event: "kboost/p2", Point: "x+0x1", Predicted: loader.Expectation{Point: "x+0x1", Verdict: "reject", Errno: "EILSEQ", Decision: d}, Agree: map[string]bool{"listed": false}}),
		probeRowJSON{Event: "kboost/p1", Point: "vfs_read", Hits: 3, List: probeList(le)},
		probeCountJSON{Point: "vfs_read", Hits: 3},
	}
	b, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("probe", b); err != nil {
		t.Errorf("%s: %v", b, err)
	}
}

// TestLiveJSONSchemas: the records of the commands that need a live kernel
// or the network (kernel fetch, uprobe events, watch and bench), built from
// their types, validate against their schemas.
func TestLiveJSONSchemas(t *testing.T) {
	for _, c := range []struct {
		schema string
		v      any
	}{
		{"kernel-fetch", &KernelFiles{Deb: "/c/linux-image.deb", Version: "6.1.0-40-amd64", Vmlinux: "/c/vmlinux", Config: "/c/config", Kallsyms: "/c/kallsyms"}},
		{"kernel-fetch", &KernelFiles{Deb: "/c/linux-image.deb", Version: "6.1.0-40-amd64", Vmlinux: "/c/vmlinux"}},
		{"uprobe-counts", []uprobe.TracefsProbe{{Event: "kboost_uprobe/p1", Point: "/bin/true:0x1040", Hits: 2}}},
		{"uprobe-counts", []uprobe.Count{{Point: "/bin/true:0x1040", Hits: 2}}},
		{"uprobe-bench", []uprobe.BenchRow{{Path: "emulated", Asm: "nop", Calls: 1000, Hits: 1000, NsCall: 900.5, Ratio: 300.2, Verdict: "emulated"}}},
	} {
		b, err := json.Marshal(c.v)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemacheck.Validate(c.schema, b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
}
