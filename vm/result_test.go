package vm

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand"
	"strings"
	"testing"

	"github.com/kboost/kboost/vm/guest"
)

// specLines encodes payload following the documented line grammar, written here
// independently of guest.Emit so the decoder is checked against the spec, not
// against its twin.
func specLines(nonce string, payload []byte, chunk int) []string {
	enc := base64.StdEncoding.EncodeToString(payload)
	lines := []string{"KBOOST-BEGIN " + nonce}
	n := 0
	for i := 0; i < len(enc); i += chunk {
		c := enc[i:min(i+chunk, len(enc))]
		lines = append(lines, fmt.Sprintf("KBOOST-DATA %d %08x %s", n, crc32.ChecksumIEEE([]byte(c)), c))
		n++
	}
	sum := sha256.Sum256(payload)
	return append(lines, fmt.Sprintf("KBOOST-END %s %d %d %s", nonce, n, len(payload), hex.EncodeToString(sum[:])))
}

func decodeAll(t *testing.T, d *Decoder, lines []string) error {
	t.Helper()
	for _, l := range lines {
		done, err := d.Line(l)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	return errors.New("stream ended without end marker")
}

func randomPayload(n int, seed int64) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func TestDecoderSpec(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 767, 768, 769, 100000} {
		payload := randomPayload(n, int64(n))
		lines := specLines("abc123", payload, 64)
		// What a serial console adds: CRLF endings, noise before and between lines,
		// a prompt glued in front of a marker.
		var noisy []string
		noisy = append(noisy, "SeaBIOS (version x)", "Command line: console=ttyS0 KBOOST-BEGIN abc123x", "")
		for i, l := range lines {
			if i%7 == 3 {
				noisy = append(noisy, "[    1.234] random kernel message")
			}
			if i == 0 {
				l = "\x1b[2J" + l
			}
			noisy = append(noisy, l+"\r\n")
		}
		d := NewDecoder("abc123")
		if err := decodeAll(t, d, noisy); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !d.Done() || !bytes.Equal(d.Payload(), payload) {
			t.Fatalf("n=%d: payload differs (done=%v, %d bytes)", n, d.Done(), len(d.Payload()))
		}
	}
}

func TestDecoderEmitRoundTrip(t *testing.T) {
	payload := randomPayload(10000, 1)
	var buf bytes.Buffer
	if err := guest.Emit(&buf, "n0", payload); err != nil {
		t.Fatal(err)
	}
	d := NewDecoder("n0")
	if err := decodeAll(t, d, strings.SplitAfter(buf.String(), "\n")); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d.Payload(), payload) {
		t.Fatal("payload differs")
	}
}

func TestDecoderErrors(t *testing.T) {
	payload := randomPayload(5000, 2)
	good := specLines("N", payload, 100)
	mutate := func(f func([]string) []string) []string {
		return f(append([]string(nil), good...))
	}
	cases := map[string][]string{
		"flipped character": mutate(func(l []string) []string {
			b := []byte(l[3])
			b[len(b)-5] ^= 1
			l[3] = string(b)
			return l
		}),
		"dropped line": mutate(func(l []string) []string { return append(l[:4], l[5:]...) }),
		"split by printk": mutate(func(l []string) []string {
			l[2] = l[2][:40] + "[ 3.1] oops" + l[2][40:]
			return l
		}),
		"truncated": mutate(func(l []string) []string { l[5] = l[5][:len(l[5])-4]; return l }),
		"wrong count": mutate(func(l []string) []string {
			l[len(l)-1] = strings.Replace(l[len(l)-1], fmt.Sprintf(" %d ", len(l)-2), " 9999 ", 1)
			return l
		}),
		"wrong sha": mutate(func(l []string) []string {
			e := l[len(l)-1]
			l[len(l)-1] = e[:len(e)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", e[len(e)-1])+1)%16])
			return l
		}),
		"second begin": mutate(func(l []string) []string { return append(l[:3], append([]string{"KBOOST-BEGIN N"}, l[3:]...)...) }),
	}
	for name, lines := range cases {
		d := NewDecoder("N")
		err := decodeAll(t, d, lines)
		var pe *ProtocolError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want *ProtocolError", name, err)
			continue
		}
		if d.Payload() != nil {
			t.Errorf("%s: payload returned despite error", name)
		}
		// The error is sticky.
		if _, err2 := d.Line(good[len(good)-1]); err2 == nil {
			t.Errorf("%s: error not sticky", name)
		}
	}
}

func TestDecoderIgnoresOtherRuns(t *testing.T) {
	other := specLines("OTHER", []byte("not ours"), 8)
	ours := specLines("OURS", []byte("ours"), 8)
	d := NewDecoder("OURS")
	if err := decodeAll(t, d, append(other, ours...)); err != nil {
		t.Fatal(err)
	}
	if string(d.Payload()) != "ours" {
		t.Fatalf("payload %q", d.Payload())
	}
}

func TestDecoderFail(t *testing.T) {
	for _, line := range []string{"KBOOST-FAIL N reading /scenario.json: boom", "KBOOST-FAIL  reading /scenario.json: boom"} {
		d := NewDecoder("N")
		done, err := d.Line(line)
		if !done || err != nil || d.Failure() != "reading /scenario.json: boom" {
			t.Errorf("%q: done=%v err=%v failure=%q", line, done, err, d.Failure())
		}
	}
}

func TestDecodeResult(t *testing.T) {
	steps := `[{"name":"uname","duration_ns":5,"outputs":["uname.json"]},{"name":"x","error":"boom","duration_ns":1}]`
	payload, err := guest.Pack([]guest.Entry{{Name: guest.StepsFile, Data: []byte(steps)}, {Name: "uname.json", Data: []byte(`{}`)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeResult(payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Steps) != 2 || r.Steps[0].Outputs[0] != "uname.json" || string(r.Files["uname.json"]) != "{}" {
		t.Fatalf("%+v", r)
	}
	var se *StepError
	if err := r.Err(); !errors.As(err, &se) || se.Step != "x" || se.Message != "boom" {
		t.Fatalf("Err() = %v", err)
	}
	if _, err := decodeResult([]byte("not gzip")); err == nil {
		t.Fatal("garbage accepted")
	}
}

func FuzzDecoder(f *testing.F) {
	f.Add(strings.Join(specLines("N", []byte("hello world"), 8), "\n"))
	f.Add("KBOOST-BEGIN N\nKBOOST-DATA 0 00000000 AAAA\nKBOOST-END N 1 3 00")
	f.Add("KBOOST-FAIL N x")
	f.Fuzz(func(t *testing.T, s string) {
		d := NewDecoder("N")
		for _, l := range strings.Split(s, "\n") {
			if done, _ := d.Line(l); done {
				break
			}
		}
		if p := d.Payload(); p != nil {
			_, _ = decodeResult(p)
		}
	})
}
