//go:build linux

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/schemacheck"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
)

// vmVerifySample is the oracle tests' sample size (KBOOST_VERIFY_SAMPLE,
// default 300, as package vm's tests): the same request finds the kernel
// records those tests cached.
func vmVerifySample() int {
	n := 300
	if s := os.Getenv("KBOOST_VERIFY_SAMPLE"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	return n
}

// fixedVerifyCase is one `kboost vm verify --arch A` run and the vm package's
// computation of the same run.
type fixedVerifyCase struct {
	arch   string
	fields []string
	// compute runs the verification through package vm and returns the
	// summary and the comparison of one record.
	compute func(ctx context.Context, deb string, n int) (vm.VerifySummary, func(*guest.VerifyRecord) map[string]bool, error)
	meta    string
}

var fixedVerifyCases = []fixedVerifyCase{
	{arch: "arm64", fields: guest.ARM64Fields, meta: "linux-image-arm64",
		compute: func(ctx context.Context, deb string, n int) (vm.VerifySummary, func(*guest.VerifyRecord) map[string]bool, error) {
			v, err := vm.VerifyARM64(ctx, vm.ARM64VerifyConfig{Deb: deb, Args: guest.ARM64VerifyArgs{Sample: n, Seed: 1}})
			if err != nil {
				return vm.VerifySummary{}, nil, err
			}
			s := v.Summarize()
			return vm.FixedSummary(&s), guest.CompareARM64, nil
		}},
	{arch: "arm", fields: guest.ARMFields, meta: "linux-image-armmp",
		compute: func(ctx context.Context, deb string, n int) (vm.VerifySummary, func(*guest.VerifyRecord) map[string]bool, error) {
			v, err := vm.VerifyARM(ctx, vm.ARMVerifyConfig{Deb: deb, Args: guest.ARM64VerifyArgs{Sample: n, Seed: 1}})
			if err != nil {
				return vm.VerifySummary{}, nil, err
			}
			s := v.Summarize()
			return vm.FixedSummary(&s), v.Compare, nil
		}},
}

// TestOracleVMVerifyFixed runs `kboost vm verify --arch arm64` and `--arch
// arm` (the same functions as package vm's TestOracleVerifyARM64 and
// TestOracleVerifyARM, so their cached kernel records are used; a missing
// record boots the kernel) as text and as JSON, and checks the output
// against what package vm computes for the same run: the summary object and
// every row of the agreement table equal vm's counts, the JSON records
// agree field by field with the comparison recomputed from each record, and
// the exit status is 0 exactly when every probe agrees.
func TestOracleVMVerifyFixed(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's arm64 and armmp kernels; boots them under QEMU when the records are not cached)")
	}
	n := vmVerifySample()
	for _, tc := range fixedVerifyCases {
		t.Run(tc.arch, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
			defer cancel()
			deb, err := kimage.FetchDebianKernel(ctx, tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			want, compare, err := tc.compute(ctx, deb, n)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"vm", "verify", "--arch", tc.arch, "--sample", strconv.Itoa(n)}
			out, errOut, code := run(t, append(args, "--json")...)
			wantCode := 0
			if want.AllAgree != want.Probes {
				wantCode = 1
			}
			if code != wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, wantCode, errOut)
			}
			if err := schemacheck.Validate("vm-verify", []byte(out)); err != nil {
				t.Errorf("%.2000v", err)
			}
			// JSON: one record per probe, then the summary.
			var sum struct {
				Summary vm.VerifySummary `json:"summary"`
				Arch    string           `json:"arch"`
				Policy  string           `json:"policy"`
			}
			recs, agree := 0, map[string]int{}
			sc := bufio.NewScanner(strings.NewReader(out))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				line := sc.Bytes()
				if strings.HasPrefix(string(line), `{"summary"`) {
					if err := json.Unmarshal(line, &sum); err != nil {
						t.Fatal(err)
					}
					continue
				}
				r, err := vm.ParseRecordJSON(line)
				if err != nil {
					t.Fatalf("record %d: %v", recs, err)
				}
				recs++
				for f, ok := range compare(&r) {
					if ok {
						agree[f]++
					}
				}
			}
			if sum.Summary.Probes == 0 {
				t.Fatalf("no summary object in the JSON output:\n%.2000s", out)
			}
			// The JSON carries the summary's exported counts; the outcome
			// tables (json:"-") feed the text table only, so compare what
			// the JSON form of vm's own summary holds.
			var wantJSON vm.VerifySummary
			if b, err := json.Marshal(want); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &wantJSON); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(sum.Summary) != fmt.Sprint(wantJSON) {
				t.Errorf("summary %+v, vm computes %+v", sum.Summary, wantJSON)
			}
			if recs != want.Probes {
				t.Errorf("%d JSON records, vm counts %d probes", recs, want.Probes)
			}
			if fmt.Sprint(agree) != fmt.Sprint(want.Agree) {
				t.Errorf("records agree per field %v, vm %v", agree, want.Agree)
			}
			if sum.Arch != tc.arch || sum.Policy == "" {
				t.Errorf("summary arch %q policy %q", sum.Arch, sum.Policy)
			}
			// Text: the agreement table's rows.
			out, errOut, code = run(t, args...)
			if code != wantCode {
				t.Fatalf("text: exit %d, want %d; stderr:\n%s", code, wantCode, errOut)
			}
			rows := map[string][]string{}
			for _, l := range strings.Split(out, "\n") {
				if f := strings.Fields(l); len(f) == 4 {
					rows[f[0]] = f[1:]
				} else if len(f) == 5 && f[0] == "all" {
					rows["all"] = f[2:]
				}
			}
			for _, f := range tc.fields {
				w := fmt.Sprint([]string{strconv.Itoa(want.Agree[f] + want.Disagree[f]), strconv.Itoa(want.Agree[f]), strconv.Itoa(want.Disagree[f])})
				if fmt.Sprint(rows[f]) != w {
					t.Errorf("table row %s: %v, vm %s", f, rows[f], w)
				}
			}
			if w := fmt.Sprint([]string{strconv.Itoa(want.Probes), strconv.Itoa(want.AllAgree), strconv.Itoa(want.Probes - want.AllAgree)}); fmt.Sprint(rows["all"]) != w {
				t.Errorf("table row all fields: %v, vm %s", rows["all"], w)
			}
			t.Logf("kboost vm verify --arch %s: %d functions, %d probes, all fields agree on %d; per field %v", tc.arch, want.Functions, want.Probes, want.AllAgree, want.Agree)
			if !strings.Contains(errOut, "from the cache") {
				t.Logf("stderr: %s", errOut)
			}
		})
	}
}
