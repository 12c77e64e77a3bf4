//go:build linux

package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/uprobe"
)

// TestHelperUprobeWatch is not a test: TestLiveUprobeWatchSignals runs it as
// `kboost uprobe watch` in a child process.
func TestHelperUprobeWatch(t *testing.T) {
	args := os.Getenv("KBOOST_UPROBE_WATCH_HELPER")
	if args == "" {
		t.Skip("helper process for TestLiveUprobeWatchSignals")
	}
	os.Exit(Main(append([]string{"uprobe", "watch", "--interval", "100ms"}, strings.Fields(args)...), strings.NewReader(""), os.Stdout, os.Stderr))
}

// TestLiveUprobeWatchSignals: SIGINT and SIGKILL of `uprobe watch` (perf PMU;
// and SIGINT of a --tracefs watch) leave nothing in uprobe_events and the
// probed site of a running target as it was, after the site had been
// optimized (a 5-byte NOP turned into a call) while the watch ran. A SIGKILLed
// --tracefs watch leaves its event, and `uprobe sweep` removes it.
func TestLiveUprobeWatchSignals(t *testing.T) {
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 (as root, kernel with uprobes)")
	}
	if _, err := os.Stat("/sys/kernel/tracing/uprobe_events"); err != nil {
		if err := syscall.Mount("nodev", "/sys/kernel/tracing", "tracefs", 0, ""); err != nil {
			t.Fatalf("mount tracefs on /sys/kernel/tracing: %v", err)
		}
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "corpus")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, "../../uprobe/testdata/corpus.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	for _, c := range []struct {
		sig   syscall.Signal
		extra string
	}{{syscall.SIGINT, ""}, {syscall.SIGKILL, ""}, {syscall.SIGINT, "--tracefs"}, {syscall.SIGKILL, "--tracefs"}} {
		name := fmt.Sprintf("%v%s", c.sig, c.extra)
		tg := exec.Command(bin, "nop5", "1000")
		in, _ := tg.StdinPipe()
		outp, _ := tg.StdoutPipe()
		if err := tg.Start(); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(outp)
		if l, _ := rd.ReadString('\n'); l != "ready\n" {
			t.Fatalf("target: %q", l)
		}
		args := bin + ":k_nop5 " + c.extra
		if c.extra == "" {
			args += fmt.Sprintf(" --pid %d", tg.Process.Pid)
		}
		w := exec.Command(os.Args[0], "-test.run=^TestHelperUprobeWatch$")
		w.Env = append(os.Environ(), "KBOOST_UPROBE_WATCH_HELPER="+args)
		var wout bytes.Buffer
		w.Stdout, w.Stderr = &wout, &wout
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(wout.String(), "watching") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		in.Write([]byte{'x'})
		if l, _ := rd.ReadString('\n'); !strings.HasPrefix(l, "done 1000") {
			t.Fatalf("%s: target: %q", name, l)
		}
		b, _ := uprobe.Open(bin)
		fn, _ := b.Func("k_nop5")
		off, _ := b.ExecOffset(fn.Addr)
		b.Close()
		before, err := uprobe.ReadBack(tg.Process.Pid, bin, off, 5)
		if err != nil || !before.Call {
			t.Errorf("%s: site before the signal %s (%v): want the optimized call", name, uprobe.SpacedHex(before.Site), err)
		}
		time.Sleep(250 * time.Millisecond) // a tick with the hits
		w.Process.Signal(c.sig)
		werr := w.Wait()
		if c.sig == syscall.SIGKILL && c.extra == "--tracefs" {
			// A killed tracefs watcher leaves its event (documented): sweep removes it.
			if ev, _ := os.ReadFile("/sys/kernel/tracing/uprobe_events"); !strings.Contains(string(ev), uprobe.UprobeGroup) {
				t.Errorf("%s: uprobe_events %q: want the leftover event", name, ev)
			}
			var out bytes.Buffer
			if code := Main([]string{"uprobe", "sweep"}, strings.NewReader(""), &out, &out); code != 0 || !strings.Contains(out.String(), "removed "+uprobe.UprobeGroup) {
				t.Errorf("%s: sweep: %d %q", name, code, out.String())
			}
		}
		after, err := uprobe.ReadBack(tg.Process.Pid, bin, off, 5)
		if err != nil || uprobe.SpacedHex(after.Site) != "0f 1f 44 00 00" {
			t.Errorf("%s: site after the signal %s (%v): want the NOP back", name, uprobe.SpacedHex(after.Site), err)
		}
		ev, _ := os.ReadFile("/sys/kernel/tracing/uprobe_events")
		if strings.Contains(string(ev), uprobe.UprobeGroup) {
			t.Errorf("%s: uprobe_events still has %q", name, ev)
		}
		if c.sig == syscall.SIGINT {
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != ExitInterrupted || !strings.Contains(wout.String(), "=1000") {
				t.Errorf("%s: watch ended %v, output %q: want exit 130 with 1000 hits counted", name, werr, wout.String())
			}
		}
		in.Close()
		tg.Wait()
		t.Logf("%s: site %s -> %s, uprobe_events clean", name, uprobe.SpacedHex(before.Site), uprobe.SpacedHex(after.Site))
	}
}

// `uprobe bench BIN:SYM%return` on a program that calls step 20000 times:
// the entry and the return probe are hit once per call (the program's own
// count is the oracle), each hit costs CPU time, and the predicted path is
// the audit's. A point without a command after -- is a usage error.
func TestLiveUprobeBenchTarget(t *testing.T) {
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 (as root, kernel with uprobes)")
	}
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "w.c"), filepath.Join(dir, "w")
	prog := "#include <stdio.h>\n__attribute__((noinline)) long step(long x) { return x * 3 + 1; }\n" +
		"int main(void) { long s = 0; for (long i = 0; i < 20000; i++) s += step(i); printf(\"%ld\\n\", s > 0); return 0; }\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"uprobe", "bench", "--json", "--runs", "1", bin + ":step%return"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []uprobe.TargetRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	b, err := uprobe.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k, _ := uprobe.Running()
	site, _, err := uprobe.Check(b, k, uprobe.Request{Symbol: "step"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[0].Probe != "none" || rows[0].Hits != 0 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows[1:] {
		if r.Hits != 20000 || r.NsHit <= 0 || r.Verdict != site.Path.String() {
			t.Errorf("%s: %d hits of 20000 calls, %.1f ns/hit, predicted %s (audit %s)", r.Probe, r.Hits, r.NsHit, r.Verdict, site.Path)
		}
		t.Logf("%s: %s, %d hits, %.1f ns/hit", r.Probe, r.Verdict, r.Hits, r.NsHit)
	}
	errb.Reset()
	if code := Main([]string{"uprobe", "bench", bin + ":step", "extra"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("bench BIN:SYM extra: exit %d, want 2 (%s)", code, errb.String())
	}
}

// `uprobe audit --place cheapest --policy P BIN:0xADDR` moves the point by
// P's costs, as package uprobe's Cheapest does under P (held to each
// version's kernel code and to the running kernel in uprobe's tests): from
// k_redzone's 5-byte NOP, 6.18 (optimized, with the red-zone hazard) moves
// past it, 7.2 (emulated, no hazard) keeps it, 6.12 keeps it single-stepped
// (so is everything after it there, the ret included).
func TestUprobeAuditPlacePolicies(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "corpus")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, "../../uprobe/testdata/corpus.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	b, err := uprobe.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fn, ok := b.Func("k_redzone")
	if !ok {
		t.Fatal("no k_redzone")
	}
	from := fn.Addr + 5
	seen := map[string]bool{}
	for _, model := range []string{"uprobes-6.18", "uprobes-7.2", "uprobes-6.12"} {
		k, err := uprobe.Lookup(model)
		if err != nil {
			t.Fatal(err)
		}
		s, fa, err := uprobe.Check(b, k, uprobe.Request{Addr: from, HasAddr: true})
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := uprobe.Cheapest(fa, s.Off)
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := Main([]string{"uprobe", "audit", "--json", "--place", "cheapest", "--policy", model, fmt.Sprintf("%s:%#x", bin, from)}, strings.NewReader(""), &out, &errb)
		var got struct {
			Policy string `json:"policy"`
			Off    uint64 `json:"off"`
			Path   string `json:"path"`
		}
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s: %q: %v (exit %d, %s)", model, out.String(), err, code, errb.String())
		}
		if got.Policy != model || got.Off != want.Off || got.Path != want.Path.String() || code != 0 {
			t.Errorf("%s: placed at +%#x (%s, policy %s, exit %d), want +%#x (%s): %s", model, got.Off, got.Path, got.Policy, code, want.Off, want.Path, errb.String())
		}
		seen[fmt.Sprintf("+%#x %s", got.Off, got.Path)] = true
		t.Logf("%s: %s", model, strings.TrimSpace(errb.String()))
	}
	if len(seen) != 3 {
		t.Errorf("the three policies placed the point at %v: want three different sites or paths", seen)
	}
}

// `uprobe bench` prints its whole table in one run: a header and one row per
// path of uprobe.BenchFuncsFor(the running kernel's model), each probed row
// with hits = calls (the workload's own count is the oracle).
func TestLiveUprobeBenchTable(t *testing.T) {
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 (as root, kernel with uprobes)")
	}
	var out, errb bytes.Buffer
	if code := Main([]string{"uprobe", "bench", "--scale", "0.02", "--runs", "1"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	k, _ := uprobe.Running()
	funcs := uprobe.BenchFuncsFor(k)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2+len(funcs) {
		t.Fatalf("%d lines, want a title, a header and %d rows:\n%s", len(lines), len(funcs), out.String())
	}
	for i, f := range funcs {
		fields := strings.Fields(lines[2+i])
		if fields[0] != f.Name || !strings.Contains(lines[2+i], f.Asm) {
			t.Errorf("row %d: %q, want path %s, code %s", i, lines[2+i], f.Name, f.Asm)
		}
		if n := len(fields); f.Probe && fields[n-3] != fields[n-4] {
			t.Errorf("%s: %s hits of %s calls", f.Name, fields[n-3], fields[n-4])
		}
	}
	t.Logf("\n%s", out.String())
}
