package vm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/kboost/kboost/vm/guest"
)

func TestLookupVerifier(t *testing.T) {
	for name, want := range map[string]*Verifier{
		"x86-64": AMD64Verifier, "amd64": AMD64Verifier,
		"arm64": ARM64Verifier, "aarch64": ARM64Verifier,
		"arm": ARMVerifier, "armhf": ARMVerifier,
	} {
		if v, err := LookupVerifier(name); err != nil || v != want {
			t.Errorf("LookupVerifier(%q) = %v, %v; want %v", name, v, err, want)
		}
	}
	for _, name := range []string{"i386", "mips", ""} {
		if _, err := LookupVerifier(name); !errors.Is(err, ErrUnknownArch) {
			t.Errorf("LookupVerifier(%q): %v, want ErrUnknownArch", name, err)
		}
	}
	// Each verifier's Debian package boots on its architecture.
	for _, v := range Verifiers {
		if a, err := ArchForDebianMeta(v.DebianMeta); err != nil || a != v.Arch {
			t.Errorf("%s: %s boots on %v (%v)", v, v.DebianMeta, a, err)
		}
	}
}

func TestVerifierRefuses(t *testing.T) {
	ctx := context.Background()
	if _, err := ARM64Verifier.Verify(ctx, VerifyRequest{Build: &KernelBuild{}}); err == nil || !strings.Contains(err.Error(), "boost") {
		t.Errorf("arm64 with a boost kernel: %v", err)
	}
	if _, err := ARMVerifier.Verify(ctx, VerifyRequest{Spacing: 8}); err == nil || !strings.Contains(err.Error(), "spacing") {
		t.Errorf("arm with spacing: %v", err)
	}
	if _, err := ARMVerifier.Verify(ctx, VerifyRequest{Uprobes: &UprobeTrialRequest{}}); err == nil || !strings.Contains(err.Error(), "uprobe trials") {
		t.Errorf("arm with uprobe trials: %v", err)
	}
}

// TestFixedOutcomeJSON: the JSON of a fixed-width record is one record per
// probe that ran, then a summary counting what the records say.
func TestFixedOutcomeJSON(t *testing.T) {
	rep := &guest.ARM64Report{Arch: "arm64", Predicted: true}
	rep.Release, rep.Policy = "6.1.0-test-arm64", "linux-6.1-arm64"
	rep.Funcs = []guest.KernelFunc{{Name: "f", Traced: true}}
	rep.Records = []guest.VerifyRecord{
		{Func: "f", Off: 0, Boundary: true, Bytes: "e9031eaa", Round: 1, Kernel: guest.Outcome{Addr: 0x10, Slot: "e9031eaac00020d4"},
			Predicted: guest.Outcome{Addr: 0x10, Slot: "e9031eaac00020d4"}},
		{Func: "f", Off: 4, Boundary: true, Bytes: "1f2003d5", Round: 1, Kernel: guest.Outcome{Errno: "EINVAL"}, Predicted: guest.Outcome{Addr: 0x14}},
		{Func: "f", Off: 1, Round: 1, Kernel: guest.Outcome{Errno: "EINVAL"}, Predicted: guest.Outcome{Errno: "EINVAL"}},
		{Func: "f", Off: 8, Boundary: true, Round: -1},
	}
	o := fixedOutcome(ARM64Verifier, rep, arm64View, "", func(w io.Writer) error { return nil })
	if o.Agrees() || o.Summary.Probes != 3 || o.Summary.AllAgree != 2 || o.Summary.NonBound != 1 || o.Summary.NotRun != 1 {
		t.Errorf("summary %+v", o.Summary)
	}
	var buf bytes.Buffer
	if err := o.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 3 records and a summary:\n%s", len(lines), buf.String())
	}
	var sum struct {
		Summary VerifySummary `json:"summary"`
		Arch    string        `json:"arch"`
	}
	if err := json.Unmarshal([]byte(lines[3]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Arch != "arm64" || sum.Summary.Agree["errno"] != 2 || sum.Summary.Disagree["errno"] != 1 || sum.Summary.Agree["slot"] != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// TestSummaryJSONKeys: the --json summary object of every architecture has
// the keys it had before the summaries were one (schemas/vm-verify.json
// admits any counts there, so the schema alone would not catch the tables'
// fields leaking into it).
func TestSummaryJSONKeys(t *testing.T) {
	want := "agree all_agree boost_predicted boundary disagree functions non_boundary not_run probes slot_jumps_back"
	rep := guest.ARM64Report{Arch: "arm64", Predicted: true, Funcs: []guest.KernelFunc{{Name: "f"}}}
	rep.Records = []guest.VerifyRecord{{Func: "f", Boundary: true, Bytes: "c0035fd6", Round: 1, Kernel: guest.Outcome{Errno: "EINVAL"}, Predicted: guest.Outcome{Errno: "EINVAL"}}}
	x86 := &Verification{Report: guest.VerifyReport{Release: "6.1.0-test-amd64", Policy: "linux-6.1", Records: []guest.VerifyRecord{
		{Func: "f", Boundary: true, Bytes: "55", Verdict: "boost", Round: 1, Kernel: guest.Outcome{Addr: 0x10, Slot: "55e9"}, Predicted: guest.Outcome{Addr: 0x10, Slot: "55e9"}}}}}
	x86.Summary = Summarize(&x86.Report)
	for name, write := range map[string]func(io.Writer) error{
		"x86-64": x86.WriteJSON,
		"arm64":  fixedOutcome(ARM64Verifier, &rep, arm64View, "", nil).WriteJSON,
	} {
		var buf bytes.Buffer
		if err := write(&buf); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		var sum struct {
			Summary map[string]json.RawMessage `json:"summary"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range sum.Summary {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if got := strings.Join(keys, " "); got != want {
			t.Errorf("%s: summary keys %s, want %s", name, got, want)
		}
	}
	// The x86 slot 55 e9 (cut after the E9) jumps back: counted in the
	// summary as the jmpback field compares it.
	if x86.Summary.BoostPredicted != 1 || x86.Summary.SlotJumpsBack != 1 || x86.Summary.Agree["jmpback"] != 1 || x86.Summary.Outcomes["slot"] != 1 {
		t.Errorf("x86 summary %+v", x86.Summary)
	}
}
