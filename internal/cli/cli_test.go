package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// TestBadInput checks that each kind of bad input gets one clear line naming the
// cause, and a non-zero exit status.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	trunc := filepath.Join(dir, "trunc.elf")
	if err := os.WriteFile(trunc, []byte("\x7fELF\x02\x01\x01\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	junk := filepath.Join(dir, "junk.bin")
	if err := os.WriteFile(junk, []byte("hello, this is not a binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"decode", "zz"}, 2, "zz: no such file"},
		{[]string{"decode", "abc"}, 2, "abc: no such file"},
		{[]string{"decode", "48 8"}, 2, "odd number of hex digits"},
		{[]string{"decode", dir}, 2, "is a directory"},
		{[]string{"explain", junk}, 2, "takes hex bytes, not a file"},
		{[]string{"decode", "--arch", "mips", "90"}, 2, "unknown architecture"},
		{[]string{"decode", trunc}, 1, trunc},
		{[]string{"decode", junk}, 1, junk},
		{[]string{"audit", "--policy", "linux-9.9"}, 2, "linux-9.9"},
		{[]string{"audit", "--func", "no_such_function"}, 2, "no_such_function"},
		{[]string{"audit", "--func", "main+0x100000"}, 2, "main"},
		{[]string{"audit", "--policy", "linux-2.6.17-i386"}, 2, "does not model x86-64"},
		{[]string{"explain", "0f"}, 2, "truncated instruction"},
		{[]string{"explain", "90", "90"}, 2, "bytes after the instruction"},
		{[]string{"nosuchcommand"}, 2, "unknown command"},
	} {
		_, stderr, code := run(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, tc.code, stderr)
		}
		if tc.code != 0 && !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: stderr %q does not name %q", tc.args, stderr, tc.want)
		}
		if tc.code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: error is more than one line: %q", tc.args, stderr)
		}
	}
}

// TestDecodeJSONMatchesObjdump decodes a system binary with `kboost decode --json`
// and checks every instruction's address and length against objdump -d.
func TestDecodeJSONMatchesObjdump(t *testing.T) {
	bin := "/usr/bin/true"
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Fatal("objdump is needed (apt-get install binutils)")
	}
	out, stderr, code := run(t, "decode", "--json", bin)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	ours := map[uint64]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var rec struct {
			Addr  string `json:"addr"`
			Len   int    `json:"len"`
			Bytes string `json:"bytes"`
			Asm   string `json:"asm"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("bad JSON line %q: %v", sc.Text(), err)
		}
		a, err := strconv.ParseUint(strings.TrimPrefix(rec.Addr, "0x"), 16, 64)
		if err != nil || rec.Asm == "" || len(strings.Fields(rec.Bytes)) != rec.Len && rec.Len != 0 {
			t.Fatalf("malformed record %q", sc.Text())
		}
		ours[a] = rec.Len
	}
	od, err := exec.Command("objdump", "-d", "-w", "-z", "-M", "intel64", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(od), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) < 3 || !strings.HasSuffix(parts[0], ":") {
			continue
		}
		a, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(parts[0], ":")), 16, 64)
		if err != nil {
			continue
		}
		n++
		if got, ok := ours[a]; !ok || got != len(strings.Fields(parts[1])) {
			t.Errorf("%#x: kboost len %d (present %v), objdump %q", a, got, ok, line)
		}
	}
	if n < 1000 {
		t.Fatalf("only %d objdump lines parsed", n)
	}
}

// TestAuditDemoJSON audits the embedded demo and checks the stable JSON fields and
// facts visible in the bytes: the ftrace site is the `call __fentry__` that
// objdump shows at each traced function's entry.
func TestAuditDemoJSON(t *testing.T) {
	out, stderr, code := run(t, "audit", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	verdicts := map[string]int{}
	ftraceAsm := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("bad JSON %q: %v", line, err)
		}
		for _, k := range []string{"arch", "policy", "addr", "func", "off", "len", "bytes", "asm", "verdict", "reasons", "details", "optimizable"} {
			if _, ok := rec[k]; !ok {
				t.Fatalf("record lacks %q: %s", k, line)
			}
		}
		v := rec["verdict"].(string)
		if _, ok := rec["errno"]; ok != (v == "reject") {
			t.Errorf("errno present %v with verdict %s: %s", ok, v, line)
		}
		verdicts[v]++
		if v == "ftrace" {
			if !strings.HasPrefix(rec["bytes"].(string), "e8 ") {
				t.Errorf("ftrace site is not a call: %s", line)
			}
			ftraceAsm++
		}
		if v == "reject" && rec["errno"] == "" {
			t.Errorf("reject without errno: %s", line)
		}
	}
	for _, v := range []string{"ftrace", "emulate", "singlestep", "reject"} {
		if verdicts[v] == 0 {
			t.Errorf("no %s verdict in the demo audit: %v", v, verdicts)
		}
	}
	// Every traced function of demo.c has one fentry site (objdump shows
	// `call <__fentry__>` in each); the notrace ones (untraced, __fentry__) none.
	od, err := exec.Command("objdump", "-d", "internal/demo/demo.elf").Output()
	if err != nil {
		od, err = exec.Command("objdump", "-d", "../demo/demo.elf").Output()
	}
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, l := range strings.Split(string(od), "\n") {
		if strings.Contains(l, "call") && strings.HasSuffix(l, "<__fentry__>") {
			want++
		}
	}
	if ftraceAsm != want || want == 0 {
		t.Fatalf("ftrace sites: kboost %d, objdump shows %d calls to __fentry__", ftraceAsm, want)
	}
}
