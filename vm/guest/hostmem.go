package guest

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Host memory reads. A kernel without /proc/kcore (Debian's armmp) cannot
// show the guest its own slot pages; the host can, through QEMU. When the
// scenario says so (Scenario.HostMemory), a step asks the host to read guest
// kernel virtual memory with a console line and waits for the answer on the
// console's input:
//
//	KBOOST-MEM <nonce> <seq> <addr> <len> [<ttb>]   guest -> host (hex addresses)
//	KBOOST-MEMR <seq> <hex bytes>               host -> guest
//	KBOOST-MEMR <seq> ERR <message>             host -> guest, the read failed
//
// seq counts the guest's requests from 1; len is at most MaxMemRead. Without
// ttb the host translates addr with the guest CPU's current page tables,
// which need not map every kernel address (32-bit ARM: a process's first-level
// table learns of new module-area mappings only when it faults on them);
// with ttb, the physical address of the kernel's own translation table
// (init_mm's), the host walks that table itself (Arch.WalkTTB) and reads
// physical memory. The host reads while the guest waits for the answer, so
// what it reads is what the kernel holds at that point of the step.

const (
	MarkMem      = "KBOOST-MEM"  // the guest's request
	MarkMemReply = "KBOOST-MEMR" // the host's answer
)

// MaxMemRead bounds one request (bytes): a page.
const MaxMemRead = 4096

// MemRequest is one parsed KBOOST-MEM line.
type MemRequest struct {
	Seq  int
	Addr uint64
	Len  int
	TTB  uint64 // physical address of the translation table to walk; 0: the CPU's
}

// ErrMemLine reports a malformed host-memory protocol line.
var ErrMemLine = errors.New("guest: malformed host-memory line")

// FormatMemRequest is the request line (with its newline).
func FormatMemRequest(nonce string, r MemRequest) string {
	if r.TTB != 0 {
		return fmt.Sprintf("%s %s %d %x %d %x\n", MarkMem, nonce, r.Seq, r.Addr, r.Len, r.TTB)
	}
	return fmt.Sprintf("%s %s %d %x %d\n", MarkMem, nonce, r.Seq, r.Addr, r.Len)
}

// ParseMemRequest parses a console line. ok is false for lines that are not
// a request carrying nonce (kernel messages, another run's text); a request
// with the nonce but bad fields is an error.
func ParseMemRequest(line, nonce string) (r MemRequest, ok bool, err error) {
	line = strings.TrimRight(line, "\r\n")
	i := strings.Index(line, MarkMem+" ")
	if i < 0 {
		return r, false, nil
	}
	f := strings.Fields(line[i+len(MarkMem):])
	if len(f) < 1 || f[0] != nonce {
		return r, false, nil
	}
	if len(f) != 4 && len(f) != 5 {
		return r, true, fmt.Errorf("%w: request %q: want %s <nonce> <seq> <addr> <len> [<ttb>]", ErrMemLine, line[i:], MarkMem)
	}
	seq, err1 := strconv.Atoi(f[1])
	addr, err2 := strconv.ParseUint(f[2], 16, 64)
	n, err3 := strconv.Atoi(f[3])
	var ttb uint64
	var err4 error
	if len(f) == 5 {
		if ttb, err4 = strconv.ParseUint(f[4], 16, 64); err4 == nil && ttb == 0 {
			err4 = ErrMemLine
		}
	}
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || seq < 1 || n < 1 || n > MaxMemRead {
		return r, true, fmt.Errorf("%w: request %q: seq, address, length (1..%d) or table out of range", ErrMemLine, line[i:], MaxMemRead)
	}
	return MemRequest{Seq: seq, Addr: addr, Len: n, TTB: ttb}, true, nil
}

// FormatMemReply is the answer line to request seq: the bytes read, or the
// error (one line).
func FormatMemReply(seq int, b []byte, err error) string {
	if err != nil {
		msg := strings.Join(strings.Fields(err.Error()), " ")
		return fmt.Sprintf("%s %d ERR %s\n", MarkMemReply, seq, msg)
	}
	return fmt.Sprintf("%s %d %s\n", MarkMemReply, seq, hex.EncodeToString(b))
}

// HostMemError is the host's report that it could not read guest memory.
type HostMemError struct {
	Addr uint64
	Msg  string
}

func (e *HostMemError) Error() string {
	return fmt.Sprintf("guest: the host could not read %#x: %s", e.Addr, e.Msg)
}

// ParseMemReply parses an answer line. ok is false for a line that is not an
// answer; an answer to another request or with bad hex is an error, and a
// host error is a *HostMemError.
func ParseMemReply(line string, r MemRequest) (b []byte, ok bool, err error) {
	line = strings.TrimRight(line, "\r\n")
	i := strings.Index(line, MarkMemReply+" ")
	if i < 0 {
		return nil, false, nil
	}
	seqS, rest, _ := strings.Cut(line[i+len(MarkMemReply)+1:], " ")
	seq, err := strconv.Atoi(seqS)
	if err != nil {
		return nil, true, fmt.Errorf("%w: answer %.60q: bad sequence number", ErrMemLine, line[i:])
	}
	if seq != r.Seq {
		return nil, true, fmt.Errorf("%w: answer %d to request %d", ErrMemLine, seq, r.Seq)
	}
	if msg, isErr := strings.CutPrefix(rest, "ERR "); isErr {
		return nil, true, &HostMemError{Addr: r.Addr, Msg: msg}
	}
	b, err = hex.DecodeString(rest)
	if err != nil || len(b) != r.Len {
		return nil, true, fmt.Errorf("%w: answer %d: %d bytes of valid hex, want %d", ErrMemLine, seq, len(b), r.Len)
	}
	return b, true, nil
}

// hostMemReader is the guest's connection to the host (hostmem_linux.go).
type hostMemReader interface {
	read(addr uint64, n int, ttb uint64) ([]byte, error)
}

// hostMemTTB reads through the host, translating with one table.
type hostMemTTB struct {
	h   hostMemReader
	ttb uint64
}

func (r hostMemTTB) Read(addr uint64, n int) ([]byte, error) { return r.h.read(addr, n, r.ttb) }
