package gdbserial

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// checksum of a payload, computed here independently of encodePacket: the
// RSP checksum is the sum of the payload bytes modulo 256.
func rspSum(b string) string {
	var s int
	for i := 0; i < len(b); i++ {
		s += int(b[i])
	}
	return fmt.Sprintf("%02x", s%256)
}

var timeZero time.Time

func TestParsePacket(t *testing.T) {
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{"$OK#" + rspSum("OK"), "OK", true},
		{"++$T05thread:01;#" + rspSum("T05thread:01;"), "T05thread:01;", true},
		{"$0* #" + rspSum("0* "), "0000", true},        // run length: ' ' = 32 - 29 = 3 more
		{"$a}\x03b#" + rspSum("a}\x03b"), "a#b", true}, // escaped '#'
		{"$OK#" + rspSum("OK")[:1], "", false},         // incomplete
	} {
		p, _, ok, err := parsePacket([]byte(c.in))
		if err != nil || ok != c.ok || (ok && string(p) != c.want) {
			t.Errorf("parsePacket(%q) = %q, %v, %v; want %q, %v", c.in, p, ok, err, c.want, c.ok)
		}
	}
	if _, _, _, err := parsePacket([]byte("$OK#00")); err == nil {
		t.Error("bad checksum accepted")
	}
}

func TestParseStopReply(t *testing.T) {
	r, err := parseStopReply([]byte("T0bthread:p01.01;20:0000;"))
	if err != nil || r.Kind != StopSignal || r.Signal != 11 || len(r.Pairs) != 2 || r.Pairs[0][0] != "thread" {
		t.Errorf("T0b: %+v %v", r, err)
	}
	if r, err := parseStopReply([]byte("W00")); err != nil || r.Kind != StopExited {
		t.Errorf("W00: %+v %v", r, err)
	}
	if r, err := parseStopReply([]byte("X09")); err != nil || r.Kind != StopKilled || r.Signal != 9 {
		t.Errorf("X09: %+v %v", r, err)
	}
	for _, bad := range []string{"", "T", "Zxx", "Tzz"} {
		if _, err := parseStopReply([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// fakeStub answers RSP requests on one end of a pipe, in ack mode, like a
// gdb stub with 16 bytes of memory at 0x1000 and a 3-register file.
func fakeStub(t *testing.T, c net.Conn, corruptFirst bool) {
	r := bufio.NewReader(c)
	mem := make([]byte, 16)
	regs := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	reply := func(p string) {
		sum := rspSum(p)
		if corruptFirst {
			corruptFirst = false
			fmt.Fprintf(c, "$%s#%02x", p, 0) // wrong checksum: the client must NAK
			if b, _ := r.ReadByte(); b != '-' {
				t.Errorf("client answered %q to a bad checksum, want '-'", b)
			}
		}
		fmt.Fprintf(c, "$%s#%s", p, sum)
		if b, _ := r.ReadByte(); b != '+' {
			t.Errorf("no ack for %q", p)
		}
	}
	for {
		b, err := r.ReadByte()
		if err != nil {
			return
		}
		if b != '$' {
			continue
		}
		pkt, err := r.ReadString('#')
		if err != nil {
			return
		}
		var cs [2]byte
		io.ReadFull(r, cs[:])
		req := strings.TrimSuffix(pkt, "#")
		if string(cs[:]) != rspSum(req) {
			t.Errorf("client sent checksum %s for %q", cs, req)
		}
		c.Write([]byte{'+'})
		switch {
		case strings.HasPrefix(req, "qSupported"):
			reply("PacketSize=1000;qXfer:features:read+")
		case req == "g":
			reply(hex.EncodeToString(regs))
		case strings.HasPrefix(req, "m1000,"):
			reply(hex.EncodeToString(mem[:4]))
		case strings.HasPrefix(req, "M1000,4:"):
			b, _ := hex.DecodeString(req[len("M1000,4:"):])
			copy(mem, b)
			reply("OK")
		case req == "c", req == "C05":
			reply("T05thread:01;")
		case strings.HasPrefix(req, "qXfer:features:read:target.xml:"):
			reply(`l<target><feature name="core"><reg name="x0" bitsize="64"/><reg name="pc" bitsize="64" regnum="32"/></feature></target>`)
		default:
			reply("")
		}
	}
}

func TestRSPClientAgainstFakeStub(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	go fakeStub(t, b, true)
	c := newRSPConn(a)
	if err := c.handshake(); err != nil {
		t.Fatal(err)
	}
	if c.noAck {
		t.Error("no-ack mode without QStartNoAckMode+")
	}
	if !strings.Contains(c.Features, "PacketSize") {
		t.Errorf("features %q", c.Features)
	}
	regs, err := c.readRegs()
	if err != nil || !bytes.Equal(regs, []byte{1, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("g: %x %v", regs, err)
	}
	if err := c.writeMem(0x1000, []byte{0xde, 0xad, 0xbe, 0xef}); err != nil {
		t.Fatal(err)
	}
	m, err := c.readMem(0x1000, 4)
	if err != nil || !bytes.Equal(m, []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Errorf("m: %x %v", m, err)
	}
	if err := c.interrupt(); err != nil { // a break byte between packets: ignored by an idle stub
		t.Fatal(err)
	}
	if err := c.resume(false, 5); err != nil {
		t.Fatal(err)
	}
	st, err := c.wait(timeZero)
	if err != nil || st.Signal != 5 {
		t.Errorf("stop %+v %v", st, err)
	}
	tr, err := c.readTargetRegs()
	if err != nil || len(tr) != 2 || tr[1].Name != "pc" || tr[1].Num != 32 || tr[0].Bits != 64 {
		t.Errorf("target regs %+v %v", tr, err)
	}
}

// FuzzRSP feeds arbitrary bytes to the packet, stop-reply and
// target-description parsers: no panic, and a packet built by encodePacket
// always parses back to its payload.
func FuzzRSP(f *testing.F) {
	f.Add([]byte("$T05thread:01;#07"))
	f.Add([]byte("$0*\"#00"))
	f.Add([]byte("+$a}\x03#00"))
	f.Add([]byte(`<target><xi:include href="a.xml"/><feature name="x"><reg name="pc" bitsize="64" regnum="32"/></feature></target>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		parsePacket(b)
		parseStopReply(b)
		parseTargetXML(b, func(string) ([]byte, error) { return b, nil })
		decodeHex(b, "x")
		enc := encodePacket(nil, b)
		p, n, ok, err := parsePacket(enc)
		if err != nil || !ok || n != len(enc) || !bytes.Equal(p, b) {
			t.Fatalf("round trip of %q: %q %d %v %v", b, p, n, ok, err)
		}
	})
}
