package kernelref

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// A64Kprobe is one arm64 kprobe query: a text of words whose symbol starts at
// word Sym (-1: no symbol, kallsyms fails and the atomic back-scan is skipped),
// a probe on word Probe plus Mis bytes, and whether the address has an
// exception-table entry.
type A64Kprobe struct {
	Text    []uint32
	Sym     int
	Probe   int
	Mis     int
	ExTable bool
}

// A64KprobeResult is what arch_prepare_kprobe() did.
type A64KprobeResult struct {
	Ret     int    // 0 or -errno
	Decode  string // "rejected", "slot", "simulate"
	Handler string // simulate_* routine, "-" when none
	Slot    []uint32
	Restore int64 // api.restore - addr (4 for a slot)
}

// A64UprobeResult is what prepare_uprobe()'s trap test and
// arch_uprobe_analyze_insn() did.
type A64UprobeResult struct {
	Ret     int
	Kind    string // "xol", "simulate", "-"
	Handler string
}

// OracleA64 runs the arm64 oracle program.
type OracleA64 struct {
	Build *BuildA64
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
}

// OpenA64 prepares (see PrepareA64) and starts the arm64 oracle.
func OpenA64(opts Options) (*OracleA64, error) {
	b, err := PrepareA64(opts)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(b.Bin())
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %v: %w", b.Bin(), err, ErrTool)
	}
	return &OracleA64{Build: b, cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// Close stops the oracle.
func (o *OracleA64) Close() error {
	o.in.Close()
	return o.cmd.Wait()
}

func (o *OracleA64) ask(q string) ([]string, error) {
	if _, err := io.WriteString(o.in, q+"\n"); err != nil {
		return nil, err
	}
	line, err := o.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("oracle: %v: %w", err, ErrTool)
	}
	f := strings.Fields(line)
	if len(f) > 0 && f[0] == "error" {
		return nil, fmt.Errorf("oracle refused %q: %s: %w", q, line, ErrTool)
	}
	return f, nil
}

// Kprobe asks what registering the kprobe does.
func (o *OracleA64) Kprobe(q A64Kprobe) (A64KprobeResult, error) {
	var b strings.Builder
	ext := 0
	if q.ExTable {
		ext = 1
	}
	fmt.Fprintf(&b, "k %d %d %d %d", q.Mis, ext, q.Sym, len(q.Text))
	for _, w := range q.Text {
		fmt.Fprintf(&b, " %08x", w)
	}
	fmt.Fprintf(&b, " %d", q.Probe)
	f, err := o.ask(b.String())
	if err != nil {
		return A64KprobeResult{}, err
	}
	if len(f) != 6 {
		return A64KprobeResult{}, fmt.Errorf("oracle answer %q: %w", f, ErrSyntax)
	}
	var r A64KprobeResult
	r.Ret, _ = strconv.Atoi(f[0])
	r.Decode, r.Handler = f[1], f[2]
	if f[3] != "-" {
		w0, _ := strconv.ParseUint(f[3], 16, 32)
		w1, _ := strconv.ParseUint(f[4], 16, 32)
		r.Slot = []uint32{uint32(w0), uint32(w1)}
		r.Restore, _ = strconv.ParseInt(f[5], 16, 64)
	}
	return r, nil
}

// Uprobe asks what a uprobe on word w at a user address + mis does.
func (o *OracleA64) Uprobe(w uint32, mis int) (A64UprobeResult, error) {
	f, err := o.ask(fmt.Sprintf("u %d %08x", mis, w))
	if err != nil {
		return A64UprobeResult{}, err
	}
	if len(f) != 3 {
		return A64UprobeResult{}, fmt.Errorf("oracle answer %q: %w", f, ErrSyntax)
	}
	var r A64UprobeResult
	r.Ret, _ = strconv.Atoi(f[0])
	r.Kind, r.Handler = f[1], f[2]
	return r, nil
}

// A64Code is the bulk answer for one word: bit 7 accepted, bit 6 (uprobes)
// ENOTSUPP, bits 5:4 the decode (0 rejected, 1 simulated, 2 stepped in a
// slot), bits 3:0 the handler index (A64Handlers; 15 for kprobes: an
// unexpected slot image).
type A64Code uint8

// A64Handlers are the handler names by index in an A64Code.
var A64Handlers = []string{"-", "simulate_b_cond", "simulate_cbz_cbnz", "simulate_tbz_tbnz", "simulate_adr_adrp",
	"simulate_b_bl", "simulate_br_blr_ret", "simulate_ldr_literal", "simulate_ldrsw_literal",
	"simulate_br_blr", "simulate_ret", "simulate_nop"}

// Accepted, Decode and Handler unpack the code.
func (c A64Code) Accepted() bool { return c&0x80 != 0 }
func (c A64Code) Decode() int    { return int(c>>4) & 3 }
func (c A64Code) Handler() int   { return int(c & 0x0F) }

// Bulk runs the oracle over words (a probe at sym+0, aligned, no exception
// entry; a uprobe at an aligned user address) and returns, per word, the
// kprobe and uprobe codes.
func (o *OracleA64) Bulk(words []uint32) (kp, up []A64Code, err error) {
	in := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(in[4*i:], w)
	}
	cmd := exec.Command(o.Build.Bin(), "-bulk")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("%s -bulk: %v: %s: %w", o.Build.Bin(), err, stderr.String(), ErrTool)
	}
	if len(out) != 2*len(words) {
		return nil, nil, fmt.Errorf("%s -bulk: %d answer bytes for %d words: %w", o.Build.Bin(), len(out), len(words), ErrTool)
	}
	kp, up = make([]A64Code, len(words)), make([]A64Code, len(words))
	for i := range words {
		kp[i], up[i] = A64Code(out[2*i]), A64Code(out[2*i+1])
	}
	return kp, up, nil
}

// Sweep runs the oracle over the words start, start+step, ... (count of them,
// wrapping at 2^32) and calls fn with each word's kprobe and uprobe codes (as
// Bulk), streaming: the whole 2^32 space fits in constant memory. fn's error
// stops the sweep.
func (o *OracleA64) Sweep(start uint32, count uint64, step uint32, fn func(w uint32, kp, up A64Code) error) error {
	cmd := exec.Command(o.Build.Bin(), "-sweep", strconv.FormatUint(uint64(start), 10),
		strconv.FormatUint(count, 10), strconv.FormatUint(uint64(step), 10))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %v: %w", o.Build.Bin(), err, ErrTool)
	}
	r := bufio.NewReaderSize(out, 1<<20)
	var buf [2]byte
	w := start
	var ferr error
	for i := uint64(0); i < count; i++ {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			ferr = fmt.Errorf("%s -sweep: answer %d: %v: %s: %w", o.Build.Bin(), i, err, stderr.String(), ErrTool)
			break
		}
		if ferr = fn(w, A64Code(buf[0]), A64Code(buf[1])); ferr != nil {
			break
		}
		w += step
	}
	if ferr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return ferr
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s -sweep: %v: %s: %w", o.Build.Bin(), err, stderr.String(), ErrTool)
	}
	return nil
}
