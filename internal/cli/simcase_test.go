//go:build linux

package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// simCase is a kboost command and the strings its output must contain.
type simCase struct {
	args []string
	want []string
}

// runSimCases runs every case: each must exit 0 (1 when it expects a
// REFUTED verdict) and print every wanted string; check, when not nil,
// looks at each output too.
func runSimCases(t *testing.T, cases []simCase, check func(args []string, out string)) {
	t.Helper()
	for _, tc := range cases {
		out, stderr, code := run(t, tc.args...)
		want := ExitOK
		if slices.ContainsFunc(tc.want, func(w string) bool { return strings.Contains(w, "REFUTED") }) {
			want = ExitFailure
		}
		if code != want {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, code, want, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
		if check != nil {
			check(tc.args, out)
		}
	}
}

// runFuzzJSON runs a `kboost fuzz ... --json` command and returns its
// summary object; a non-zero exit or output that is not one JSON object
// fails the test.
func runFuzzJSON(t *testing.T, args ...string) (sum map[string]any, out string) {
	t.Helper()
	out, stderr, code := run(t, args...)
	if code != 0 {
		t.Fatalf("fuzz: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("fuzz --json: %v\n%s", err, out)
	}
	return sum, out
}
