package vm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kboost/kboost/vm/guest"
)

// TestUprobeRecordCache: a verification with uprobe trials is cached under
// its own key, with both reports; a record cached without the trials is
// not served to a request for them, and another trial program is another
// key.
func TestUprobeRecordCache(t *testing.T) {
	t.Setenv("KBOOST_CACHE", t.TempDir())
	dir := t.TempDir()
	bin := filepath.Join(dir, "trial")
	if err := os.WriteFile(bin, []byte("program one"), 0o755); err != nil {
		t.Fatal(err)
	}
	deb := "linux-image-test_1_arm64.deb"
	args := guest.ARM64VerifyArgs{Sample: 3, Seed: 1}
	record := func(rep *guest.ARM64Report) {
		*rep = guest.ARM64Report{Arch: "arm64"}
		rep.Release = "7.2.0-test"
		rep.Records = []guest.VerifyRecord{{Func: "f", Off: 4}}
	}
	var plain guest.ARM64Report
	if _, err := cachedRecord(deb, ARM64, Config{}, 1, args, false, &plain, func(json.RawMessage) error { record(&plain); return nil }); err != nil {
		t.Fatal(err)
	}
	boots := 0
	lookup := func(req *UprobeTrialRequest) (string, *guest.ARM64Report, *guest.UprobeReport) {
		t.Helper()
		key, err := req.cacheKey()
		if err != nil {
			t.Fatal(err)
		}
		var rep guest.ARM64Report
		c := &fixedUprobeRecord{ARM64Report: &rep}
		cached, err := cachedValue(deb, ARM64, Config{}, 1, args, key, false, c, func() bool {
			return len(rep.Records) > 0 && c.Uprobes != nil && len(c.Uprobes.Records) > 0
		}, func(json.RawMessage) error {
			boots++
			record(&rep)
			c.Uprobes = &guest.UprobeReport{Release: rep.Release, Records: []guest.UprobeRecord{{Name: req.Args.Points[0].Name}}}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return cached, &rep, c.Uprobes
	}
	req := &UprobeTrialRequest{Bin: bin, Args: guest.UprobeArgs{Calls: 7, Points: []guest.UprobePoint{{Name: "s_nop", Arg: "nop", Offset: 0x1000}}}}
	if cached, _, up := lookup(req); cached != "" || boots != 1 || up == nil {
		t.Fatalf("first request with trials: cached %q, %d boots, report %v; want a boot (the record cached without trials does not serve)", cached, boots, up)
	}
	cached, rep, up := lookup(req)
	if cached == "" || boots != 1 {
		t.Fatalf("second request: cached %q after %d boots, want a cache hit", cached, boots)
	}
	if up == nil || len(up.Records) != 1 || up.Records[0].Name != "s_nop" || up.Release != "7.2.0-test" || len(rep.Records) != 1 || rep.Arch != "arm64" {
		t.Fatalf("cached value lost a report: record %+v, uprobes %+v", rep, up)
	}
	if err := os.WriteFile(bin, []byte("program two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if cached, _, _ := lookup(req); cached != "" || boots != 2 {
		t.Fatalf("another trial program: cached %q, %d boots; want a boot", cached, boots)
	}
	req.Args.Calls = 8
	if cached, _, _ := lookup(req); cached != "" || boots != 3 {
		t.Fatalf("other trial arguments: cached %q, %d boots; want a boot", cached, boots)
	}
	// The record cached without trials still serves requests without them.
	var again guest.ARM64Report
	if c, err := cachedRecord(deb, ARM64, Config{}, 1, args, false, &again, func(json.RawMessage) error { t.Fatal("booted"); return nil }); err != nil || c == "" {
		t.Fatalf("request without trials: cached %q, %v", c, err)
	}
}
