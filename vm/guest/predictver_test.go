package guest

import (
	"strings"
	"testing"
)

// The policy of a recorded arm64 kernel follows from its release (Debian's
// uname -r strings) unless one is named.
func TestPredictFixedReportByRelease(t *testing.T) {
	for _, c := range []struct{ release, policy, want, note string }{
		{"6.1.0-57-arm64", "", "linux-6.1-arm64", "policy linux-6.1-arm64"},
		{"6.12.117+deb12-arm64", "", "linux-6.12-arm64", "policy linux-6.12-arm64"},
		{"7.2.13+deb14-arm64", "", "linux-7.2-arm64", "policy linux-7.2-arm64"},
		{"6.18.4-arm64", "", "linux-6.12-arm64", "not modelled"},
		{"", "", "linux-6.1-arm64", ""},
		{"7.2.13+deb14-arm64", "linux-6.1-arm64", "linux-6.1-arm64", ""},
	} {
		rep := &ARM64Report{VerifyReport: VerifyReport{Release: c.release, Notes: []string{predictionNote + " stale"}}}
		PredictARM64Report(rep, c.policy, nil, nil)
		if rep.Policy != c.want || !rep.Predicted {
			t.Errorf("%q --policy %q: policy %q (predicted %v), want %s", c.release, c.policy, rep.Policy, rep.Predicted, c.want)
		}
		notes := strings.Join(rep.Notes, "\n")
		if strings.Contains(notes, "stale") || (c.note != "" && !strings.Contains(notes, c.note)) {
			t.Errorf("%q: notes %q, want one saying %q", c.release, notes, c.note)
		}
	}
}
