//go:build linux

package vm

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// TestOracleVerifyDebian boots the current Debian amd64 kernel and compares
// kboost's linux-6.1 predictions with what the kernel does for every instruction
// boundary (and a sample of non-boundaries) of a sample of functions. The table
// and every disagreement are printed in the log. KBOOST_VERIFY_SAMPLE overrides
// the number of functions (default 300). The record is Verify's cache entry
// when the same package and guest made one (the log says which; cli's
// TestOracleAuditX86Boot reads the same entry); KBOOST_NOCACHE=1 boots again.
func TestOracleVerifyDebian(t *testing.T) {
	oracleGate(t)
	n := verifySample()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	v, err := Verify(ctx, VerifyConfig{Deb: deb, Args: guest.VerifyArgs{Sample: n, Seed: 1}, NoCache: os.Getenv("KBOOST_NOCACHE") == "1"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := v.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("record %s (%v)\n%s", cachedOr(v.Cached), time.Since(start).Round(time.Millisecond), buf.String())
	s := v.Summary
	if s.Functions < n {
		t.Errorf("%d functions verified, want %d", s.Functions, n)
	}
	if v.Report.Leftover != "" {
		t.Errorf("kprobes left behind:\n%s", v.Report.Leftover)
	}
	for _, f := range guest.VerifyFields {
		if s.Disagree[f] > 0 {
			t.Errorf("%s: %d disagreements", f, s.Disagree[f])
		}
	}
}

// verifySample is the number of functions the verification tests sample:
// KBOOST_VERIFY_SAMPLE, else 300.
func verifySample() int {
	n := 300
	if s := os.Getenv("KBOOST_VERIFY_SAMPLE"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	return n
}
