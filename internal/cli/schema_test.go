//go:build linux

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/schemacheck"
)

// TestJSONSchemas runs every command whose --json output needs no kernel
// feature, network or VM (decode, audit, explain, sim, fuzz, merge,
// opcodes, policies, uprobe, monitor) on inputs that reach each record
// shape, and validates every value against its checked-in schema
// (schemas/*.json) with a JSON Schema 2020-12 validator.
func TestJSONSchemas(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join(dir, "f.o")
	if err := os.WriteFile(elf, oneFuncELF(t, decode.X86_64, []byte{0x55, 0x48, 0x89, 0xe5, 0x0f, 0x0b, 0xc3}), 0o644); err != nil {
		t.Fatal(err)
	}
	findings := filepath.Join(dir, "findings.jsonl")
	sum1, sum2 := filepath.Join(dir, "s1.json"), filepath.Join(dir, "s2.json")
	cases := []struct {
		schema string
		args   []string
	}{
		{"decode", []string{"decode", "--json", "48", "8b", "05", "10", "00", "00", "00", "ff", "ff", "90"}},
		{"decode", []string{"decode", "--json", elf}},
		{"audit", []string{"audit", "--json"}},
		{"audit", []string{"audit", "--json", "--func", "main+0x4", "--func", "main+0x1"}},
		{"audit", []string{"audit", "--json", elf, "--func", "f"}},
		{"audit-summary", []string{"audit", "--json", "--summary"}},
		{"explain", []string{"explain", "--json", "0f", "0b"}},
		{"explain", []string{"explain", "--json", "ff", "ff"}},
		{"explain", []string{"explain", "--json", "--slot", "0xffffffffa0000000", "48", "8b", "05", "10", "00", "00", "00"}},
		{"sim", []string{"sim", "--json", "--trials", "2", "48", "8b", "05", "10", "00", "00", "00"}},
		{"fuzz-summary", []string{"fuzz", "--json", "--quiet", "-n", "300", "--out", findings}},
		{"opcodes", []string{"opcodes", "--json"}},
		{"opcodes", []string{"opcodes", "--json", "--arch", "i386", "--policy", "uprobes-x86"}},
		{"policies", []string{"policies", "--json"}},
		{"diff", []string{"diff", "--json", "--policy", "linux-6.1,linux-6.12"}},
		{"diff", []string{"diff", "--json", "--policy", "linux-6.1,uprobes-x86", "--func", "add_counter"}},
		// uprobes need a file with program headers: this test's own binary
		{"uprobe-list", []string{"uprobe", "list", "--json", os.Args[0]}},
		// the machine's part only (the rows run kboost itself: bench's TestProbeRows validates them)
		{"bench", []string{"bench", "--json", "--skip-build", "--skip-probes", "--progress=false"}},
	}
	for _, arch := range []string{"arm64", "arm", "thumb"} {
		cases = append(cases,
			struct {
				schema string
				args   []string
			}{"opcodes", []string{"opcodes", "--json", "--arch", arch}},
			struct {
				schema string
				args   []string
			}{"opcodes", []string{"opcodes", "--json", "--arch", arch, "--class", "branch"}},
			struct {
				schema string
				args   []string
			}{"explain", []string{"explain", "--json", "--arch", arch, "--words", map[string]string{"arm64": "d503201f", "arm": "e52de004", "thumb": "4408"}[arch]}},
		)
	}
	if os.Getenv("KBOOST_ORACLE") != "" { // qemu-user runs the ARM sims
		for _, insn := range [][]string{{"--arch", "arm64", "20", "00", "02", "8b"}, {"--arch", "arm", "02", "00", "81", "e0"}, {"--arch", "thumb", "08", "44"}} {
			cases = append(cases, struct {
				schema string
				args   []string
			}{"sim", append([]string{"sim", "--json", "--trials", "2"}, insn...)})
		}
	}
	for _, c := range cases {
		out, stderr, code := run(t, c.args...)
		if code != 0 && code != ExitFailure {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
			continue
		}
		if err := schemacheck.Validate(c.schema, []byte(out)); err != nil {
			t.Errorf("%v: %.1500s", c.args, err)
		}
	}
	// uprobe audit of the first function uprobe list names
	list, _, _ := run(t, "uprobe", "list", "--json", os.Args[0])
	var first struct {
		Name string `json:"name"`
	}
	line, _, _ := strings.Cut(list, "\n")
	if err := json.Unmarshal([]byte(line), &first); err != nil || first.Name == "" {
		t.Fatalf("uprobe list: %q: %v", line, err)
	}
	out, stderr, code := run(t, "uprobe", "audit", "--json", os.Args[0]+":"+first.Name)
	if err := schemacheck.Validate("uprobe-site", []byte(out)); code != 0 || err != nil {
		t.Errorf("uprobe audit %s: exit %d %s: %.1500v", first.Name, code, stderr, err)
	}
	// the fuzz findings file, and merges of findings and of audit summaries
	b, err := os.ReadFile(findings)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemacheck.Validate("fuzz-findings", b); err != nil {
		t.Error(err)
	}
	out, stderr, code = run(t, "merge", "--json", "-o", filepath.Join(dir, "m.jsonl"), findings)
	if err := schemacheck.Validate("fuzz-summary", []byte(out)); code != 0 || err != nil {
		t.Errorf("merge --json: exit %d %s: %v", code, stderr, err)
	}
	for i, p := range []string{sum1, sum2} {
		out, _, _ := run(t, "audit", "--json", "--summary", "--shard", []string{"0/2", "1/2"}[i])
		if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, code = run(t, "merge", sum1, sum2)
	if err := schemacheck.Validate("audit-summary", []byte(out)); code != 0 || err != nil {
		t.Errorf("merge of audit summaries: exit %d %s: %v", code, stderr, err)
	}
	// monitor writes its records to --out
	mon := filepath.Join(dir, "mon.jsonl")
	if _, stderr, code := run(t, "monitor", "--json", "--out", mon, "--", "/bin/true"); code != 0 {
		t.Fatalf("monitor: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(mon); err != nil {
		t.Error(err)
	} else if err := schemacheck.Validate("monitor", b); err != nil {
		t.Error(err)
	}
}
