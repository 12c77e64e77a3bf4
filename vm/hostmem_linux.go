//go:build linux

package vm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/vm/guest"
)

// The host side of guest.Scenario.HostMemory: the console reader answers
// each KBOOST-MEM request by reading guest memory through QEMU's QMP monitor
// and writing the answer to QEMU's serial input.

func (m *machine) qmpPath() string { return filepath.Join(m.dir, "qmp.sock") }

// serveMem answers line if it is a memory request of this run.
func (m *machine) serveMem(line string) {
	req, ok, err := guest.ParseMemRequest(line, m.nonce)
	if !ok {
		return
	}
	var b []byte
	if err == nil {
		start := time.Now()
		b, err = m.readGuest(req)
		m.mem.Requests++
		m.mem.Bytes += len(b)
		m.mem.Time += time.Since(start)
	}
	if err != nil {
		m.mem.Errors++
	}
	if _, werr := io.WriteString(m.stdin, guest.FormatMemReply(req.Seq, b, err)); werr != nil && m.protoErr == nil {
		m.protoErr = &ProtocolError{Reason: "answering the guest's memory request: " + werr.Error()}
	}
}

// readGuest reads the guest virtual memory a request names, with the guest
// stopped: translated by the guest CPU's current page tables, or, when the
// request names a translation table, by walking that table (Arch.WalkTTB)
// and reading physical memory page by page.
func (m *machine) readGuest(req guest.MemRequest) ([]byte, error) {
	if m.qmp == nil {
		q, err := dialQMP(m.qmpPath(), 10*time.Second)
		if err != nil {
			return nil, err
		}
		m.qmp = q
	}
	file := filepath.Join(m.dir, "memsave.bin")
	if req.TTB == 0 {
		return m.qmp.read("memsave", req.Addr, req.Len, file)
	}
	walk := m.cfg.arch().WalkTTB
	if walk == nil {
		return nil, fmt.Errorf("vm: no page-table walker for %s guests", m.cfg.arch().Name)
	}
	readPhys := func(pa uint64, n int) ([]byte, error) { return m.qmp.read("pmemsave", pa, n, file) }
	var out []byte
	for va, end := req.Addr, req.Addr+uint64(req.Len); va < end; {
		next := min(va&^0xFFF+0x1000, end)
		pa, err := walk(readPhys, req.TTB, va)
		if err != nil {
			return nil, err
		}
		b, err := readPhys(pa, int(next-va))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		va = next
	}
	return out, nil
}

func (m *machine) closeQMP() {
	if m.qmp != nil {
		m.qmp.close()
	}
}

// qmpClient speaks QEMU's machine protocol (QMP: one JSON object per
// message) on a unix socket, one command at a time.
type qmpClient struct {
	conn net.Conn
	dec  *json.Decoder
}

// QMPError is QEMU's error answer to a QMP command.
type QMPError struct {
	Command, Class, Desc string
}

func (e *QMPError) Error() string {
	return fmt.Sprintf("vm: QEMU monitor: %s: %s (%s)", e.Command, e.Desc, e.Class)
}

// dialQMP connects to QEMU's QMP socket (retrying until timeout while QEMU
// creates it), reads the greeting and leaves capabilities negotiation.
func dialQMP(path string, timeout time.Duration) (*qmpClient, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			conn = c
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("vm: QEMU monitor socket %s: %w", path, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	q := &qmpClient{conn: conn, dec: json.NewDecoder(bufio.NewReader(conn))}
	var greet struct {
		QMP json.RawMessage `json:"QMP"`
	}
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if err := q.dec.Decode(&greet); err != nil || greet.QMP == nil {
		conn.Close()
		return nil, fmt.Errorf("vm: QEMU monitor: no QMP greeting (%v)", err)
	}
	if _, err := q.exec("qmp_capabilities", nil); err != nil {
		conn.Close()
		return nil, err
	}
	return q, nil
}

func (q *qmpClient) close() { q.conn.Close() }

// exec runs one command and returns its "return" value, skipping the
// asynchronous events QEMU sends in between.
func (q *qmpClient) exec(cmd string, args any) (json.RawMessage, error) {
	req := map[string]any{"execute": cmd}
	if args != nil {
		req["arguments"] = args
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	_ = q.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := q.conn.Write(b); err != nil {
		return nil, fmt.Errorf("vm: QEMU monitor: %s: %w", cmd, err)
	}
	for {
		var msg struct {
			Return json.RawMessage `json:"return"`
			Error  *struct {
				Class string `json:"class"`
				Desc  string `json:"desc"`
			} `json:"error"`
			Event string `json:"event"`
		}
		if err := q.dec.Decode(&msg); err != nil {
			return nil, fmt.Errorf("vm: QEMU monitor: %s: %w", cmd, err)
		}
		switch {
		case msg.Event != "":
			continue
		case msg.Error != nil:
			return nil, &QMPError{Command: cmd, Class: msg.Error.Class, Desc: msg.Error.Desc}
		case msg.Return != nil:
			return msg.Return, nil
		}
	}
}

// read stops the guest, saves n bytes of its memory at addr into file (QMP
// memsave: virtual, translated by the guest CPU's MMU; pmemsave: physical),
// lets the guest run again and returns the bytes.
func (q *qmpClient) read(cmd string, addr uint64, n int, file string) ([]byte, error) {
	if _, err := q.exec("stop", nil); err != nil {
		return nil, err
	}
	_, err := q.exec(cmd, map[string]any{"val": int64(addr), "size": n, "filename": file})
	if _, cerr := q.exec("cont", nil); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if len(b) != n {
		return nil, fmt.Errorf("vm: QEMU monitor: %s wrote %d bytes, want %d", cmd, len(b), n)
	}
	return b, nil
}
