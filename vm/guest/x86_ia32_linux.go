//go:build linux

package guest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

func init() {
	RegisterTyped("ia32-refused", ia32Step)
}

// ia32Step runs, on a kernel that may refuse 32-bit executables, a static
// i386 program, kboost's i386 sim and fuzz with --exec auto, and the
// compiled test binaries.
func ia32Step(e *Env, args IA32Args) error {
	// The kernel starts /init without PATH; --exec auto looks up
	// qemu-i386-static in it.
	if os.Getenv("PATH") == "" {
		os.Setenv("PATH", "/usr/bin:/bin")
	}
	var rep IA32Report
	pid, err := syscall.ForkExec(args.Static386, []string{args.Static386}, &syscall.ProcAttr{Env: []string{}})
	if err != nil {
		rep.Static386Errno = errnoName(err)
	} else {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return fmt.Errorf("wait4 %s: %w", args.Static386, err)
		}
		rep.Static386Exit = ws.ExitStatus()
	}
	e.Logf("static i386 executable: errno %q, exit %d", rep.Static386Errno, rep.Static386Exit)
	rep.Sim = runCLI("sim", "--arch", "i386", "--exec", "auto", "--json", "89", "c8")
	e.Logf("sim: exit %d", rep.Sim.Exit)
	rep.Fuzz = runCLI("fuzz", "--arch", "i386", "--exec", "auto", "-n", strconv.Itoa(args.FuzzN), "--json")
	e.Logf("fuzz: exit %d", rep.Fuzz.Exit)
	for _, tb := range args.Tests {
		t, err := runTest(tb)
		if err != nil {
			return err
		}
		rep.Tests = append(rep.Tests, t)
		e.Logf("%s: exit %d in %.0fs", tb.Binary, t.Exit, t.Seconds)
	}
	return e.PutJSON("ia32-refused.json", &rep)
}

// runTest runs one compiled test binary verbosely in its directory.
func runTest(tb IA32Test) (ProgramRun, error) {
	a := []string{"-test.run", tb.Run, "-test.v", "-test.count=1"}
	cmd := exec.Command(tb.Binary, a...)
	cmd.Dir = tb.Dir
	cmd.Env = append(append(os.Environ(), "KBOOST_ORACLE=1", "KBOOST_ROOT=1", "TMPDIR=/tmp", "HOME=/tmp"), tb.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	r := ProgramRun{Args: append([]string{tb.Binary}, a...)}
	start := time.Now()
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return r, fmt.Errorf("running %s: %w", tb.Binary, err)
		}
		r.Exit = ee.ExitCode()
	}
	r.Seconds = time.Since(start).Seconds()
	r.Output = out.String()
	return r, nil
}
