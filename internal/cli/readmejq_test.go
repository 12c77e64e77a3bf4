//go:build linux

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestREADMEJqExamples runs every example of README.md's "JSON output"
// section — `$ kboost ARGS | jq JQARGS` followed by the output it shows —
// through kboost and jq, and compares the output with the README's.
func TestREADMEJqExamples(t *testing.T) {
	jq, err := exec.LookPath("jq")
	if err != nil {
		t.Fatal("jq is needed (scripts/setup.sh installs it: apt-get install jq)")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	sec := string(b)
	i := strings.Index(sec, "\n## JSON output\n")
	if i < 0 {
		t.Fatal("README.md has no JSON output section")
	}
	sec = sec[i+1:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	lines := strings.Split(sec, "\n")
	n := 0
	for k := 0; k < len(lines); k++ {
		cmdline, ok := strings.CutPrefix(lines[k], "    $ kboost ")
		if !ok {
			continue
		}
		var want []string
		for k+1 < len(lines) && strings.HasPrefix(lines[k+1], "    ") && !strings.HasPrefix(lines[k+1], "    $ ") {
			k++
			want = append(want, strings.TrimPrefix(lines[k], "    "))
		}
		kargs, jqargs, ok := strings.Cut(cmdline, " | jq ")
		if !ok {
			t.Errorf("%q: not 'kboost ARGS | jq ...'", cmdline)
			continue
		}
		n++
		out, stderr, code := run(t, shellWords(t, kargs)...)
		if code != 0 {
			t.Errorf("kboost %s: exit %d: %s", kargs, code, stderr)
			continue
		}
		c := exec.Command(jq, shellWords(t, jqargs)...)
		c.Stdin = strings.NewReader(out)
		var jout bytes.Buffer
		c.Stdout, c.Stderr = &jout, &jout
		if err := c.Run(); err != nil {
			t.Errorf("jq %s: %v: %s", jqargs, err, jout.String())
			continue
		}
		if got := strings.TrimRight(jout.String(), "\n"); got != strings.Join(want, "\n") {
			t.Errorf("kboost %s | jq %s:\ngot\n%s\nREADME shows\n%s", kargs, jqargs, got, strings.Join(want, "\n"))
		}
	}
	if n < 8 {
		t.Errorf("%d jq examples, want one per main command (decode, audit, explain, sim, fuzz, opcodes, policies)", n)
	}
}

// shellWords splits a command line as sh does for the README's examples:
// blanks separate words, single quotes keep everything up to the next one.
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	in, have := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			in, have = !in, true
		case r == ' ' && !in:
			if have {
				words = append(words, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if in {
		t.Fatalf("%q: unterminated quote", s)
	}
	if have {
		words = append(words, cur.String())
	}
	return words
}
