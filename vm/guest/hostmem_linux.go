//go:build linux

package guest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// hostMem is the guest's side of the host-memory protocol (hostmem.go): it
// prints a request on the console and reads the host's answer from the
// console's input.
type hostMem struct {
	mu    sync.Mutex
	in    *os.File
	br    *bufio.Reader
	out   io.Writer
	nonce string
	seq   int
	raw   bool
}

func newHostMem(in *os.File, out io.Writer, nonce string) *hostMem {
	return &hostMem{in: in, br: bufio.NewReaderSize(in, 2*MaxMemRead+256), out: out, nonce: nonce}
}

// rawInput turns off the console's line editing and echo: an answer line is
// longer than a canonical-mode line may be (4095 bytes), and echoed it would
// come back to the host as console output.
func (h *hostMem) rawInput() error {
	t, err := unix.IoctlGetTermios(int(h.in.Fd()), unix.TCGETS)
	if err != nil {
		return fmt.Errorf("guest: console input: %w", err)
	}
	t.Lflag &^= unix.ICANON | unix.ECHO | unix.ECHONL | unix.ISIG | unix.IEXTEN
	t.Iflag &^= unix.IXON | unix.IXOFF | unix.ICRNL | unix.INLCR | unix.IGNCR
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(int(h.in.Fd()), unix.TCSETS, t); err != nil {
		return fmt.Errorf("guest: console input: %w", err)
	}
	return nil
}

// read asks the host for n bytes (at most MaxMemRead) at kernel address
// addr, translated with the table at ttb (0: the CPU's).
func (h *hostMem) read(addr uint64, n int, ttb uint64) ([]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n < 1 || n > MaxMemRead {
		return nil, fmt.Errorf("guest: host memory read of %d bytes (1..%d)", n, MaxMemRead)
	}
	if !h.raw {
		if err := h.rawInput(); err != nil {
			return nil, err
		}
		h.raw = true
	}
	h.seq++
	r := MemRequest{Seq: h.seq, Addr: addr, Len: n, TTB: ttb}
	if _, err := io.WriteString(h.out, FormatMemRequest(h.nonce, r)); err != nil {
		return nil, err
	}
	for {
		line, err := h.br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("guest: waiting for the host's answer to %d: %w", r.Seq, err)
		}
		b, ok, err := ParseMemReply(line, r)
		if !ok {
			continue // anything else typed on the console
		}
		return b, err
	}
}
