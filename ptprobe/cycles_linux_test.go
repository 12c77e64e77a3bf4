//go:build linux && amd64

package ptprobe

import (
	"bytes"
	"io"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAttachDetachCycles inserts and removes jump probes (recording every
// hit, and not) over and over in a process whose eight threads call the
// probed functions without pause and check every result against an
// unprobed copy (a wrong one ends the process with status 3; a thread
// resuming in the middle of a half-written jump or of the displaced bytes
// would fault): each attach stops every thread and plans the jump only
// where no thread's IP is among the displaced bytes, each detach steps the
// threads out of the trampolines before the original bytes go back.
// After every cycle the process runs and the functions are the file's
// bytes again. KBOOST_TRACE_RUNS sets the cycles (default 20).
func TestAttachDetachCycles(t *testing.T) {
	cycles := 20
	if v, err := strconv.Atoi(os.Getenv("KBOOST_TRACE_RUNS")); err == nil && v > 0 {
		cycles = v
	}
	if testing.Short() {
		cycles = 3
	}
	cmd := startTarget(t, "spin", "8")
	pid := cmd.Process.Pid
	rnd := rand.New(rand.NewSource(1))
	jumps, demoted := 0, 0
	for c := 0; c < cycles; c++ {
		opt := Options{Pid: pid, Points: []string{"work", "flat"}, Mode: Jump}
		if c%2 == 1 {
			opt.Out, opt.Hits = io.Discard, true
		}
		sum := detachAfter(t, opt, time.Duration(rnd.Intn(20))*time.Millisecond)
		if st := procState(pid); st != "S" && st != "R" {
			t.Fatalf("cycle %d: the spinning process is %q after detach: %+v", c, st, sum)
		}
		if !sum.Detached || sum.Threads != 9 || len(sum.Errors) > 0 {
			t.Errorf("cycle %d: detached %v, %d threads, errors %v", c, sum.Detached, sum.Threads, sum.Errors)
		}
		for _, p := range sum.Probes {
			switch {
			case p.Mode == Jump:
				jumps++
			case strings.Contains(strings.Join(p.Reasons, " "), "ptprobe.thread_inside"):
				demoted++
			default:
				t.Errorf("cycle %d: %s planted as %v (%v)", c, p.Point, p.Mode, p.Reasons)
			}
		}
		for _, fn := range []string{"work", "flat"} {
			if file, live := siteBytes(t, pid, fn); !bytes.Equal(file, live) {
				t.Fatalf("cycle %d: after detach %s is % x, the file has % x", c, fn, live, file)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	if st := procState(pid); st != "S" && st != "R" {
		t.Errorf("the spinning process is %q (a wrong result ends it with status 3)", st)
	}
	t.Logf("%d cycles: %d probes planted as jumps, %d demoted to boost (a thread stopped among the displaced bytes)", cycles, jumps, demoted)
	if jumps == 0 {
		t.Error("no jump was planted: the test checks nothing")
	}
}

// TestKilledWhileAttaching SIGKILLs a process with eight threads calling
// the probed functions at a random moment while kboost attaches to it,
// plants jumps (injected system calls, slot writes) or detaches: the
// trace ends (no hang) without an error and the process is gone.
// KBOOST_TRACE_RUNS sets the runs (default 20).
func TestKilledWhileAttaching(t *testing.T) {
	runs := 20
	if v, err := strconv.Atoi(os.Getenv("KBOOST_TRACE_RUNS")); err == nil && v > 0 {
		runs = v
	}
	if testing.Short() {
		runs = 3
	}
	rnd := rand.New(rand.NewSource(2))
	for r := 0; r < runs; r++ {
		cmd := startTarget(t, "spin", "8")
		pid := cmd.Process.Pid
		e, err := New(Options{Pid: pid, Points: []string{"work", "flat"}, Mode: Jump, Out: io.Discard, Hits: r%2 == 1})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan Summary, 1)
		go func() {
			s, _ := e.Run() // errors from a process killed in the middle of an injection are expected
			done <- s
		}()
		delay := time.Duration(rnd.Intn(4000)) * time.Microsecond
		time.Sleep(delay)
		if r%3 == 2 {
			e.Detach() // killed while detaching
			time.Sleep(time.Duration(rnd.Intn(500)) * time.Microsecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		select {
		case sum := <-done:
			if st := procState(pid); st != "gone" && st != "Z" {
				t.Errorf("run %d: the killed process is %q", r, st)
			}
			if !sum.Detached && sum.Status != 128+9 {
				t.Errorf("run %d (killed %v after the start): status %d, want %d", r, delay, sum.Status, 128+9)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("run %d: the trace did not end after its tracee was killed %v after the start:\n%s", r, delay, hangDump())
		}
		cmd.Wait()
	}
}
