package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

// `uprobe list --names BIN PATTERN` prints bpftrace's probe names: the USDT
// probes are readelf -n's, the k_add_* functions nm's, with BIN absolute.
func TestOracleUprobeListNames(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (gcc, systemtap-sdt-dev, binutils)")
	}
	bin := filepath.Join(t.TempDir(), "corpus")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, "../../uprobe/testdata/corpus.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	notes, err := exec.Command("readelf", "-n", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var usdt []string
	prov := ""
	for _, l := range strings.Split(string(notes), "\n") {
		l = strings.TrimSpace(l)
		if p, ok := strings.CutPrefix(l, "Provider: "); ok {
			prov = p
		}
		if n, ok := strings.CutPrefix(l, "Name: "); ok && prov != "" {
			usdt = append(usdt, "usdt:"+bin+":"+prov+":"+n)
			prov = ""
		}
	}
	syms, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var adds []string
	for _, l := range strings.Split(string(syms), "\n") {
		if f := strings.Fields(l); len(f) == 3 && strings.HasPrefix(f[2], "k_add_") && (f[1] == "T" || f[1] == "t") {
			adds = append(adds, "uprobe:"+bin+":"+f[2])
		}
	}
	for _, c := range []struct {
		pat  string
		want []string
	}{{"usdt:*", usdt}, {"k_add_*", adds}, {"uprobe:" + bin + ":k_add_*", adds}} {
		var out, errb bytes.Buffer
		if code := Main([]string{"uprobe", "list", "--names", bin, c.pat}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d: %s", c.pat, code, errb.String())
		}
		got := strings.Fields(out.String())
		slices.Sort(got)
		slices.Sort(c.want)
		if len(c.want) == 0 || !slices.Equal(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.pat, got, c.want)
		}
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"uprobe", "list", bin, "k_[nop"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("bad pattern: exit %d, want 2", code)
	}
}

// No pattern makes globRE panic; a pattern without metacharacters matches
// itself only.
func FuzzGlobRE(f *testing.F) {
	for _, s := range []string{"usdt:*", "k_[!5]*", "a?b", "[", "x[]y", `\`, "uprobe:/bin/bash:read*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		re, err := globRE(p)
		if err != nil || strings.ContainsAny(p, "*?[") {
			return
		}
		if !re.MatchString(p) || re.MatchString(p+"x") {
			t.Errorf("%q: literal pattern does not match exactly itself", p)
		}
	})
}
