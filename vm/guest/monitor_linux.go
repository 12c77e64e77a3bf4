//go:build linux

package guest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/kboost/kboost/internal/procstat"
	"github.com/kboost/kboost/monitor"
	"golang.org/x/sys/unix"
)

func init() {
	RegisterTyped("monitor-trial", monitorStep)
}

// monitorStep runs MonitorArgs.Bin natively, then under kboost's reference
// monitor (every call, seccomp filter, a policy denying the openat of
// Deny), and lists what is left running afterwards; then it runs each of
// MonitorArgs.Backtrace under the monitor with backtraces.
func monitorStep(e *Env, args MonitorArgs) error {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	rep := MonitorReport{Machine: unix.ByteSliceToString(u.Machine[:])}
	out, err := exec.Command(args.Bin, args.Deny).Output()
	rep.Native = string(out)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		rep.NativeStatus = ee.ExitCode()
	} else if err != nil {
		return fmt.Errorf("%s natively: %w", args.Bin, err)
	}
	pol, err := monitor.ParsePolicy(strings.NewReader("deny openat path=" + args.Deny + "\n"))
	if err != nil {
		return err
	}
	run, err := monitored(monitor.Options{Argv: []string{args.Bin, args.Deny}, Policy: pol})
	if err != nil {
		return err
	}
	rep.Traced, rep.Records, rep.Status, rep.Err = run.Out, run.Records, run.Status, run.Err
	for _, argv := range args.Backtrace {
		run, err := monitored(monitor.Options{Argv: argv, Backtrace: true})
		if err != nil {
			return err
		}
		run.Argv = argv
		rep.Backtraces = append(rep.Backtraces, run)
		e.Logf("monitor-trial: %q under the monitor with backtraces: status %d, %d bytes of records", argv, run.Status, len(run.Records))
	}
	rep.Leftover = []string{}
	for _, pid := range procstat.Descendants(os.Getpid()) {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		rep.Leftover = append(rep.Leftover, strconv.Itoa(pid)+" "+strings.TrimSpace(string(comm)))
	}
	e.Logf("monitor-trial: native status %d, monitored status %d, %d bytes of records", rep.NativeStatus, rep.Status, len(rep.Records))
	return e.PutJSON("monitor-trial.json", rep)
}

// monitored runs opt.Argv under the monitor, JSON records and the
// program's stdout kept; the monitor's own failure is in the run's Err.
func monitored(opt monitor.Options) (BacktraceRun, error) {
	stdout, err := os.CreateTemp("", "monitor-trial-")
	if err != nil {
		return BacktraceRun{}, err
	}
	defer os.Remove(stdout.Name())
	var rec bytes.Buffer
	var run BacktraceRun
	opt.JSON, opt.Out, opt.Stdio = true, &rec, [3]*os.File{nil, stdout, nil}
	m, err := monitor.New(opt)
	if err != nil {
		run.Err = err.Error()
	} else {
		sum, err := m.Run()
		run.Status = sum.Status
		if err != nil {
			run.Err = err.Error()
		}
	}
	stdout.Close()
	b, _ := os.ReadFile(stdout.Name())
	run.Out, run.Records = string(b), rec.String()
	return run, nil
}
