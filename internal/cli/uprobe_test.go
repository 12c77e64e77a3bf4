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

	"github.com/kboost/kboost/internal/schemacheck"
)

// `uprobe list --json` and `uprobe audit --json` on the gcc-built corpus:
// every record validates against its checked-in schema, and the
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
		{[]string{"uprobe", "list", "--json", bin}, "uprobe-list"},
		{[]string{"uprobe", "audit", "--json", bin + ":k_redzone"}, "uprobe-site"},
	} {
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
			if err := schemacheck.Validate(c.schema, sc2.Bytes()); err != nil {
				t.Errorf("%v: %v", c.args, err)
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
