package campaign

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/internal/schemacheck"
	"github.com/kboost/kboost/kernelsim/fuzz"
)

const hdr = `{"record":"campaign","version":2,"arch":"x86-64","policy":"linux-6.1","seed":1,"trials":3,"cases_total":640,"block_size":64,"shard":"%s","samples_from":"s"}` + "\n"

func file(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A file cut anywhere loads as its last checkpoint: the findings after it
// and a torn last line are dropped, and End is just past it.
func TestLoadTornTail(t *testing.T) {
	h := strings.Replace(hdr, "%s", "0/1", 1)
	cp := `{"record":"checkpoint","next_block":3,"counts":{"cases":192,"verdicts":{"boost":5},"checks":9,"distinct_findings":1}}` + "\n"
	f1 := `{"kind":"length","key":"a","id":"1","block":1}` + "\n"
	f2 := `{"kind":"length","key":"b","id":"2","block":3}` + "\n"
	body := h + f1 + cp + f2 + `{"kind":"len`
	s, err := Load(file(t, "f.jsonl", body))
	if err != nil {
		t.Fatal(err)
	}
	if s.Last == nil || s.Last.NextBlock != 3 || s.Last.Counts.Cases != 192 || s.End != int64(len(h+f1+cp)) || s.Dropped != 2 ||
		len(s.Findings) != 1 || s.Keys()[0] != "a" {
		t.Errorf("Load = %+v", s)
	}
	s, err = Load(file(t, "g.jsonl", h+f1))
	if err != nil || s.Last != nil || s.End != int64(len(h)) || s.Dropped != 1 || s.Last0().NextBlock != 0 {
		t.Errorf("no checkpoint: %+v, %v", s, err)
	}
	for _, bad := range []string{"", f1, h + "{\n" + cp, h + h} {
		if _, err := Load(file(t, "b.jsonl", bad)); err == nil {
			t.Errorf("Load(%q) accepted", bad)
		}
	}
}

// Merge keeps a finding met by two shards once, from the earliest block,
// orders by block and sums the counts.
func TestMerge(t *testing.T) {
	a := &State{Path: "a", Header: Header{Arch: "x86-64", Shard: "0/2", BlockSize: 64},
		Last:     &Checkpoint{NextBlock: 10, Counts: fuzz.Stats{Cases: 320, Verdicts: map[string]int{"boost": 2}}},
		Findings: []fuzz.Finding{{ID: "x", Key: "x", Block: 4, Bytes: "late"}, {ID: "y", Key: "y", Block: 6}}}
	b := &State{Path: "b", Header: Header{Arch: "x86-64", Shard: "1/2", BlockSize: 64},
		Last:     &Checkpoint{NextBlock: 11, Counts: fuzz.Stats{Cases: 320, Verdicts: map[string]int{"boost": 1, "reject": 4}}},
		Findings: []fuzz.Finding{{ID: "x", Key: "x", Block: 1, Bytes: "early"}, {ID: "z", Key: "z", Block: 5}}}
	m, err := Merge([]*State{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range m.Findings {
		got = append(got, f.ID+f.Bytes)
	}
	if strings.Join(got, ",") != "xearly,z,y" || m.Counts.Cases != 640 || m.Counts.Verdicts["boost"] != 3 || m.Counts.Verdicts["reject"] != 4 ||
		m.Counts.FindingKeys != 3 || strings.Join(m.Header.Merged, ",") != "0/2,1/2" {
		t.Errorf("Merge = %v %+v %v", got, m.Counts, m.Header.Merged)
	}
	if _, err := Merge([]*State{a, a}); err == nil {
		t.Error("a shard merged twice")
	}
	c := *b
	c.Header.Seed = 9
	if _, err := Merge([]*State{a, &c}); err == nil {
		t.Error("shards of two campaigns merged")
	}
}

// TestSchema: every record a findings file holds (header, finding with
// every field, checkpoint) validates against schemas/fuzz-findings.json.
func TestSchema(t *testing.T) {
	var buf bytes.Buffer
	m := &Merged{Header: Header{Arch: "x86-64", Policy: "linux-6.1", Seed: 1, Trials: 3, Shard: "0/1", Samples: "s", CaseTimeout: "0s", Merged: []string{"0/2", "1/2"}},
		Findings: []fuzz.Finding{{Kind: "unsafe-boost", Note: "n", Key: "k", ID: "i", Block: 1, Bytes: "90", Asm: "nop", Arch: "x86-64", Policy: "linux-6.1",
			Verdict: "boost", Path: "boost", Reasons: []string{"prepare_singlestep.boost"}, Details: []string{"t"}, Diverged: []string{"rax"}, Trials: 3, DivergedTrials: 1, DecoderLen: 1, CPULen: 2, CPU: "c",
			Reproducer: &fuzz.Reproducer{Bytes: "90"}}}}
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 3 {
		t.Fatalf("%d records, want header, finding, checkpoint:\n%s", n, buf.String())
	}
	if err := schemacheck.Validate("fuzz-findings", buf.Bytes()); err != nil {
		t.Error(err)
	}
	// a finding in the old form (unspaced bytes, rules) is refused
	old := strings.Replace(buf.String(), `"reasons":`, `"rules":`, 1)
	if err := schemacheck.Validate("fuzz-findings", []byte(old)); err == nil {
		t.Error("a finding with rules validates")
	}
}
