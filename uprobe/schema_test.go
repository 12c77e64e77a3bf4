package uprobe

import (
	"encoding/json"
	"testing"

	"github.com/kboost/kboost/internal/schemacheck"
)

// schemaCheck validates one JSON object against a checked-in schema
// (schemas/NAME.json) with the JSON Schema validator.
func schemaCheck(t *testing.T, name string, obj []byte) {
	t.Helper()
	if err := schemacheck.Validate(name, obj); err != nil {
		t.Errorf("%s: %v", obj, err)
	}
}

// Sites as audit --json writes them match schemas/uprobe-site.json: a plain
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
		schemaCheck(t, "uprobe-site", b)
	}
}
