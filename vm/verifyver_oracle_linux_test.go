//go:build linux

package vm

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
)

// verifyVersionCases are the Debian kernels of the versions kboost models
// after 6.1, each booted by TestOracleVerifyVersions: the newest package of
// the version (kimage.FetchDebianKernelVersion) for amd64 and arm64.
var verifyVersionCases = []struct {
	version  string
	verifier *Verifier
	policy   string // the policy the booted kernel's release must pick
	uprobes  uprobeGuestArch
}{
	{"6.12", AMD64Verifier, "linux-6.12", uprobeAMD64},
	{"7.2", AMD64Verifier, "linux-7.2", uprobeAMD64},
	{"6.12", ARM64Verifier, "linux-6.12-arm64", uprobeARM64},
	{"7.2", ARM64Verifier, "linux-7.2-arm64", uprobeARM64},
}

// TestOracleVerifyVersions boots Debian's 6.12 and 7.2 kernels (amd64 and
// arm64) under QEMU and compares, probe by probe, what each kernel's kprobes
// do at every instruction boundary (and a few non-boundaries) of a sample of
// KBOOST_VERIFY_SAMPLE functions (default 300) with kboost's predictions
// under the policy the kernel's own release picks: errno, the probed address,
// [FTRACE], [OPTIMIZED], the kernel's slot bytes and (amd64) the optprobe
// detour buffers read from /proc/kcore. Every field must agree on every
// probe; nothing is excluded. In the same boot, after the verification, the
// uprobe-trial step probes uprobe's corpus in the guest, and every site must
// agree with the uprobes model of the release (checkUprobeReport; amd64
// guests get QEMU's max CPU, the corpus's AVX sites need it). The arm64
// records are cached with the uprobe-trial report (KBOOST_NOCACHE=1 boots
// again) and predicted and judged anew.
//
// An amd64 kernel registers each probe in a few milliseconds under TCG, so
// there the test probes at most KBOOST_VERIFY_BOUNDARIES instruction
// boundaries per function (default 10, spread over the function from its
// first instruction; 0: all of them, as `kboost vm verify` does by default).
func TestOracleVerifyVersions(t *testing.T) {
	oracleGate(t)
	n := verifySample()
	bounds := 10
	if s := os.Getenv("KBOOST_VERIFY_BOUNDARIES"); s != "" {
		bounds, _ = strconv.Atoi(s)
	}
	for _, tc := range verifyVersionCases {
		t.Run(tc.version+"/"+tc.verifier.Arch.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
			defer cancel()
			start := time.Now()
			deb, err := fetchVersion(ctx, tc.verifier, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			corpus := buildUprobeCorpus(t, tc.uprobes, t.TempDir())
			req := VerifyRequest{Deb: deb, Sample: n, Seed: 1, NoCache: tc.verifier.Cached && os.Getenv("KBOOST_NOCACHE") == "1",
				Uprobes: corpus.request(), VM: Config{QEMUArgs: tc.uprobes.qemu}}
			if tc.verifier.Spacing {
				req.Boundaries = bounds
			}
			o, err := tc.verifier.Verify(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := o.WriteTable(&buf); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%v, record %s)\n%s", deb, time.Since(start).Round(time.Second), cachedOr(o.Cached), buf.String())
			checkVersionOutcome(t, o, n, tc.version, tc.policy)
			checkUprobeReport(t, corpus, o.Uprobes, tc.version)
		})
	}
}

func cachedOr(c string) string {
	if c == "" {
		return "booted"
	}
	return "cached " + c
}

// checkVersionOutcome asserts what TestOracleVerifyVersions requires of one
// kernel: its release is of version, it picked policy, at least n functions
// were verified, every probe ran and agrees on every compared field, and the
// fields that need the kernel to have done something (addresses, slots,
// detour buffers where the kernel optimizes) were compared at all.
func checkVersionOutcome(t *testing.T, o *VerifyOutcome, n int, version, policy string) {
	t.Helper()
	s := o.Summary
	if !strings.HasPrefix(o.Release, version+".") {
		t.Errorf("booted release %q, want %s.*", o.Release, version)
	}
	if o.Policy != policy {
		t.Errorf("policy %q, want %q (picked by the release)", o.Policy, policy)
	}
	if s.Functions < n {
		t.Errorf("%d functions verified, want at least %d", s.Functions, n)
	}
	if s.NotRun > 0 {
		t.Errorf("%d probes not run", s.NotRun)
	}
	for _, f := range o.Fields {
		if s.Disagree[f] > 0 {
			t.Errorf("%s: %d of %d probes disagree", f, s.Disagree[f], s.Agree[f]+s.Disagree[f])
		}
	}
	if s.Probes == 0 || s.AllAgree != s.Probes {
		t.Errorf("%d of %d probes agree on every field", s.AllAgree, s.Probes)
	}
	need := []string{"errno", "addr", "ftrace", "slot"}
	if o.Verifier == AMD64Verifier {
		need = append(need, "optimized", "optslot")
	}
	for _, f := range need {
		if s.Agree[f] == 0 {
			t.Errorf("%s: no probe compared", f)
		}
	}
}

// fetchVersion fetches the newest Debian package of version for the
// verifier's architecture (its DebianMeta's flavour).
func fetchVersion(ctx context.Context, v *Verifier, version string) (string, error) {
	return kimage.FetchDebianKernelVersion(ctx, v.DebianMeta, version)
}
