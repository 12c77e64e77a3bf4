package cli

import (
	"io"
	"strings"
	"testing"
)

// TestVMVerifyBadRequests: requests an architecture cannot run get exit 2
// and one line naming the cause, before anything is fetched or booted.
func TestVMVerifyBadRequests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "mips", "--sample", "1"}, "want x86-64, arm64 or arm"},
		{[]string{"--arch", "i386", "--sample", "1"}, "no verification scenario for 386"},
		{[]string{"--arch", "arm64"}, "choose functions"},
		{[]string{"--arch", "arm64", "--kernel", "boost", "--sample", "1"}, "no boost-capable arm64 kernel"},
		{[]string{"--arch", "arm", "--spacing", "8", "--sample", "1"}, "--spacing applies to x86-64 only"},
		{[]string{"--no-cache", "--kernel", "boost", "--sample", "1"}, "the boost kernel's records are not cached"},
		{[]string{"--kernel", "nightly", "--sample", "1"}, `--kernel "nightly"`},
	} {
		_, errOut, code := run(t, append([]string{"vm", "verify"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestDisagreeError(t *testing.T) {
	if got := (&DisagreeError{Probes: 200, Agree: 199}).Error(); !strings.Contains(got, "1 of 200") || !strings.Contains(got, "99.50%") {
		t.Errorf("%q", got)
	}
	if got := (&DisagreeError{}).Error(); !strings.Contains(got, "no probe ran") {
		t.Errorf("%q", got)
	}
}

// TestConsoleProgress: on a terminal, kernel lines show "booting" until the
// guest speaks, then the guest's latest line; off a terminal, nothing.
func TestConsoleProgress(t *testing.T) {
	var buf strings.Builder
	p := newConsoleProgress(&buf, "vm verify arm")
	p.on = true
	io.WriteString(p, "[    0.000000] Booting Linux\n[    0.1] more\nkboost-guest: kboost-verify-arm: round 1: 2/4 functions\n[ 9.0] late kernel line\n")
	out := buf.String()
	if strings.Count(out, "booting") != 2 || !strings.HasSuffix(out, "round 1: 2/4 functions") {
		t.Errorf("progress %q", out)
	}
	buf.Reset()
	p = newConsoleProgress(&buf, "vm verify arm")
	io.WriteString(p, "kboost-guest: round 1\n")
	p.finish()
	if buf.Len() != 0 {
		t.Errorf("off a terminal: %q", buf.String())
	}
}
