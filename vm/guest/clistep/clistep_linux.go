//go:build linux

package clistep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/cli"
	"github.com/kboost/kboost/loader"
	"github.com/kboost/kboost/vm/guest"
)

func init() {
	guest.Register("probe-cli", step)
}

// syncBuffer is a bytes.Buffer safe for a command writing while the step reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// state records the kernel's kprobes after a command.
func state(r *guest.CLIRun) {
	if t, err := loader.OpenTracefs(); err == nil {
		r.Events, _ = t.Events()
	}
	r.List, _ = loader.ReadKprobesList()
}

func run(args ...string) guest.CLIRun {
	var out, errb syncBuffer
	r := guest.CLIRun{Args: args}
	r.Exit = cli.Main(args, strings.NewReader(""), &out, &errb)
	r.Stdout, r.Stderr = out.String(), errb.String()
	state(&r)
	return r
}

// pick returns the first boundary of fn kboost predicts optimized (else the
// first accepted, non-ftrace one), as an offset.
func pick(lv *loader.Live, fn string) (uint64, error) {
	fa, err := lv.Pred.AuditSymbol(fn, lv.Kcore.Read)
	if err != nil {
		return 0, err
	}
	best := -1
	for i := range fa.Entries {
		d := &fa.Entries[i].Decision
		if d.Verdict == boost.Reject || d.Verdict == boost.Ftrace || !fa.Entries[i].DecodeOK {
			continue
		}
		if d.Optimizable && lv.Optimization {
			return fa.Entries[i].Off, nil
		}
		if best < 0 {
			best = i
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("%s: no accepted non-ftrace boundary", fn)
	}
	return fa.Entries[best].Off, nil
}

func step(e *guest.Env, raw json.RawMessage) error {
	var args guest.CLIArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("probe-cli arguments: %w", err)
		}
	}
	if args.Func == "" {
		args.Func = "vfs_read"
	}
	if args.AddrFunc == "" {
		args.AddrFunc = "ksys_read"
	}
	var rep guest.CLIReport
	lv, err := loader.OpenLive("", args.Config)
	if err != nil {
		return err
	}
	off, err := pick(lv, args.Func)
	if err != nil {
		lv.Close()
		return err
	}
	aoff, err := pick(lv, args.AddrFunc)
	if err != nil {
		lv.Close()
		return err
	}
	as, ok := lv.Pred.File.Symbols.ByName(args.AddrFunc)
	lv.Close()
	if !ok {
		return fmt.Errorf("%s not in kallsyms", args.AddrFunc)
	}
	rep.Points = []string{args.Func, fmt.Sprintf("%s+%#x", args.Func, off), fmt.Sprintf("%#x", as.Addr+aoff)}
	rep.AddrPoint = fmt.Sprintf("%s+%#x", args.AddrFunc, aoff)
	var common []string
	if args.Config != "" {
		common = append(common, "--config", args.Config)
	}

	rep.Runs = append(rep.Runs, run("probe", "sweep"))
	rep.Runs = append(rep.Runs, run(append([]string{"probe", "add", args.Func + "+1"}, common...)...))
	rep.Runs = append(rep.Runs, run(append([]string{"probe", "add", "0x1234"}, common...)...))
	add := run(append(append([]string{"probe", "add", "--json"}, common...), rep.Points...)...)
	rep.Runs = append(rep.Runs, add)
	rep.Runs = append(rep.Runs, run("probe", "list", "--json"))
	first := ""
	if len(add.Events) > 0 {
		first = add.Events[0].Group + "/" + add.Events[0].Event
	}
	rep.Runs = append(rep.Runs, run("probe", "rm", first))
	rep.Runs = append(rep.Runs, run("probe", "sweep"))
	// The text output of add, for the optimizable point, then a sweep.
	rep.Runs = append(rep.Runs, run(append([]string{"probe", "add"}, append(common, rep.Points[1])...)...))
	rep.Runs = append(rep.Runs, run("probe", "sweep"))
	w, err := watch(append(append([]string{"probe", "watch", "--interval", "200ms"}, common...), args.Func))
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	rep.Runs = append(rep.Runs, w)
	return e.PutJSON("probe-cli.json", rep)
}

// watch runs a probe watch command until it is watching, makes the probed
// function run, interrupts it with SIGINT (to this process: the command's
// own handler takes it) and waits for it to end.
func watch(args []string) (guest.CLIRun, error) {
	r := guest.CLIRun{Args: args}
	// A SIGINT arriving with no handler would end process 1 (and the machine).
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, os.Interrupt)
	defer signal.Stop(guard)
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- cli.Main(args, strings.NewReader(""), &out, &errb) }()
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), "Ctrl-C stops") {
		select {
		case code := <-done:
			r.Exit, r.Stdout, r.Stderr = code, out.String(), errb.String()
			state(&r)
			return r, errors.New("probe watch ended before it was watching")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.Stdout, r.Stderr = out.String(), errb.String()
			return r, errors.New("probe watch not watching after 3 minutes")
		}
	}
	r.ListDuring, _ = loader.ReadKprobesList()
	for i := 0; i < 20; i++ {
		_, _ = os.ReadFile("/proc/version")
	}
	time.Sleep(600 * time.Millisecond) // a few ticks
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		return r, err
	}
	select {
	case r.Exit = <-done:
	case <-time.After(time.Minute):
		r.Stdout, r.Stderr = out.String(), errb.String()
		return r, errors.New("probe watch still running a minute after SIGINT")
	}
	r.Stdout, r.Stderr = out.String(), errb.String()
	state(&r)
	return r, nil
}
