//go:build linux

package guest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The CLI steps run a program and report its exit status and output as they
// are; a watch is stopped by SIGINT, which the program's own handler takes.
// A shell script stands in for kboost here.
func TestRunCLIProgram(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kboost")
	script := `#!/bin/sh
if [ "$1" = watch ]; then
	trap 'echo interrupted; exit 130' INT
	echo "watching; Ctrl-C stops"
	while :; do sleep 0.05; done
fi
echo "out $*"
echo err >&2
exit 3
`
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	old := kboostBin
	kboostBin = bin
	defer func() { kboostBin = old }()

	r := runCLI("probe", "list")
	if r.Exit != 3 || r.Stdout != "out probe list\n" || r.Stderr != "err\n" {
		t.Errorf("runCLI: exit %d, stdout %q, stderr %q; want 3, \"out probe list\\n\", \"err\\n\"", r.Exit, r.Stdout, r.Stderr)
	}
	w, err := watch([]string{"watch"})
	if err != nil {
		t.Fatal(err)
	}
	if w.Exit != 130 || !strings.HasSuffix(w.Stdout, "interrupted\n") {
		t.Errorf("watch: exit %d, stdout %q; want 130 and the handler's line", w.Exit, w.Stdout)
	}
	kboostBin = filepath.Join(dir, "missing")
	if r := runCLI("version"); r.Exit != -1 || !strings.Contains(r.Stderr, "no such file") {
		t.Errorf("missing binary: exit %d, stderr %q; want -1 and the cause", r.Exit, r.Stderr)
	}
}
