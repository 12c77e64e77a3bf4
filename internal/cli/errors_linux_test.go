package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/loader"
)

// TestErrorsNameTheCause: each mistake or missing kernel feature gets one
// line that names it, and the documented exit status: a missing file, a
// directory, a file of another arch (2: bad input); a kernel without
// CONFIG_KPROBES, a tracefs mounted without kprobe_events, no tracefs (1).
// The kernel's view comes from fixtures (loader.KallsymsPath,
// loader.TracefsDirs), so the causes do not depend on this machine.
func TestErrorsNameTheCause(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join(dir, "f.o")
	if err := os.WriteFile(elf, oneFuncELF(t, decode.X86_64, []byte{0x90, 0xc3}), 0o644); err != nil {
		t.Fatal(err)
	}
	noKprobes := filepath.Join(dir, "kallsyms-nokprobes")
	withKprobes := filepath.Join(dir, "kallsyms")
	os.WriteFile(noKprobes, []byte("ffffffff81000000 T _stext\nffffffff81001000 T vfs_read\n"), 0o644)
	os.WriteFile(withKprobes, []byte("ffffffff81000000 T _stext\nffffffff811c3e30 T register_kprobe\n"), 0o644)
	mounted := filepath.Join(dir, "tracing")
	os.Mkdir(mounted, 0o755)
	os.WriteFile(filepath.Join(mounted, "available_events"), nil, 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	saveK, saveT := loader.KallsymsPath, loader.TracefsDirs
	t.Cleanup(func() { loader.KallsymsPath, loader.TracefsDirs = saveK, saveT })

	type tc struct {
		args          []string
		kallsyms      string
		tracefs       []string
		code          int
		want, wantNot string
		root          bool // the cause is found after the root check
	}
	cases := []tc{
		{args: []string{"decode", filepath.Join(dir, "hello-arm")}, code: ExitUsage, want: "no such file", wantNot: "hex digits"},
		{args: []string{"audit", filepath.Join(dir, "hello-arm")}, code: ExitUsage, want: "no such file"},
		{args: []string{"decode", dir}, code: ExitUsage, want: "is a directory", wantNot: "neither"},
		{args: []string{"audit", dir}, code: ExitUsage, want: "is a directory"},
		{args: []string{"decode", "--arch", "arm64", elf}, code: ExitUsage, want: "holds x86-64 code"},
		{args: []string{"audit", "--symbols", filepath.Join(dir, "none")}, code: ExitUsage, want: "--symbols " + filepath.Join(dir, "none") + ": no such file"},
		{args: []string{"audit", "--config", dir}, code: ExitUsage, want: "--config " + dir + " is a directory"},
		{args: []string{"merge", filepath.Join(dir, "none")}, code: ExitUsage, want: "no such file"},
		{args: []string{"fuzz", "--resume", dir}, code: ExitUsage, want: "is a directory"},
		{args: []string{"uprobe", "list", dir}, code: ExitUsage, want: "is a directory"},
		{args: []string{"uprobe", "audit", filepath.Join(dir, "none") + ":main"}, code: ExitUsage, want: "no such file"},
		{args: []string{"monitor", "--policy-file", filepath.Join(dir, "none"), "--", "true"}, code: ExitUsage, want: "--policy-file"},
		{args: []string{"audit", "--policy", "linux-6.1-arm64", elf}, code: ExitUsage, want: "does not model x86-64"},
		{args: []string{"probe", "list"}, kallsyms: noKprobes, code: ExitFailure, want: "CONFIG_KPROBES", wantNot: "PROC_KCORE"},
		{args: []string{"probe", "add", "vfs_read"}, kallsyms: noKprobes, code: ExitFailure, want: "CONFIG_KPROBES", wantNot: "PROC_KCORE"},
		{args: []string{"probe", "list"}, kallsyms: withKprobes, tracefs: []string{mounted}, code: ExitFailure, want: "no kprobe_events", wantNot: "mount", root: true},
		{args: []string{"probe", "list"}, kallsyms: withKprobes, tracefs: []string{empty}, code: ExitFailure, want: "tracefs is not mounted", root: true},
	}
	for _, c := range cases {
		if c.root && os.Geteuid() != 0 {
			t.Logf("%v: not root (the root check comes first)", c.args)
			continue
		}
		loader.KallsymsPath, loader.TracefsDirs = saveK, saveT
		if c.kallsyms != "" {
			loader.KallsymsPath = c.kallsyms
		}
		if c.tracefs != nil {
			loader.TracefsDirs = c.tracefs
		}
		_, stderr, code := run(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) || c.wantNot != "" && strings.Contains(stderr, c.wantNot) {
			t.Errorf("%v: exit %d, %q; want exit %d naming %q (not %q)", c.args, code, stderr, c.code, c.want, c.wantNot)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%v: more than one line: %q", c.args, stderr)
		}
	}
}
