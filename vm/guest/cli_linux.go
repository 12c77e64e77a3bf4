//go:build linux

package guest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/loader"
)

func init() {
	Register("probe-cli", stepCLI)
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
func state(r *CLIRun) {
	if t, err := loader.OpenTracefs(); err == nil {
		r.Events, _ = t.Events()
	}
	r.List, _ = loader.ReadKprobesList()
}

// kboostBin is the program the CLI steps run (a test points it elsewhere).
var kboostBin = KboostPath

// kboostCommand is the kboost binary of the initramfs (KboostPath) run with
// args, its output going to out and errb.
func kboostCommand(args []string, out, errb *syncBuffer) *exec.Cmd {
	cmd := exec.Command(kboostBin, args...)
	cmd.Stdout, cmd.Stderr = out, errb
	return cmd
}

// exitCode is the command's exit status (-1 when it did not run or was
// killed by a signal: err then says which).
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), nil
	}
	return -1, err
}

// runCLI runs the kboost binary with args and records its exit status,
// output and the kernel's kprobes after it.
func runCLI(args ...string) CLIRun {
	var out, errb syncBuffer
	r := CLIRun{Args: args}
	var err error
	if r.Exit, err = exitCode(kboostCommand(args, &out, &errb).Run()); err != nil {
		errb.Write([]byte(err.Error() + "\n"))
	}
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

func stepCLI(e *Env, raw json.RawMessage) error {
	var args CLIArgs
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
	var rep CLIReport
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

	rep.Runs = append(rep.Runs, runCLI("probe", "sweep"))
	rep.Runs = append(rep.Runs, runCLI(append([]string{"probe", "add", args.Func + "+1"}, common...)...))
	rep.Runs = append(rep.Runs, runCLI(append([]string{"probe", "add", "0x1234"}, common...)...))
	add := runCLI(append(append([]string{"probe", "add", "--json"}, common...), rep.Points...)...)
	rep.Runs = append(rep.Runs, add)
	rep.Runs = append(rep.Runs, runCLI("probe", "list", "--json"))
	first := ""
	if len(add.Events) > 0 {
		first = add.Events[0].Group + "/" + add.Events[0].Event
	}
	rep.Runs = append(rep.Runs, runCLI("probe", "rm", first))
	rep.Runs = append(rep.Runs, runCLI("probe", "sweep"))
	// The text output of add, for the optimizable point, then a sweep.
	rep.Runs = append(rep.Runs, runCLI(append([]string{"probe", "add"}, append(common, rep.Points[1])...)...))
	rep.Runs = append(rep.Runs, runCLI("probe", "sweep"))
	w, err := watch(append(append([]string{"probe", "watch", "--interval", "200ms"}, common...), args.Func))
	if err != nil {
		rep.Notes = append(rep.Notes, err.Error())
	}
	rep.Runs = append(rep.Runs, w)
	return e.PutJSON("probe-cli.json", rep)
}

// watch runs a probe watch command until it is watching, makes the probed
// function run, interrupts it with SIGINT (the command's own handler takes
// it) and waits for it to end.
func watch(args []string) (CLIRun, error) {
	r := CLIRun{Args: args}
	var out, errb syncBuffer
	cmd := kboostCommand(args, &out, &errb)
	if err := cmd.Start(); err != nil {
		return r, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	finish := func(err error) error {
		var xerr error
		r.Exit, xerr = exitCode(err)
		r.Stdout, r.Stderr = out.String(), errb.String()
		return xerr
	}
	deadline := time.Now().Add(3 * time.Minute)
	for !strings.Contains(out.String(), "Ctrl-C stops") {
		select {
		case err := <-done:
			_ = finish(err)
			state(&r)
			return r, errors.New("probe watch ended before it was watching")
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = finish(<-done)
			return r, errors.New("probe watch not watching after 3 minutes")
		}
	}
	r.ListDuring, _ = loader.ReadKprobesList()
	for i := 0; i < 20; i++ {
		_, _ = os.ReadFile("/proc/version")
	}
	time.Sleep(600 * time.Millisecond) // a few ticks
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		_ = cmd.Process.Kill()
		_ = finish(<-done)
		return r, err
	}
	select {
	case err := <-done:
		if err := finish(err); err != nil {
			return r, err
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		_ = finish(<-done)
		return r, errors.New("probe watch still running a minute after SIGINT")
	}
	state(&r)
	return r, nil
}
