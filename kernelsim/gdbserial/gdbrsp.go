package gdbserial

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// This file is a client for the gdb remote serial protocol (RSP), enough to
// drive a qemu-user gdb stub: packets with checksums, run-length encoding
// and escapes, ack mode (and QStartNoAckMode when the stub has it), register
// and memory access, execution control and stop replies.

// ErrRSP: the gdb stub sent something that is not a valid RSP packet, or
// refused a request.
var ErrRSP = errors.New("kernelsim: gdb remote protocol error")

// RSPError is an error reply ("Exx") or a malformed exchange.
type RSPError struct {
	Cmd string // the request (truncated)
	Msg string
}

func (e *RSPError) Error() string { return fmt.Sprintf("kernelsim: gdb stub: %s: %s", e.Cmd, e.Msg) }
func (e *RSPError) Unwrap() error { return ErrRSP }

// parsePacket finds the first packet in b: skips acks ('+', '-') and any
// bytes before '$', then reads the payload up to '#' and two hex checksum
// digits. It returns the decoded payload (escapes '}' x^0x20 and run-length
// '*' expanded), the number of bytes of b consumed, and whether a packet
// was complete. A checksum mismatch is an error (consumed still advances
// past the packet so a caller can ask for a retransmission).
func parsePacket(b []byte) (payload []byte, consumed int, ok bool, err error) {
	start := bytes.IndexByte(b, '$')
	if start < 0 {
		return nil, len(b), false, nil
	}
	end := bytes.IndexByte(b[start:], '#')
	if end < 0 || start+end+3 > len(b) {
		return nil, start, false, nil
	}
	end += start
	raw := b[start+1 : end]
	consumed = end + 3
	want, perr := strconv.ParseUint(string(b[end+1:end+3]), 16, 8)
	if perr != nil {
		return nil, consumed, false, &RSPError{Cmd: "packet", Msg: fmt.Sprintf("bad checksum digits %q", b[end+1:end+3])}
	}
	var sum byte
	for _, c := range raw {
		sum += c
	}
	if sum != byte(want) {
		return nil, consumed, false, &RSPError{Cmd: "packet", Msg: fmt.Sprintf("checksum %02x, computed %02x", want, sum)}
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch c {
		case '}':
			if i+1 >= len(raw) {
				return nil, consumed, false, &RSPError{Cmd: "packet", Msg: "escape at the end of the packet"}
			}
			i++
			out = append(out, raw[i]^0x20)
		case '*':
			if len(out) == 0 || i+1 >= len(raw) {
				return nil, consumed, false, &RSPError{Cmd: "packet", Msg: "run-length mark without a preceding byte"}
			}
			i++
			n := int(raw[i]) - 29
			if n < 0 {
				return nil, consumed, false, &RSPError{Cmd: "packet", Msg: fmt.Sprintf("bad run-length count %#x", raw[i])}
			}
			last := out[len(out)-1]
			for range n {
				out = append(out, last)
			}
		default:
			out = append(out, c)
		}
	}
	return out, consumed, true, nil
}

// encodePacket frames payload: $payload#cs, escaping '$', '#', '}' and '*'.
func encodePacket(dst, payload []byte) []byte {
	dst = append(dst, '$')
	var sum byte
	for _, c := range payload {
		if c == '$' || c == '#' || c == '}' || c == '*' {
			dst = append(dst, '}')
			sum += '}'
			c ^= 0x20
		}
		dst = append(dst, c)
		sum += c
	}
	return append(dst, '#', hexDigits[sum>>4], hexDigits[sum&15])
}

const hexDigits = "0123456789abcdef"

// StopKind is how a stop reply says the target stopped.
type StopKind uint8

const (
	StopSignal StopKind = iota // "S sig" / "T sig ...": stopped by a signal
	StopExited                 // "W code": the process exited
	StopKilled                 // "X sig": the process was killed by a signal
)

// StopReply is a parsed stop reply. Signal uses gdb's signal numbering
// (GDB_SIGNAL_*: 4 ILL, 5 TRAP, 8 FPE, 10 BUS, 11 SEGV, 12 SYS, 30 USR1).
type StopReply struct {
	Kind   StopKind
	Signal int // signal number (StopSignal, StopKilled) or exit status (StopExited)
	// Pairs are the "n:r;" fields of a T reply, in order.
	Pairs [][2]string
}

// parseStopReply parses a stop reply packet payload.
func parseStopReply(p []byte) (StopReply, error) {
	var r StopReply
	if len(p) < 3 {
		return r, &RSPError{Cmd: "stop reply", Msg: fmt.Sprintf("%q is too short", p)}
	}
	v, err := strconv.ParseUint(string(p[1:3]), 16, 8)
	if err != nil {
		return r, &RSPError{Cmd: "stop reply", Msg: fmt.Sprintf("%q: bad number", p)}
	}
	r.Signal = int(v)
	switch p[0] {
	case 'S':
	case 'T':
		for _, f := range strings.Split(string(p[3:]), ";") {
			if f == "" {
				continue
			}
			k, val, ok := strings.Cut(f, ":")
			if !ok {
				return r, &RSPError{Cmd: "stop reply", Msg: fmt.Sprintf("field %q without ':'", f)}
			}
			r.Pairs = append(r.Pairs, [2]string{k, val})
		}
	case 'W':
		r.Kind = StopExited
	case 'X':
		r.Kind = StopKilled
	default:
		return r, &RSPError{Cmd: "stop reply", Msg: fmt.Sprintf("unexpected reply %q", p)}
	}
	return r, nil
}

// rspConn is one connection to a gdb stub.
type rspConn struct {
	rw      io.ReadWriter
	r       *bufio.Reader
	noAck   bool
	out     []byte
	in      []byte
	setDead func(time.Time) error // read deadline of the connection, when it has one
	// Features is the stub's qSupported reply.
	Features string
}

func newRSPConn(rw io.ReadWriter) *rspConn {
	c := &rspConn{rw: rw, r: bufio.NewReaderSize(rw, 1<<16)}
	if d, ok := rw.(interface{ SetReadDeadline(time.Time) error }); ok {
		c.setDead = d.SetReadDeadline
	}
	return c
}

// send writes one packet and, in ack mode, waits for '+' (retransmitting on
// '-', up to three times).
func (c *rspConn) send(payload []byte) error {
	c.out = encodePacket(c.out[:0], payload)
	for try := 0; ; try++ {
		if _, err := c.rw.Write(c.out); err != nil {
			return err
		}
		if c.noAck {
			return nil
		}
		b, err := c.r.ReadByte()
		if err != nil {
			return err
		}
		switch b {
		case '+':
			return nil
		case '-':
			if try < 3 {
				continue
			}
			return &RSPError{Cmd: cut(payload), Msg: "the stub keeps rejecting the packet"}
		default:
			// a packet before the ack (some stubs send the reply at once)
			if err := c.r.UnreadByte(); err != nil {
				return err
			}
			return nil
		}
	}
}

// recv reads one packet, acknowledging it in ack mode; packets with a bad
// checksum are answered with '-' and read again.
func (c *rspConn) recv() ([]byte, error) {
	for bad := 0; ; {
		b, err := c.r.ReadByte()
		if err != nil {
			return nil, err
		}
		if b != '$' {
			continue // acks and noise between packets
		}
		c.in = append(c.in[:0], '$')
		for {
			b, err := c.r.ReadByte()
			if err != nil {
				return nil, err
			}
			c.in = append(c.in, b)
			if b == '#' {
				break
			}
			if len(c.in) > 1<<22 {
				return nil, &RSPError{Cmd: "recv", Msg: "packet larger than 4 MiB"}
			}
		}
		var cs [2]byte
		if _, err := io.ReadFull(c.r, cs[:]); err != nil {
			return nil, err
		}
		c.in = append(c.in, cs[:]...)
		p, _, ok, perr := parsePacket(c.in)
		if perr != nil || !ok {
			if bad++; bad > 3 || c.noAck {
				return nil, fmt.Errorf("%w (after %d tries)", perr, bad)
			}
			if _, err := c.rw.Write([]byte{'-'}); err != nil {
				return nil, err
			}
			continue
		}
		if !c.noAck {
			if _, err := c.rw.Write([]byte{'+'}); err != nil {
				return nil, err
			}
		}
		return p, nil
	}
}

// cmd sends a request and returns the reply; "Exx" replies are errors.
func (c *rspConn) cmd(req string) ([]byte, error) {
	if err := c.send([]byte(req)); err != nil {
		return nil, err
	}
	p, err := c.recv()
	if err != nil {
		return nil, err
	}
	if len(p) == 3 && p[0] == 'E' {
		return p, &RSPError{Cmd: cut([]byte(req)), Msg: "error " + string(p[1:])}
	}
	return p, nil
}

func cut(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// handshake negotiates features and, when the stub offers it, no-ack mode.
func (c *rspConn) handshake() error {
	p, err := c.cmd("qSupported:xmlRegisters=aarch64,arm,i386;swbreak+;hwbreak+;vContSupported+")
	if err != nil {
		return err
	}
	c.Features = string(p)
	if strings.Contains(c.Features, "QStartNoAckMode+") {
		if p, err := c.cmd("QStartNoAckMode"); err == nil && string(p) == "OK" {
			c.noAck = true
		}
	}
	return nil
}

// readRegs returns the raw 'g' register block.
func (c *rspConn) readRegs() ([]byte, error) {
	p, err := c.cmd("g")
	if err != nil {
		return nil, err
	}
	return decodeHex(p, "g")
}

// writeRegs writes the raw 'G' register block.
func (c *rspConn) writeRegs(b []byte) error {
	return c.expectOK("G" + hex.EncodeToString(b))
}

// writeReg writes one register ('P n=value', little-endian bytes).
func (c *rspConn) writeReg(n int, v []byte) error {
	return c.expectOK(fmt.Sprintf("P%x=%s", n, hex.EncodeToString(v)))
}

// readMem reads n bytes at addr ('m'), in chunks the stub accepts.
func (c *rspConn) readMem(addr uint64, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for n > 0 {
		k := min(n, 2048)
		p, err := c.cmd(fmt.Sprintf("m%x,%x", addr, k))
		if err != nil {
			return nil, err
		}
		b, err := decodeHex(p, "m")
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, &RSPError{Cmd: "m", Msg: "empty reply"}
		}
		out = append(out, b...)
		addr += uint64(len(b))
		n -= len(b)
	}
	return out, nil
}

// writeMem writes b at addr ('M').
func (c *rspConn) writeMem(addr uint64, b []byte) error {
	for len(b) > 0 {
		k := min(len(b), 2048)
		if err := c.expectOK(fmt.Sprintf("M%x,%x:%s", addr, k, hex.EncodeToString(b[:k]))); err != nil {
			return err
		}
		addr += uint64(k)
		b = b[k:]
	}
	return nil
}

// setBreak inserts (or removes) a software breakpoint ('Z0'/'z0').
func (c *rspConn) setBreak(addr uint64, on bool, kind int) error {
	op := 'z'
	if on {
		op = 'Z'
	}
	return c.expectOK(fmt.Sprintf("%c0,%x,%x", op, addr, kind))
}

func (c *rspConn) expectOK(req string) error {
	p, err := c.cmd(req)
	if err != nil {
		return err
	}
	if string(p) != "OK" {
		return &RSPError{Cmd: cut([]byte(req)), Msg: fmt.Sprintf("reply %q, want OK", cut(p))}
	}
	return nil
}

// resume continues ('c', or 'Csig' delivering gdb signal sig) or steps ('s',
// 'Ssig') without waiting for the stop reply.
func (c *rspConn) resume(step bool, sig int) error {
	op := "c"
	if step {
		op = "s"
	}
	if sig != 0 {
		op = fmt.Sprintf("%s%02x", strings.ToUpper(op), sig)
	}
	return c.send([]byte(op))
}

// wait reads packets until a stop reply arrives (console output 'O' is
// skipped). With a deadline, a read that times out returns an error
// satisfying os.IsTimeout.
func (c *rspConn) wait(deadline time.Time) (StopReply, error) {
	if c.setDead != nil {
		c.setDead(deadline)
		defer c.setDead(time.Time{})
	}
	for {
		p, err := c.recv()
		if err != nil {
			return StopReply{}, err
		}
		if len(p) > 0 && p[0] == 'O' && string(p) != "OK" {
			continue
		}
		return parseStopReply(p)
	}
}

// interrupt sends the out-of-band break (0x03).
func (c *rspConn) interrupt() error {
	_, err := c.rw.Write([]byte{0x03})
	return err
}

// readFeatures reads an annex of the target description
// (qXfer:features:read), following the stub's chunking.
func (c *rspConn) readFeatures(annex string) ([]byte, error) {
	var out []byte
	for off := 0; ; {
		p, err := c.cmd(fmt.Sprintf("qXfer:features:read:%s:%x,%x", annex, off, 0x3f0))
		if err != nil {
			return nil, err
		}
		if len(p) == 0 || (p[0] != 'm' && p[0] != 'l') {
			return nil, &RSPError{Cmd: "qXfer:features:read:" + annex, Msg: fmt.Sprintf("reply %q", cut(p))}
		}
		out = append(out, p[1:]...)
		off += len(p) - 1
		if p[0] == 'l' {
			return out, nil
		}
	}
}

// TargetReg is one register of a target description.
type TargetReg struct {
	Name    string
	Bits    int
	Num     int // gdb register number
	Feature string
}

// readTargetRegs reads target.xml and its includes and lists the registers
// in register-number order.
func (c *rspConn) readTargetRegs() ([]TargetReg, error) {
	top, err := c.readFeatures("target.xml")
	if err != nil {
		return nil, err
	}
	return parseTargetXML(top, c.readFeatures)
}

type tdescXML struct {
	Includes []struct {
		Href string `xml:"href,attr"`
	} `xml:"include"`
	Features []tdescFeature `xml:"feature"`
	Regs     []tdescReg     `xml:"reg"`
	Name     string         `xml:"name,attr"`
}

type tdescFeature struct {
	Name string     `xml:"name,attr"`
	Regs []tdescReg `xml:"reg"`
}

type tdescReg struct {
	Name    string `xml:"name,attr"`
	Bitsize string `xml:"bitsize,attr"`
	Regnum  string `xml:"regnum,attr"`
}

// parseTargetXML parses a target description, fetching included documents
// with fetch (nil: includes are ignored).
func parseTargetXML(top []byte, fetch func(string) ([]byte, error)) ([]TargetReg, error) {
	var regs []TargetReg
	next := 0
	add := func(feature string, rs []tdescReg) error {
		for _, r := range rs {
			bits, err := strconv.Atoi(r.Bitsize)
			if err != nil || bits <= 0 || bits > 4096 {
				return &RSPError{Cmd: "target.xml", Msg: fmt.Sprintf("register %q: bad bitsize %q", r.Name, r.Bitsize)}
			}
			n := next
			if r.Regnum != "" {
				if n, err = strconv.Atoi(r.Regnum); err != nil || n < 0 || n > 1<<16 {
					return &RSPError{Cmd: "target.xml", Msg: fmt.Sprintf("register %q: bad regnum %q", r.Name, r.Regnum)}
				}
			}
			regs = append(regs, TargetReg{Name: r.Name, Bits: bits, Num: n, Feature: feature})
			next = n + 1
		}
		return nil
	}
	var walk func(doc []byte, depth int) error
	walk = func(doc []byte, depth int) error {
		if depth > 4 {
			return &RSPError{Cmd: "target.xml", Msg: "includes nested too deeply"}
		}
		var d tdescXML
		if err := xml.Unmarshal(doc, &d); err != nil {
			return &RSPError{Cmd: "target.xml", Msg: err.Error()}
		}
		if d.Name != "" && len(d.Regs) > 0 { // an included <feature> document
			if err := add(d.Name, d.Regs); err != nil {
				return err
			}
		}
		for _, f := range d.Features {
			if err := add(f.Name, f.Regs); err != nil {
				return err
			}
		}
		for _, in := range d.Includes {
			if fetch == nil {
				continue
			}
			sub, err := fetch(in.Href)
			if err != nil {
				return err
			}
			if err := walk(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(top, 0); err != nil {
		return nil, err
	}
	return regs, nil
}

func decodeHex(p []byte, what string) ([]byte, error) {
	// 'xx' marks unavailable bytes in register replies: read as zero
	q := bytes.ReplaceAll(p, []byte("xx"), []byte("00"))
	b := make([]byte, hex.DecodedLen(len(q)))
	if _, err := hex.Decode(b, q); err != nil {
		return nil, &RSPError{Cmd: what, Msg: fmt.Sprintf("reply %q is not hex", cut(p))}
	}
	return b, nil
}
