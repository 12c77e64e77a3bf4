//go:build linux

package uprobe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/boost"
)

// StartTrial starts bin with args and waits for its "ready" line (the trial
// protocol, see Trial).
func StartTrial(bin string, args ...string) (*TrialProcess, error) {
	cmd := exec.Command(bin, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr := new(bytes.Buffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	tg := &TrialProcess{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: stderr}
	l, err := tg.out.ReadString('\n')
	if err != nil || l != "ready\n" {
		tg.Kill()
		return nil, fmt.Errorf("uprobe: %s %v: no ready line (%q, %v)", bin, args, l, err)
	}
	return tg, nil
}

// TrialProcess is a started program of the trial protocol.
type TrialProcess struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *bytes.Buffer
}

// Pid is the process's id.
func (tg *TrialProcess) Pid() int { return tg.cmd.Process.Pid }

// Run lets the program make its calls and returns its "done" line.
func (tg *TrialProcess) Run() (string, error) {
	if _, err := tg.in.Write([]byte{'x'}); err != nil {
		return "", err
	}
	l, err := tg.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no done line: %w", err)
	}
	return strings.TrimSpace(l), nil
}

// Stderr is what the program wrote to its standard error so far.
func (tg *TrialProcess) Stderr() string { return tg.stderr.String() }

// Exit lets the program exit (killing it after 5 s) and returns how it ended.
func (tg *TrialProcess) Exit() error {
	tg.in.Close()
	done := make(chan error, 1)
	go func() { done <- tg.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		tg.cmd.Process.Kill()
		return <-done
	}
}

// Kill kills the program and waits for it.
func (tg *TrialProcess) Kill() {
	tg.cmd.Process.Kill()
	tg.Exit()
}

// Trial starts bin with args (a program of the trial protocol: it prints
// "ready", waits for a byte on stdin, makes its calls, prints one "done ..."
// line and waits for another byte before it exits: kboost's uprobe test
// programs, uprobe/testdata/corpus.c), puts p on that process (perf PMU,
// p.Pid is set), lets it run unless norun (then the site is only read back),
// reads back the site's n bytes and the maps, counts the hits, and removes the
// probe. A refused probe is a TrialResult with Errno, not an error.
func Trial(bin string, p Probe, norun bool, args ...string) (TrialResult, error) {
	var ks TrialResult
	tg, err := StartTrial(bin, args...)
	if err != nil {
		return ks, err
	}
	defer tg.Kill()
	p.Pid = tg.Pid()
	ev, err := OpenPMU(p)
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			return ks, err
		}
		ks.Errno = boost.Errno(errno).String()
		return ks, nil
	}
	defer ev.Close()
	ks.Opened = true
	if norun {
		ks.Readback, err = ReadBack(tg.Pid(), p.Path, p.Offset, 16)
		return ks, err
	}
	ks.Done, err = tg.Run()
	if err != nil {
		ks.Exit = errString(tg.Exit())
		ks.Stderr = tg.Stderr()
		ks.Hits, _ = ev.Hits()
		return ks, nil
	}
	if ks.Readback, err = ReadBack(tg.Pid(), p.Path, p.Offset, 16); err != nil {
		return ks, err
	}
	ks.Hits, err = ev.Hits()
	ks.Readback.Hits = ks.Hits
	ks.Exit = errString(tg.Exit())
	ks.Stderr = tg.Stderr()
	return ks, err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
