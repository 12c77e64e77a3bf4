//go:build linux && amd64

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// TestFuzzKillResume kills the built kboost binary with SIGKILL at random
// moments of a `fuzz --out` campaign (at least 20 times, resuming it each
// time): every findings file it leaves parses line by line, and the
// resumed campaign ends with the counts and findings of an uninterrupted
// run of the same seed. For x86-64 and for i386 (on the path i386Path
// says: under qemu-i386-static where the kernel refuses 32-bit code, the
// campaign is shorter, its blocks being slower).
func TestFuzzKillResume(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (builds kboost and runs it ~25 times)")
	}
	cache := smallSamples(t)
	bin := kboostBinary(t)
	for _, arch := range []string{"x86-64", "i386"} {
		n := "10240" // 160 blocks
		if arch == "i386" && i386Path(t) == "qemu" {
			n = "4096" // 64 blocks
		}
		t.Run(arch, func(t *testing.T) { fuzzKillResume(t, bin, cache, arch, n) })
	}
}

func fuzzKillResume(t *testing.T, bin, cache, arch, n string) {
	dir := t.TempDir()
	kboost := func(ctx context.Context, args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, bin, args...)
		c.Env = append(os.Environ(), "KBOOST_CACHE="+cache)
		return c
	}
	ref := filepath.Join(dir, "ref.jsonl")
	stable := stableTimeout(t, arch)
	refOut, err := kboost(context.Background(), append([]string{"fuzz", "--arch", arch, "-n", n, "--seed", "3", "--json", "--quiet", "--out", ref}, stable...)...).Output()
	if err != nil {
		t.Fatalf("reference run: %v", err)
	}
	if arch == "i386" {
		var sum map[string]any
		json.Unmarshal(refOut, &sum)
		wantI386Emulator(t, i386Path(t), sum)
	}
	want := counts(t, refOut)
	f := filepath.Join(dir, "killed.jsonl")
	args := func() []string {
		if _, err := os.Stat(f); err == nil {
			return []string{"fuzz", "--resume", f, "--checkpoint", "10ms", "--json", "--quiet"}
		}
		return append([]string{"fuzz", "--arch", arch, "-n", n, "--seed", "3", "--out", f, "--checkpoint", "10ms", "--json", "--quiet"}, stable...)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	kills, runs := 0, 0
	for kills < 20 {
		runs++
		if runs > 60 {
			t.Fatalf("the campaign ended after %d kills: make it longer", kills)
		}
		c := kboost(context.Background(), args()...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		// a quarter at any moment (start-up included), the others once the
		// file has grown: while blocks run and records are written
		checkpoints := func() int {
			b, _ := os.ReadFile(f)
			return bytes.Count(b, []byte(`"record":"checkpoint"`))
		}
		if runs%4 != 0 {
			for cp, deadline := checkpoints(), time.Now().Add(5*time.Second); checkpoints() == cp && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
		}
		time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		c.Process.Signal(syscall.SIGKILL)
		err := c.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			kills++
		} else if err != nil {
			t.Fatalf("run %d: %v", runs, err)
		} else {
			t.Fatalf("run %d: the campaign finished before %d kills: make it longer", runs, 20)
		}
		if _, err := os.Stat(f); err == nil {
			findingLines(t, f) // every line whole JSON
		}
	}
	out, err := kboost(context.Background(), args()...).Output()
	if err != nil {
		t.Fatalf("final resume: %v", err)
	}
	if d := diffCounts(want, counts(t, out)); len(d) > 0 {
		t.Errorf("after %d kills, the resumed campaign's counts differ from an uninterrupted run's: %v", kills, d)
	}
	if w, g := findingLines(t, ref), findingLines(t, f); !slices.Equal(w, g) {
		t.Errorf("findings differ: %d uninterrupted, %d resumed; only uninterrupted: %.600q; only resumed: %.600q", len(w), len(g), missing(w, g), missing(g, w))
	}
	b, _ := os.ReadFile(f)
	t.Logf("%d runs, %d killed; %d checkpoints in the file", runs, kills, bytes.Count(b, []byte(`"record":"checkpoint"`)))
}

// missing lists the records of a that b lacks.
func missing(a, b []string) []string {
	var m []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			m = append(m, l)
		}
	}
	return m
}
