package vm

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/kboost/kboost/vm/guest"
)

// MaxPayload bounds the decoded result a guest may send (bytes).
const MaxPayload = 256 << 20

// Decoder rebuilds the guest's result payload from console lines (see package
// guest for the line grammar). Lines that are not protocol lines (kernel messages,
// guest progress) are ignored; a protocol line that is malformed, out of order or
// fails its checksum is an error, reported as *ProtocolError.
type Decoder struct {
	nonce   string
	line    int
	state   decState
	next    int // next expected data sequence number
	payload bytes.Buffer
	fail    string
	err     error
}

type decState int

const (
	decWaiting decState = iota // before KBOOST-BEGIN
	decData                    // between begin and end
	decDone                    // end marker seen and verified
	decFailed                  // KBOOST-FAIL seen
)

// NewDecoder returns a Decoder accepting only markers carrying nonce.
func NewDecoder(nonce string) *Decoder { return &Decoder{nonce: nonce} }

// Line consumes one console line (with or without its line ending). It returns
// true once the result is complete (or the guest reported failure), and a non-nil
// error, sticky from then on, if the stream is broken.
func (d *Decoder) Line(s string) (bool, error) {
	if d.err != nil {
		return true, d.err
	}
	if d.state == decDone || d.state == decFailed {
		return true, nil
	}
	d.line++
	s = strings.TrimRight(s, "\r\n")
	i := strings.Index(s, "KBOOST-")
	if i < 0 {
		return false, nil
	}
	word, rest, _ := strings.Cut(s[i:], " ")
	switch word {
	case guest.MarkBegin:
		if strings.TrimSpace(rest) != d.nonce {
			return false, nil // another run's marker, or the kernel echoing text
		}
		if d.state != decWaiting {
			return d.errorf("second begin marker")
		}
		d.state = decData
	case guest.MarkFail:
		msg := rest
		if n, m, ok := strings.Cut(rest, " "); ok && (n == d.nonce || n == "") {
			msg = m
		}
		d.fail = strings.TrimSpace(msg)
		if d.fail == "" {
			d.fail = "(no message)"
		}
		d.state = decFailed
		return true, nil
	case guest.MarkData:
		if d.state != decData {
			return false, nil
		}
		return false, d.data(rest)
	case guest.MarkEnd:
		if d.state != decData {
			return false, nil
		}
		return d.end(rest)
	}
	return false, nil
}

func (d *Decoder) data(rest string) error {
	f := strings.Fields(rest)
	if len(f) != 3 {
		_, err := d.errorf("data line with %d fields, want 3 (a kernel message may have split it)", len(f))
		return err
	}
	seq, err := strconv.Atoi(f[0])
	if err != nil || seq != d.next {
		_, err := d.errorf("data line %q out of sequence, want %d", f[0], d.next)
		return err
	}
	want, err := strconv.ParseUint(f[1], 16, 32)
	if err != nil || len(f[1]) != 8 {
		_, err := d.errorf("bad checksum field %q", f[1])
		return err
	}
	if got := crc32.ChecksumIEEE([]byte(f[2])); uint64(got) != want {
		_, err := d.errorf("data line %d checksum %08x, want %08x (console output garbled)", seq, got, want)
		return err
	}
	if len(f[2])%4 != 0 {
		_, err := d.errorf("data line %d has %d base64 characters, not a multiple of 4", seq, len(f[2]))
		return err
	}
	b, err := base64.StdEncoding.DecodeString(f[2])
	if err != nil {
		_, err := d.errorf("data line %d: %v", seq, err)
		return err
	}
	if d.payload.Len()+len(b) > MaxPayload {
		_, err := d.errorf("result larger than %d bytes", MaxPayload)
		return err
	}
	d.payload.Write(b)
	d.next++
	return nil
}

func (d *Decoder) end(rest string) (bool, error) {
	f := strings.Fields(rest)
	if len(f) != 4 {
		return d.errorf("end line with %d fields, want 4", len(f))
	}
	if f[0] != d.nonce {
		return d.errorf("end marker for run %q inside run %q", f[0], d.nonce)
	}
	if n, err := strconv.Atoi(f[1]); err != nil || n != d.next {
		return d.errorf("end marker counts %s data lines, received %d", f[1], d.next)
	}
	if n, err := strconv.Atoi(f[2]); err != nil || n != d.payload.Len() {
		return d.errorf("end marker counts %s bytes, received %d", f[2], d.payload.Len())
	}
	sum := sha256.Sum256(d.payload.Bytes())
	if hex.EncodeToString(sum[:]) != strings.ToLower(f[3]) {
		return d.errorf("payload SHA-256 mismatch")
	}
	d.state = decDone
	return true, nil
}

func (d *Decoder) errorf(format string, args ...any) (bool, error) {
	d.err = &ProtocolError{Line: d.line, Reason: fmt.Sprintf(format, args...)}
	return true, d.err
}

// Done reports whether the end marker has been verified.
func (d *Decoder) Done() bool { return d.state == decDone }

// Started reports whether the begin marker has been seen.
func (d *Decoder) Started() bool { return d.state != decWaiting }

// Failure returns the guest's KBOOST-FAIL message, or "".
func (d *Decoder) Failure() string { return d.fail }

// Payload returns the verified payload, or nil before Done.
func (d *Decoder) Payload() []byte {
	if d.state != decDone {
		return nil
	}
	return d.payload.Bytes()
}
