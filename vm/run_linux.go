//go:build linux

package vm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kboost/kboost/vm/guest"
	"golang.org/x/sys/unix"
)

// Run boots cfg.Kernel under QEMU with an initramfs whose /init is the guest binary,
// runs steps in the guest and returns what it sent back. QEMU is stopped as soon as
// the end marker arrives, or on time-out, context cancellation, a kernel panic or
// any error; its whole process group is killed and the temporary initramfs removed
// on every path. A step failing inside the guest is not an error of Run: see
// Result.Err.
func Run(ctx context.Context, cfg Config, steps ...guest.Step) (*Result, error) {
	start := time.Now()
	arch := cfg.arch()
	if cfg.Kernel == "" {
		return nil, errors.New("vm: Config.Kernel is empty (want the path of a kernel image)")
	}
	if _, err := os.Stat(cfg.Kernel); err != nil {
		return nil, fmt.Errorf("vm: kernel image: %w", err)
	}
	qemu := cfg.QEMU
	if qemu == "" {
		qemu = arch.QEMU
	}
	qemuPath, err := exec.LookPath(qemu)
	if err != nil {
		return nil, &QEMUNotFoundError{Binary: qemu, AptPackage: arch.AptPackage}
	}
	initPath := cfg.GuestBinary
	if initPath == "" {
		initPath = os.Getenv("KBOOST_GUEST")
	}
	if initPath == "" {
		pkg := cfg.GuestPackage
		if pkg == "" {
			pkg = DefaultGuestPackage
		}
		if initPath, err = BuildGuest(ctx, pkg, arch); err != nil {
			return nil, err
		}
	}
	initBin, err := os.ReadFile(initPath)
	if err != nil {
		return nil, fmt.Errorf("vm: guest binary: %w", err)
	}
	kb, err := kboostFiles(ctx, &cfg, arch, steps)
	if err != nil {
		return nil, err
	}
	sc := &guest.Scenario{Nonce: newNonce(), Steps: steps, Verbose: cfg.Verbose, HostMemory: cfg.HostMemory}
	files, err := initramfsFiles(initBin, sc, append(kb, cfg.Files...))
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kboost-vm-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	initrd := filepath.Join(dir, "initrd.cpio.gz")
	f, err := os.Create(initrd)
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriter(f)
	err = WriteInitramfs(bw, files)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("vm: writing initramfs: %w", err)
	}
	prepared := time.Since(start)

	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	m := &machine{cfg: &cfg, dec: NewDecoder(sc.Nonce), nonce: sc.Nonce, dir: dir}
	res, err := m.run(ctx, qemuPath, cfg.qemuArgs(qemuPath, initrd, m.qmpPath()), timeout)
	if err != nil {
		return nil, err
	}
	res.Timing.Prepare = prepared
	res.Timing.Total = time.Since(start)
	return res, nil
}

// testHookStarted, when set by a test, learns each QEMU process id.
var testHookStarted func(pid int)

// machine is one QEMU process and the state of its console.
type machine struct {
	cfg   *Config
	dec   *Decoder
	nonce string
	dir   string // the run's temporary directory

	// HostMemory: QEMU's serial input, and the QMP client (dialled at the
	// first request). Used by the console reader only.
	stdin io.WriteCloser
	qmp   *qmpClient
	mem   HostMemStats

	// Written by the console reader; read by run only after the reader finished.
	tail     []string
	panicMsg string
	protoErr error
	begin    time.Time
	end      time.Time
}

func (m *machine) run(ctx context.Context, qemu string, args []string, timeout time.Duration) (*Result, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var stderr limitedBuffer
	stderr.max = 16 << 10
	cmd := exec.Command(qemu, args...)
	cmd.Stdin = nil // /dev/null
	var stdinR *os.File
	if m.cfg.HostMemory {
		// The guest's serial input: answers to its memory requests.
		var sw *os.File
		if stdinR, sw, err = os.Pipe(); err != nil {
			w.Close()
			return nil, err
		}
		cmd.Stdin, m.stdin = stdinR, sw
		defer sw.Close()
	}
	cmd.Stdout = w
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	err = cmd.Start()
	if stdinR != nil {
		stdinR.Close()
	}
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("vm: starting %s: %w", qemu, err)
	}
	w.Close()
	defer m.closeQMP()
	pid := cmd.Process.Pid
	if testHookStarted != nil {
		testHookStarted(pid)
	}
	// Learn of QEMU's exit without reaping it: while the leader is an unreaped
	// zombie its process group id cannot be reused, so killing the group is safe
	// on every path; stop reaps it afterwards.
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		var info unix.Siginfo
		for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
		}
	}()
	var exitErr error
	reaped := false
	stop := func() {
		if !reaped {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			exitErr = cmd.Wait()
			reaped = true
		}
	}
	defer stop()

	resultCh := make(chan struct{})   // closed when the decoder is finished
	readerDone := make(chan struct{}) // closed at console EOF
	go m.readConsole(r, resultCh, readerDone)

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var cause error
	select {
	case <-resultCh:
	case <-exited:
	case <-ctx.Done():
		cause = ctx.Err()
	case <-timer.C:
		cause = &TimeoutError{After: timeout}
	}
	stop()
	// QEMU is gone, so the console pipe reaches EOF; bound the wait anyway in case
	// some other process inherited it.
	select {
	case <-readerDone:
	case <-time.After(2 * time.Second):
		r.Close()
		<-readerDone
	}

	switch {
	case m.protoErr != nil:
		return nil, m.protoErr
	case m.dec.Done():
		res, err := decodeResult(m.dec.Payload())
		if err != nil {
			return nil, err
		}
		res.Console = m.tail
		res.HostMem = m.mem
		res.Timing.Boot = m.begin.Sub(start)
		res.Timing.Transfer = m.end.Sub(m.begin)
		return res, nil
	case m.dec.Failure() != "":
		return nil, &GuestFailError{Message: m.dec.Failure()}
	case m.panicMsg != "":
		return nil, &KernelPanicError{Message: m.panicMsg, Console: m.tail}
	case cause != nil:
		var te *TimeoutError
		if errors.As(cause, &te) {
			te.Console = m.tail
			return nil, te
		}
		return nil, fmt.Errorf("vm: guest run stopped: %w", cause)
	default:
		status := "exit status 0"
		if exitErr != nil {
			status = exitErr.Error()
		}
		return nil, &ExitError{Status: status, Stderr: stderr.String(), Console: m.tail}
	}
}

// readConsole feeds console lines to the decoder, keeps the tail, watches for a
// kernel panic and copies non-data lines to Config.Console.
func (m *machine) readConsole(r io.Reader, resultCh, readerDone chan struct{}) {
	defer close(readerDone)
	var once sync.Once
	finish := func() { once.Do(func() { close(resultCh) }) }
	defer finish()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			m.consoleLine(string(line), finish)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

func (m *machine) consoleLine(line string, finish func()) {
	isData := strings.Contains(line, guest.MarkData+" ")
	if !isData {
		if m.cfg.Console != nil {
			io.WriteString(m.cfg.Console, line)
		}
		text := strings.TrimRight(line, "\r\n")
		if text != "" {
			m.tail = append(m.tail, text)
			if len(m.tail) > ConsoleTail {
				m.tail = m.tail[len(m.tail)-ConsoleTail:]
			}
		}
		if m.panicMsg == "" {
			if i := strings.Index(text, "Kernel panic - not syncing"); i >= 0 {
				m.panicMsg = text[i:]
			}
		}
	}
	if m.stdin != nil {
		m.serveMem(line)
	}
	wasStarted := m.dec.Started()
	done, err := m.dec.Line(line)
	if !wasStarted && m.dec.Started() {
		m.begin = time.Now()
	}
	if err != nil && m.protoErr == nil {
		m.protoErr = err
	}
	if done {
		if m.end.IsZero() {
			m.end = time.Now()
		}
		finish()
	}
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
