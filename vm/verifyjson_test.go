package vm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kboost/kboost/internal/schemacheck"
	"github.com/kboost/kboost/vm/guest"
)

// TestVerifyJSONSchema: `vm verify --json` of a verification (a boosted
// probe that agrees, a refusal, an optimized one with its detour, a probe
// not run) validates against schemas/vm-verify.json: addresses 0x strings,
// spaced bytes, errno absent when accepted, the not-run probe left out.
func TestVerifyJSONSchema(t *testing.T) {
	v := &Verification{Report: guest.VerifyReport{Release: "6.1.0-test-amd64", Policy: "linux-6.1", Rounds: 1, Records: []guest.VerifyRecord{
		{Func: "vfs_read", Off: 4, Boundary: true, Bytes: "4889e5", Verdict: "boost", Rules: []string{"prepare_singlestep.boost"},
			Predicted: guest.Outcome{Addr: 0xffffffff811c3e34, Slot: "4889e5e9"}, Kernel: guest.Outcome{Addr: 0xffffffff811c3e34, Slot: "4889e5e9", SlotAddr: 0xffffffffa0000000}},
		{Func: "vfs_read", Off: 5, Boundary: false, Verdict: "reject", Predicted: guest.Outcome{Errno: "EILSEQ"}, Kernel: guest.Outcome{Errno: "EILSEQ"}},
		{Func: "vfs_write", Off: 0, Boundary: true, Bytes: "55", Verdict: "boost", Predicted: guest.Outcome{Optimized: true, OptSlot: "55.."},
			Kernel: guest.Outcome{Optimized: true, OptSlot: "55aa", OptAddr: 0xffffffffa0001000}},
		{Func: "x", Round: -1},
	}}}
	v.Summary = Summarize(&v.Report)
	var b bytes.Buffer
	if err := v.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("vm-verify", b.Bytes()); err != nil {
		t.Errorf("%s\n%v", b.String(), err)
	}
	if n := strings.Count(b.String(), "\n"); n != 4 || strings.Contains(b.String(), `"errno":""`) {
		t.Errorf("%d lines (want 3 probes and the summary), or an empty errno:\n%s", n, b.String())
	}
}

// The printed view of a record reads back into the same record.
func TestParseRecordJSONRoundTrip(t *testing.T) {
	rec := guest.VerifyRecord{Func: "vfs_read", Off: 4, Boundary: true, Bytes: "1f2003d5", Verdict: "singlestep", Rules: []string{"arm64.slot"}, Round: 1,
		Predicted: guest.Outcome{Addr: 0xffff800008010004, Slot: "1f2003d5c00020d4", OptSlot: "90..90", OptAddr: 0xffff800000800000},
		Kernel:    guest.Outcome{Errno: "EINVAL", Ftrace: true, Optimized: true, SlotAddr: 0xffff800000801000}}
	var b bytes.Buffer
	if err := writeVerifyJSON(&b, arm64View, "linux-6.1-arm64", &guest.VerifyReport{Records: []guest.VerifyRecord{rec}}, VerifySummary{}, ""); err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(b.Bytes(), []byte("\n"))
	got, err := ParseRecordJSON(line)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rec, got); d != "" {
		t.Errorf("round trip (-want +got):\n%s\n%s", d, line)
	}
}
