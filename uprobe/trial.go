package uprobe

import (
	"fmt"
	"slices"
	"strings"
)

// TrialResult is what the kernel did with one probe of a Trial.
type TrialResult struct {
	Errno    string   `json:"errno,omitempty"` // refused: the errno's name
	Readback Readback `json:"readback"`
	Done     string   `json:"done,omitempty"` // the program's done line
	Exit     string   `json:"exit,omitempty"` // how the program ended, when not cleanly
	Stderr   string   `json:"stderr,omitempty"`
	Hits     uint64   `json:"hits"`
	Opened   bool     `json:"opened"` // the perf event was opened
}

// Died reports whether the program ended before its done line.
func (r *TrialResult) Died() bool { return r.Exit != "" && r.Done == "" }

// Outcome is what the kernel did, in the words TrialExpect uses: "refused
// ERRNO"; for a point that was not run "accepted" (int3 written) or
// "accepted, int3 not written"; "died: HOW"; else the path the site's bytes
// and the maps show (Readback.Observed).
func (r *TrialResult) Outcome(norun bool) string {
	switch {
	case r.Errno != "":
		return "refused " + r.Errno
	case norun && r.Readback.Int3:
		return "accepted"
	case norun:
		return "accepted, int3 not written"
	case r.Died():
		return "died: " + r.Exit
	}
	return r.Readback.Observed()
}

// TrialExpect is what kboost's verdict s predicts a Trial shows, in Outcome's
// words, and the hits it predicts for calls calls (norun: the point is only
// installed). Hazards that kill the process say how it dies (measured on
// 6.18); a rep-prefixed string instruction is hit once per iteration (the
// corpus's iterate reps times).
func TrialExpect(s *Site, norun bool, calls, reps uint64) (string, uint64) {
	want := s.Path.String()
	if s.Path == PathRefused {
		want += " " + s.Errno
	}
	for _, h := range s.Hazards {
		switch h {
		case RulePushfTF.ID:
			want = "died: signal: trace/breakpoint trap"
		case RuleSyscallXOL.ID:
			want = "died: signal: segmentation fault"
		}
	}
	hits := calls
	switch {
	case s.Path == PathRefused:
		hits = 0
	case norun:
		want, hits = "accepted", 0
	case strings.HasPrefix(want, "died"):
		hits = 1 // the first hit is what kills it
	case slices.Contains(s.Reasons, RuleRepHits.ID):
		hits *= reps
	}
	return want, hits
}

// TrialAgrees reports whether a trial shows what kboost predicted, and says
// how when not.
func TrialAgrees(s *Site, r *TrialResult, norun bool, calls, reps uint64) (bool, string) {
	want, hits := TrialExpect(s, norun, calls, reps)
	got := r.Outcome(norun)
	if got == want && r.Hits == hits {
		return true, ""
	}
	return false, fmt.Sprintf("kboost %s %v, kernel %s, %d hits of %d, site %s", want, s.Reasons, got, r.Hits, hits, SpacedHex(r.Readback.Site))
}
