package campaign

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/kernelsim"
)

const hdr = `{"record":"campaign","version":1,"arch":"x86-64","policy":"linux-6.1","seed":1,"trials":3,"cases_total":640,"block_size":64,"shard":"%s","samples_from":"s"}` + "\n"

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
		Last:     &Checkpoint{NextBlock: 10, Counts: kernelsim.FuzzStats{Cases: 320, Verdicts: map[string]int{"boost": 2}}},
		Findings: []kernelsim.Finding{{ID: "x", Key: "x", Block: 4, Bytes: "late"}, {ID: "y", Key: "y", Block: 6}}}
	b := &State{Path: "b", Header: Header{Arch: "x86-64", Shard: "1/2", BlockSize: 64},
		Last:     &Checkpoint{NextBlock: 11, Counts: kernelsim.FuzzStats{Cases: 320, Verdicts: map[string]int{"boost": 1, "reject": 4}}},
		Findings: []kernelsim.Finding{{ID: "x", Key: "x", Block: 1, Bytes: "early"}, {ID: "z", Key: "z", Block: 5}}}
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

// TestSchema: every record a findings file holds (header, checkpoint,
// findings of each kind's shape) has exactly the keys the checked-in
// schema allows, the required ones, and their JSON types.
func TestSchema(t *testing.T) {
	b, err := os.ReadFile("testdata/findings.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]struct {
			Required   []string `json:"required"`
			Properties map[string]struct {
				Type  string `json:"type"`
				Const string `json:"const"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m := &Merged{Header: Header{Arch: "x86-64", Policy: "linux-6.1", Shard: "0/1", Samples: "s", CaseTimeout: "0s", Merged: []string{"0/2", "1/2"}},
		Findings: []kernelsim.Finding{{Kind: "unsafe-boost", Note: "n", Key: "k", ID: "i", Block: 1, Bytes: "90", Asm: "nop", Arch: "a", Policy: "p",
			Verdict: "boost", Path: "boost", Rules: []string{"r"}, Diverged: []string{"rax"}, Trials: "1/3", DecoderLen: 1, CPULen: 2, CPU: "c",
			Reproducer: &kernelsim.Reproducer{Bytes: "90"}}}}
	if err := m.Write(&buf); err != nil {
		t.Fatal(err)
	}
	kinds := []string{"campaign", "finding", "checkpoint"}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		def := schema.Defs[kinds[i]]
		for _, k := range def.Required {
			if _, ok := rec[k]; !ok {
				t.Errorf("%s record lacks required %q", kinds[i], k)
			}
		}
		for k, v := range rec {
			p, ok := def.Properties[k]
			if !ok {
				t.Errorf("%s record has %q, not in the schema", kinds[i], k)
				continue
			}
			var typ string
			switch x := v.(type) {
			case string:
				typ = "string"
			case float64:
				typ = "number"
				if x == float64(int64(x)) {
					typ = "integer"
				}
			case map[string]any:
				typ = "object"
			case []any:
				typ = "array"
			case bool:
				typ = "boolean"
			}
			if p.Const != "" && v != p.Const || p.Type != "" && p.Type != typ {
				t.Errorf("%s record: %q is %s %v, schema says %s%s", kinds[i], k, typ, v, p.Type, p.Const)
			}
		}
	}
}
