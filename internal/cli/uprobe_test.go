package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `uprobe list --json` and `uprobe audit --json` on the gcc-built corpus:
// every record has the keys of its checked-in schema and no others, and the
// USDT records name their semaphores.
func TestOracleUprobeJSONSchemas(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (gcc, systemtap-sdt-dev)")
	}
	bin := filepath.Join(t.TempDir(), "corpus")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, "../../uprobe/testdata/corpus.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, c := range []struct {
		args   []string
		schema string
	}{
		{[]string{"uprobe", "list", "--json", bin}, "../../uprobe/schema/list.schema.json"},
		{[]string{"uprobe", "audit", "--json", bin + ":k_redzone"}, "../../uprobe/schema/site.schema.json"},
	} {
		var sc struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		b, err := os.ReadFile(c.schema)
		if err != nil || json.Unmarshal(b, &sc) != nil {
			t.Fatalf("%s: %v", c.schema, err)
		}
		var out, errb bytes.Buffer
		if code := Main(c.args, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb.String())
		}
		n, usdt := 0, 0
		sc2 := bufio.NewScanner(&out)
		sc2.Buffer(nil, 1<<20)
		for sc2.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc2.Bytes(), &m); err != nil {
				t.Fatalf("%v: %q: %v", c.args, sc2.Text(), err)
			}
			n++
			for _, r := range sc.Required {
				if _, ok := m[r]; !ok {
					t.Errorf("%v: %q missing: %s", c.args, r, sc2.Text())
				}
			}
			for k := range m {
				if _, ok := sc.Properties[k]; !ok {
					t.Errorf("%v: %q not in %s", c.args, k, c.schema)
				}
			}
			if m["kind"] == "usdt" && m["semaphore_offset"] != nil {
				usdt++
			}
		}
		if n == 0 || strings.Contains(c.schema, "list") && usdt != 3 {
			t.Errorf("%v: %d records, %d USDT with semaphores", c.args, n, usdt)
		}
	}
}
