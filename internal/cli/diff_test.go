package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
)

// offValue reads an offset written as a number or a "0x..." string.
func offValue(t *testing.T, raw json.RawMessage) uint64 {
	t.Helper()
	s := strings.Trim(string(raw), `"`)
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), map[bool]int{true: 16, false: 10}[strings.HasPrefix(s, "0x")], 64)
	if err != nil {
		t.Fatalf("offset %s: %v", raw, err)
	}
	return v
}

// auditOutcomes runs `kboost audit --json` and returns each point's verdict,
// errno and optimizable, keyed func+off.
func auditOutcomes(t *testing.T, args ...string) map[string]string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append([]string{"audit", "--json"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("audit %v: exit %d: %s", args, code, errb.String())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Func        string
			Off         json.RawMessage
			Verdict     string
			Errno       string
			Optimizable bool
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		m[r.Func+"+"+strconv.FormatUint(offValue(t, r.Off), 16)] = r.Verdict + " " + r.Errno + " " + strconv.FormatBool(r.Optimizable)
	}
	return m
}

// Two policies on one file: diff lists exactly the points whose verdict,
// errno or optimizability differ between two audits of it, with both
// outcomes as the audits give them.
// With KBOOST_ORACLE=1 also on the vfs_* functions of Debian's amd64 and
// arm64 kernel packages.
func TestDiffPoliciesEqualAudits(t *testing.T) {
	type tcase struct {
		pols [2]string
		file []string // file and its flags, common to the audits and the diff
	}
	cases := []tcase{
		{[2]string{"linux-6.1", "linux-6.12"}, nil},
		{[2]string{"linux-6.12", "linux-7.2"}, nil},
		{[2]string{"linux-6.1", "uprobes-x86"}, nil},
	}
	if os.Getenv("KBOOST_ORACLE") == "1" {
		for _, k := range []struct {
			meta string
			pols [2]string
		}{
			{"linux-image-amd64", [2]string{"linux-6.1", "linux-6.12"}},
			{"linux-image-arm64", [2]string{"linux-6.1-arm64", "linux-7.2-arm64"}},
		} {
			deb, err := kimage.FetchDebianKernel(context.Background(), k.meta)
			if err != nil {
				t.Fatal(err)
			}
			ks, err := vm.DebianKallsyms(context.Background(), k.meta)
			if err != nil {
				t.Fatal(err)
			}
			cases = append(cases, tcase{k.pols, []string{deb, "--symbols", ks, "--func", "vfs_*"}})
		}
	}
	for _, c := range cases {
		tc := c.pols
		a := auditOutcomes(t, append([]string{"--policy", tc[0]}, c.file...)...)
		b := auditOutcomes(t, append([]string{"--policy", tc[1]}, c.file...)...)
		want := map[string]bool{}
		for k, v := range a {
			if b[k] != v {
				want[k] = true
			}
		}
		var out, errb bytes.Buffer
		if code := Main(append([]string{"diff", "--json", "--policy", tc[0] + "," + tc[1]}, c.file...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("diff %v: exit %d: %s", tc, code, errb.String())
		}
		got := map[string]bool{}
		var sum struct {
			Record  string
			Matched int
			Changed int
		}
		sc := bufio.NewScanner(&out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r struct {
				Record string
				Func   string
				A, B   struct {
					Off         json.RawMessage
					Verdict     string
					Errno       string
					Optimizable bool
				}
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if r.Record == "summary" {
				json.Unmarshal(sc.Bytes(), &sum)
				continue
			}
			k := r.Func + "+" + strconv.FormatUint(offValue(t, r.A.Off), 16)
			got[k] = true
			if oa, ob := r.A.Verdict+" "+r.A.Errno+" "+strconv.FormatBool(r.A.Optimizable), r.B.Verdict+" "+r.B.Errno+" "+strconv.FormatBool(r.B.Optimizable); oa != a[k] || ob != b[k] {
				t.Errorf("%v %s: diff says %q -> %q, the audits %q -> %q", tc, k, oa, ob, a[k], b[k])
			}
		}
		for k := range want {
			if !got[k] {
				t.Errorf("%v: %s changed between the audits (%q -> %q), not in the diff", tc, k, a[k], b[k])
			}
		}
		for k := range got {
			if !want[k] {
				t.Errorf("%v: diff lists %s, unchanged between the audits", tc, k)
			}
		}
		if sum.Record != "summary" || sum.Matched != len(a) || sum.Changed != len(want) {
			t.Errorf("%v: summary %+v, want %d matched, %d changed", tc, sum, len(a), len(want))
		}
		t.Logf("%s -> %s: %d of %d points changed", tc[0], tc[1], len(want), len(a))
	}
}

func TestDiffUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"diff"}, "give two policies"},
		{[]string{"diff", "--policy", "a,b,c"}, "want one value or two"},
		{[]string{"diff", "--policy", "linux-6.1,linux-6.12", "--func", "main+4"}, "whole functions"},
	} {
		var out, errb bytes.Buffer
		if code := Main(tc.args, strings.NewReader(""), &out, &errb); code != ExitUsage || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q (want %d, %q)", tc.args, code, errb.String(), ExitUsage, tc.want)
		}
	}
}
