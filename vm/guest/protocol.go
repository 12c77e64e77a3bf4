package guest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"time"
)

// Console markers. Every protocol line starts with one of these words, followed by
// space-separated fields; see the package documentation for the grammar.
const (
	MarkBegin = "KBOOST-BEGIN" // KBOOST-BEGIN <nonce>
	MarkData  = "KBOOST-DATA"  // KBOOST-DATA <seq> <crc32> <base64>
	MarkEnd   = "KBOOST-END"   // KBOOST-END <nonce> <lines> <bytes> <sha256>
	MarkFail  = "KBOOST-FAIL"  // KBOOST-FAIL <nonce> <message>
)

// ChunkSize is the number of base64 characters carried by one data line.
const ChunkSize = 1024

// Names of the protocol's own entries in the result archive.
const (
	StepsFile = "steps.json" // []StepReport, in scenario order
	GuestFile = "guest.json" // GuestReport
)

// ScenarioPath is where the host puts the scenario in the initramfs.
const ScenarioPath = "/scenario.json"

// KboostPath is where the host puts the kboost binary (cmd/kboost built for
// the guest) when a step runs kboost's commands: the guest runs it as a
// program, as a user would, rather than linking the CLI into /init.
const KboostPath = "/bin/kboost"

// NeedsKboost reports whether the step named runs the kboost binary at
// KboostPath.
func NeedsKboost(step string) bool { return step == "probe-cli" || step == "ia32-refused" }

// Scenario is the host's request to the guest, stored as JSON at ScenarioPath.
type Scenario struct {
	// Nonce is echoed on the begin and end markers so that the host never confuses
	// text printed earlier (the kernel command line, an old log) with a result.
	Nonce string `json:"nonce"`
	// Steps run in order; a failing step is reported and the next one still runs.
	Steps []Step `json:"steps"`
	// Verbose keeps kernel messages on the console while the steps run; by default
	// the guest lowers the console log level so printk cannot split protocol lines.
	Verbose bool `json:"verbose,omitempty"`
	// HostMemory: the host answers KBOOST-MEM requests on the console's input
	// (see hostmem.go); steps may ask it to read guest kernel memory.
	HostMemory bool `json:"host_memory,omitempty"`
}

// Step names one registered step and carries its arguments.
type Step struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// StepReport is what the guest says about one step.
type StepReport struct {
	Name     string        `json:"name"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Outputs  []string      `json:"outputs,omitempty"` // result entries the step wrote
}

// GuestReport describes the guest run itself.
type GuestReport struct {
	UptimeStart float64  `json:"uptime_start"` // /proc/uptime seconds when /init started
	UptimeEnd   float64  `json:"uptime_end"`   // ... when the result was packed
	Cmdline     string   `json:"cmdline"`
	Setup       []string `json:"setup,omitempty"` // problems met while preparing (mounts)
}

// Entry is one named result blob.
type Entry struct {
	Name string
	Data []byte
}

// Pack builds the payload carried between the markers: a gzip-compressed tar archive
// holding entries in the given order. Entry names must be unique.
func Pack(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	seen := make(map[string]bool)
	for _, e := range entries {
		if seen[e.Name] {
			return nil, fmt.Errorf("guest: duplicate result entry %q", e.Name)
		}
		seen[e.Name] = true
		hdr := &tar.Header{Name: e.Name, Mode: 0o644, Size: int64(len(e.Data)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Unpack reverses Pack. It refuses archives whose entries would exceed limit bytes in
// total, so a corrupt or hostile payload cannot exhaust memory.
func Unpack(payload []byte, limit int64) (map[string][]byte, []string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(payload))
	if err != nil {
		return nil, nil, fmt.Errorf("guest: result payload: %w", err)
	}
	tr := tar.NewReader(zr)
	files := make(map[string][]byte)
	var order []string
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, fmt.Errorf("guest: result payload: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		if hdr.Size < 0 || total+hdr.Size > limit {
			return nil, nil, fmt.Errorf("guest: result payload larger than %d bytes", limit)
		}
		data := make([]byte, 0, hdr.Size)
		w := bytes.NewBuffer(data)
		if _, err := io.Copy(w, io.LimitReader(tr, hdr.Size)); err != nil {
			return nil, nil, fmt.Errorf("guest: result payload: entry %q: %w", hdr.Name, err)
		}
		total += int64(w.Len())
		if _, dup := files[hdr.Name]; !dup {
			order = append(order, hdr.Name)
		}
		files[hdr.Name] = w.Bytes()
	}
	return files, order, nil
}

// Emit writes payload to w as protocol lines: the begin marker, one data line per
// ChunkSize base64 characters, and the end marker with the line count, the payload
// length and its SHA-256.
func Emit(w io.Writer, nonce string, payload []byte) error {
	enc := base64.StdEncoding.EncodeToString(payload)
	if _, err := fmt.Fprintf(w, "\n%s %s\n", MarkBegin, nonce); err != nil {
		return err
	}
	lines := 0
	for len(enc) > 0 {
		n := min(ChunkSize, len(enc))
		chunk := enc[:n]
		enc = enc[n:]
		if _, err := fmt.Fprintf(w, "%s %d %08x %s\n", MarkData, lines, crc32.ChecksumIEEE([]byte(chunk)), chunk); err != nil {
			return err
		}
		lines++
	}
	sum := sha256.Sum256(payload)
	_, err := fmt.Fprintf(w, "%s %s %d %d %s\n", MarkEnd, nonce, lines, len(payload), hex.EncodeToString(sum[:]))
	return err
}

// EmitFail reports a guest that could not produce any result.
func EmitFail(w io.Writer, nonce, msg string) error {
	_, err := fmt.Fprintf(w, "\n%s %s %s\n", MarkFail, nonce, oneLine(msg))
	return err
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}
