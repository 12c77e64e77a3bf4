//go:build linux && amd64

package tracer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHelperEnvRoundTrip: the command gets the environment it was given,
// whatever GODEBUG it holds, after the helper ran with its own.
func TestHelperEnvRoundTrip(t *testing.T) {
	for _, env := range [][]string{
		{"A=1", "B=2"},
		{"GODEBUG=gctrace=1", "A=1"},
		{"A=1", "GODEBUG="},
		{"GODEBUG=x=1", "A=1", "GODEBUG=y=2"},
		{},
	} {
		h := helperEnv(env)
		godebug := ""
		for _, e := range h {
			if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
				godebug = v
				break // the first wins (as in the Go runtime)
			}
		}
		if !strings.HasSuffix(godebug, noPreempt) {
			t.Errorf("%q: the helper's GODEBUG is %q, want it to end in %s", env, godebug, noPreempt)
		}
		if d := cmp.Diff(env, commandEnv(h)); d != "" {
			t.Errorf("%q: the command's environment (+) is not the one given (-):\n%s", env, d)
		}
	}
}

// TestCommandEnv: a started command gets the environment it was given
// (env prints it: the oracle), with and without a GODEBUG of its own,
// though its helper ran with another GODEBUG.
func TestCommandEnv(t *testing.T) {
	for _, env := range [][]string{
		{"GODEBUG=gctrace=0", "KB_TEST=1", "PATH=/usr/bin:/bin"},
		{"KB_TEST=1", "PATH=/usr/bin:/bin"},
	} {
		out := filepath.Join(t.TempDir(), "env")
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := New(Config{Argv: []string{"/usr/bin/env"}, Env: env, Stdio: [3]*os.File{nil, f, nil}, UseSeccomp: true,
			Filter: map[uint32]map[uint64]bool{}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tr.Run(nopHandler{})
		f.Close()
		if err != nil || res.Status != 0 {
			t.Fatalf("%q: %v, status %d", env, err, res.Status)
		}
		b, _ := os.ReadFile(out)
		if got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); !cmp.Equal(got, env) {
			t.Errorf("env printed %q, want %q", got, env)
		}
	}
}
