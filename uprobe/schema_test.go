package uprobe

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"
)

// schemaCheck checks one JSON object against a checked-in schema's
// required keys, property names, string patterns and enums (the subset the
// schemas use).
func schemaCheck(t *testing.T, schemaPath string, obj []byte) {
	t.Helper()
	var sc struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type    string   `json:"type"`
			Pattern string   `json:"pattern"`
			Enum    []string `json:"enum"`
		} `json:"properties"`
	}
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	var m map[string]any
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	for _, r := range sc.Required {
		if _, ok := m[r]; !ok {
			t.Errorf("%s: required %q missing in %s", schemaPath, r, obj)
		}
	}
	for k, v := range m {
		p, ok := sc.Properties[k]
		if !ok {
			t.Errorf("%s: %q is not in the schema (%s)", schemaPath, k, obj)
			continue
		}
		s, isStr := v.(string)
		if p.Pattern != "" && (!isStr || !regexp.MustCompile(p.Pattern).MatchString(s)) {
			t.Errorf("%s: %q = %v does not match %s", schemaPath, k, v, p.Pattern)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			t.Errorf("%s: %q = %v not in %v", schemaPath, k, v, p.Enum)
		}
	}
}

// Sites as audit --json writes them match schema/site.schema.json: a plain
// site, a hazard site and a mid-instruction refusal.
func TestSiteSchema(t *testing.T) {
	k, _ := Lookup("uprobes-6.18")
	fa := auditBytes(t, k, hexBytes(t, "48 89 7c 24 f8 0f 1f 44 00 00 48 8b 44 24 f8 c3"))
	sites := append([]Site(nil), fa.Sites...)
	if len(sites[1].Hazards) == 0 {
		t.Fatal("no hazard at the red-zone NOP")
	}
	for _, s := range sites {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		schemaCheck(t, "schema/site.schema.json", b)
	}
}
