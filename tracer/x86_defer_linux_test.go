//go:build linux && amd64

package tracer

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/objdump"
	"golang.org/x/sys/unix"
)

// TestStubDisassembly: objdump reads one thread's stub as the instructions
// its comment describes, with every rip-relative operand on that thread's
// data slot and the two jumps on E and R.
func TestStubDisassembly(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Fatalf("objdump: %v (scripts/setup.sh installs binutils)", err)
	}
	const code, data = 0x7f0000001040, 0x7f0000004020
	buf := make([]byte, x86Defer.slotCode)
	x86Stub(buf, code, data)
	var got []string
	err := objdump.RunBytes(context.Background(), buf[:x86Defer.tail], objdump.Config{Machine: objdump.MachineX86_64, VMA: code}, func(r *objdump.Record) error {
		text := r.Text
		if i := strings.Index(text, "#"); i >= 0 { // objdump's comment: the rip-relative operand's address
			text = strings.TrimSpace(text[:i]) + " @" + strings.Fields(text[i+1:])[0]
		}
		got = append(got, fmt.Sprintf("%x %s", r.Addr-code, strings.Join(strings.Fields(text), " ")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	at := func(off uint64) string { return fmt.Sprintf("@0x%x", data+off) }
	want := []string{
		"0 mov %rcx,0x0(%rip) " + at(0),
		"7 mov %r11,0x0(%rip) " + at(8),
		"e syscall",
		"10 mov 0x0(%rip),%rcx " + at(0),
		"17 mov 0x0(%rip),%r11 " + at(8),
		fmt.Sprintf("1e jmp 0x%x", code+34),
		fmt.Sprintf("20 jmp 0x%x", code),
		"22 mov %rax,0x0(%rip) " + at(16),
		"29 mov %r11,0x0(%rip) " + at(24),
		"30 jmp *%rcx",
	}
	// objdump prints the displacement itself; compare without it.
	for i := range got {
		got[i] = dispRe(got[i])
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stub disassembles as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if x86Defer.saved != 0x7 || x86Defer.restarted != 0x10 || x86Defer.entry != 0x22 || x86Defer.tail != 0x32 {
		t.Errorf("offsets saved %#x restarted %#x entry %#x tail %#x do not match the code", x86Defer.saved, x86Defer.restarted, x86Defer.entry, x86Defer.tail)
	}
}

// dispRe replaces a rip-relative displacement ("0x2fd9(%rip)") by 0x0.
func dispRe(s string) string {
	i := strings.Index(s, "(%rip)")
	if i < 0 {
		return s
	}
	j := strings.LastIndexAny(s[:i], " ,")
	return s[:j+1] + "0x0" + s[i:]
}

type countHandler struct {
	enters, exits, noReturn int
	rets                    map[int64]int
	nr                      uint64
}

func (h *countHandler) Enter(c *Call) uintptr { h.enters++; return 0 }
func (h *countHandler) Exit(c *Call) {
	h.exits++
	if c.NoReturn {
		h.noReturn++
	}
	if c.Nr == h.nr && !c.NoReturn {
		h.rets[c.Ret]++
	}
}
func (h *countHandler) Event(Event) {}

// TestOneStopPerCall: under the seccomp filter, n getppid calls of an
// x86-64 tracee stop n times (plus the calls that always take their exit
// stop, and the injected calls that map the stub pages), each reporting
// the kernel's answer (the test's own pid: kboost's helper executes the
// tracee in place); without OneStop they stop 2n times.
func TestOneStopPerCall(t *testing.T) {
	bin := buildCalls(t)
	const n = 2000
	for _, exitStops := range []bool{false, true} {
		stops := 0
		afterWait = func(int, unix.WaitStatus) { stops++ }
		out, h := traceCalls(t, Config{Argv: []string{bin, strconv.Itoa(n)}, UseSeccomp: true, OneStop: !exitStops})
		afterWait = nil
		if strings.TrimSpace(string(out)) != strconv.Itoa(os.Getpid()) {
			t.Errorf("exitStops=%v: the tracee saw parent %q, want %d", exitStops, out, os.Getpid())
		}
		if h.rets[int64(os.Getpid())] != n || len(h.rets) != 1 {
			t.Errorf("exitStops=%v: getppid results %v, want %d times %d", exitStops, h.rets, n, os.Getpid())
		}
		other := h.enters - n // start-up and exit calls of the tracee
		t.Logf("exitStops=%v: %d calls, %d stops (%d unfinished)", exitStops, h.enters, stops, h.noReturn)
		if h.enters != h.exits || h.noReturn != 1 { // exit_group only
			t.Errorf("exitStops=%v: %d entries, %d exits, %d unfinished; want as many exits, 1 unfinished (exit_group)", exitStops, h.enters, h.exits, h.noReturn)
		}
		if exitStops && stops < 2*n {
			t.Errorf("exitStops: %d stops for %d calls, want at least two per call", stops, n)
		}
		if !exitStops && stops > n+2*other+10 {
			t.Errorf("%d stops for %d getppid calls and %d others: want one per getppid call", stops, n, other)
		}
	}
}

// TestChildBeforeCreatorEvent: a child that runs, and executes, before the
// tracer has read its creator's fork or vfork event (wait4 reports the
// newer task first when both are ready: a tracer slow to call it makes
// that likely) must not be given its creator's stub pages, which are not
// in its new address space: each of its calls would jump there and fault
// (without the check, 6 of 30 children faulted so in one run).
func TestChildBeforeCreatorEvent(t *testing.T) {
	bin := buildCalls(t)
	beforeWait = func() {
		var si unix.Siginfo
		unix.Waitid(unix.P_ALL, 0, &si, unix.WEXITED|unix.WSTOPPED|unix.WNOWAIT|unix.WALL, nil)
		time.Sleep(3 * time.Millisecond)
	}
	defer func() { beforeWait = nil }()
	const k = 30
	out, _ := traceCalls(t, Config{Argv: []string{bin, "50", "spawn", strconv.Itoa(k)}, UseSeccomp: true, OneStop: true})
	if want := fmt.Sprintf("spawned %d ok", k); !strings.Contains(out, want) {
		t.Errorf("output %q, want %q: a child faulted or failed", out, want)
	}
}

func buildCalls(t *testing.T) string {
	t.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	bin := filepath.Join(t.TempDir(), "calls")
	if out, err := exec.Command(gcc, "-O1", "-o", bin, "testdata/calls.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return bin
}

// traceCalls traces cfg with a counting handler and returns the tracee's
// stdout.
func traceCalls(t *testing.T, cfg Config) (string, *countHandler) {
	t.Helper()
	outPath := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg.Stdio = [3]*os.File{nil, f, nil}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &countHandler{rets: map[int64]int{}, nr: unix.SYS_GETPPID}
	done := make(chan error, 1)
	go func() { _, err := tr.Run(h); done <- err }()
	select {
	case err = <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("trace hung")
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(outPath)
	return string(b), h
}

// TestEntryStopUnderFilter: a thread resumed with PTRACE_SYSCALL whose
// next stop is a new call's entry (not the exit stop the tracer waited
// for) stops there and then at the same call's seccomp stop. Taken as two
// calls, the second read the stub's entry as the call's return address
// under --one-stop and the thread looped in its stub for ever (a make was
// once found so); with exit stops it counted each call twice.
func TestEntryStopUnderFilter(t *testing.T) {
	bin := buildCalls(t)
	exitStopsAlways = true
	defer func() { exitStopsAlways = false }()
	const n = 300
	for _, one := range []bool{true, false} {
		out, h := traceCalls(t, Config{Argv: []string{bin, strconv.Itoa(n)}, UseSeccomp: true, OneStop: one})
		if strings.TrimSpace(string(out)) != strconv.Itoa(os.Getpid()) {
			t.Errorf("one stop %v: the tracee saw parent %q, want %d", one, out, os.Getpid())
		}
		if h.rets[int64(os.Getpid())] != n || len(h.rets) != 1 {
			t.Errorf("one stop %v: getppid results %v, want %d times %d", one, h.rets, n, os.Getpid())
		}
		if h.enters != h.exits || h.noReturn != 1 {
			t.Errorf("one stop %v: %d entries, %d exits, %d unfinished; want as many exits, 1 unfinished (exit_group)", one, h.enters, h.exits, h.noReturn)
		}
	}
}
