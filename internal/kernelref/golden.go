package kernelref

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kboost/kboost/decode"
)

// Default addresses of a golden row's probe and slot, per kernel word size:
// the arch's kernel text and module area (decode.Arch.TextAddr, SlotAddr).
var (
	DefaultAddr64 = decode.X86_64.TextAddr
	DefaultSlot64 = decode.X86_64.SlotAddr
	DefaultAddr32 = decode.I386.TextAddr
	DefaultSlot32 = decode.I386.SlotAddr
)

// ErrSyntax is wrapped by every golden-table parse error.
var ErrSyntax = errors.New("golden table syntax error")

// Row is one line of a golden table:
//
//	[PRE:]INSN[|REST] <TAB> MODE[,OPT...] <TAB> WANT [<TAB># note]
//
// INSN is the probed instruction as the kernel decoder delimits it (all bytes the
// oracle was given when the kernel could not decode them); PRE are the bytes of
// the function before it (the probe is at offset len(PRE), which can_probe walks
// to); REST are the bytes that followed it in memory, then int3 (CC) bytes.
// MODE is 64 (an x86-64 kernel) or 32 (an i386 kernel). OPT: preempt
// (CONFIG_PREEMPTION=y), post (the kprobe has a post_handler), extable (the
// address has an exception-table entry), addr=HEX (probe address), slot=HEX
// (instruction slot address). Without them: no preemption, no post_handler, not
// in the exception table, DefaultAddrNN and DefaultSlotNN.
// WANT is VERDICT [ERRNO] [op=EMULATION] [len=N] [opt] [slot=HEX]: the verdict (reject,
// emulate, singlestep or boost), the errno of a rejection, the emulation routine
// prepare_emulation chose (even when the copy is boosted), the kernel decoder's
// length (absent when it could not decode, and for EILSEQ), and the bytes the
// kernel wrote to the instruction slot (the copy with a RIP-relative
// displacement rebased to the slot, then jmp rel32 back or int3); opt (uprobes
// of 7.x) that the kernel will optimize the NOP.
type Row struct {
	Pre, Insn, Rest []byte
	Bits            int
	Preemption      bool
	Post            bool
	Extable         bool
	Addr, Slot      uint64 // 0: the default for Bits
	Want            Want
	Note            string
	Line            int // 1-based line in the file; 0 when not parsed
}

// Want is a row's expected outcome.
type Want struct {
	Verdict string // "reject", "emulate", "singlestep", "boost"
	Errno   string // for "reject": "EINVAL", "EOPNOTSUPP", "EILSEQ", "ENOSPC"
	Emulate string // prepare_emulation's routine: "jcc", "ret", ... or ""
	Len     int    // kernel decoder length, 0 when undecodable
	Slot    []byte // the instruction slot the kernel wrote (nil when rejected or not recorded)
	// Opt (uprobes): can_optimize() held, the NOP is optimized after its first hit.
	Opt bool
}

func (w Want) String() string {
	s := w.Verdict
	if w.Errno != "" {
		s += " " + w.Errno
	}
	if w.Emulate != "" {
		s += " op=" + w.Emulate
	}
	if w.Len > 0 {
		s += " len=" + strconv.Itoa(w.Len)
	}
	if w.Opt {
		s += " opt"
	}
	if len(w.Slot) > 0 {
		s += " slot=" + hex.EncodeToString(w.Slot)
	}
	return s
}

// ProbeAddr is the probe address, with the default filled in.
func (r *Row) ProbeAddr() uint64 {
	switch {
	case r.Addr != 0:
		return r.Addr
	case r.Bits == 32:
		return DefaultAddr32
	}
	return DefaultAddr64
}

// SlotAddr is the slot address, with the default filled in.
func (r *Row) SlotAddr() uint64 {
	switch {
	case r.Slot != 0:
		return r.Slot
	case r.Bits == 32:
		return DefaultSlot32
	}
	return DefaultSlot64
}

// Text is the memory the kernel sees from the function start: PRE, INSN, REST,
// then int3 bytes up to 15 bytes past the probe address.
func (r *Row) Text() []byte {
	b := append(append(append([]byte{}, r.Pre...), r.Insn...), r.Rest...)
	for len(b) < len(r.Pre)+15 {
		b = append(b, 0xCC)
	}
	return b
}

// Window is the 15 bytes from the probe address, what __copy_instruction copies.
func (r *Row) Window() []byte { return r.Text()[len(r.Pre) : len(r.Pre)+15] }

// Kprobe is the oracle query for the row.
func (r *Row) Kprobe() Kprobe {
	return Kprobe{Bits: r.Bits, Text: r.Text(), Off: len(r.Pre), Func: r.ProbeAddr() - uint64(len(r.Pre)),
		Slot: r.SlotAddr(), Preemption: r.Preemption, Post: r.Post, Extable: r.Extable}
}

// Mode renders the MODE column.
func (r *Row) Mode() string {
	s := strconv.Itoa(r.Bits)
	if r.Preemption {
		s += ",preempt"
	}
	if r.Post {
		s += ",post"
	}
	if r.Extable {
		s += ",extable"
	}
	if r.Addr != 0 {
		s += fmt.Sprintf(",addr=%x", r.Addr)
	}
	if r.Slot != 0 {
		s += fmt.Sprintf(",slot=%x", r.Slot)
	}
	return s
}

// Bytes renders the first column.
func (r *Row) Bytes() string {
	s := hex.EncodeToString(r.Insn)
	if len(r.Pre) > 0 {
		s = hex.EncodeToString(r.Pre) + ":" + s
	}
	if len(r.Rest) > 0 {
		s += "|" + hex.EncodeToString(r.Rest)
	}
	return s
}

// String renders the row as a table line (without newline).
func (r *Row) String() string {
	s := r.Bytes() + "\t" + r.Mode() + "\t" + r.Want.String()
	if r.Note != "" {
		s += "\t# " + r.Note
	}
	return s
}

// ParseRow parses one non-comment line.
func ParseRow(line string) (Row, error) {
	var r Row
	cols := strings.Split(line, "\t")
	if len(cols) < 3 || len(cols) > 4 {
		return r, fmt.Errorf("%w: want BYTES<TAB>MODE<TAB>WANT[<TAB># note], got %d columns", ErrSyntax, len(cols))
	}
	if len(cols) == 4 {
		n, ok := strings.CutPrefix(cols[3], "# ")
		if !ok {
			return r, fmt.Errorf("%w: fourth column must start with \"# \"", ErrSyntax)
		}
		r.Note = n
	}
	if err := r.parseBytes(cols[0]); err != nil {
		return r, err
	}
	if err := r.parseMode(cols[1]); err != nil {
		return r, err
	}
	w, err := ParseWant(cols[2])
	if err != nil {
		return r, err
	}
	r.Want = w
	return r, nil
}

func (r *Row) parseBytes(s string) error {
	var err error
	if pre, rest, ok := strings.Cut(s, ":"); ok {
		if r.Pre, err = hexField("PRE", pre); err != nil {
			return err
		}
		s = rest
	}
	insn, rest, ok := strings.Cut(s, "|")
	if r.Insn, err = hexField("INSN", insn); err != nil {
		return err
	}
	if len(r.Insn) == 0 {
		return fmt.Errorf("%w: empty instruction", ErrSyntax)
	}
	if ok {
		if r.Rest, err = hexField("REST", rest); err != nil {
			return err
		}
	}
	if len(r.Pre) > 4096 || len(r.Insn)+len(r.Rest) > 64 {
		return fmt.Errorf("%w: bytes too long (PRE <= 4096, INSN+REST <= 64)", ErrSyntax)
	}
	return nil
}

func hexField(what, s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q is not hex: %v", ErrSyntax, what, s, err)
	}
	return b, nil
}

func parseHexAddr(s string) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
}

func (r *Row) parseMode(s string) error {
	parts := strings.Split(s, ",")
	switch parts[0] {
	case "64":
		r.Bits = 64
	case "32":
		r.Bits = 32
	default:
		return fmt.Errorf("%w: mode %q: want 64 or 32", ErrSyntax, parts[0])
	}
	for _, o := range parts[1:] {
		k, v, hasV := strings.Cut(o, "=")
		var err error
		switch {
		case k == "preempt" && !hasV:
			r.Preemption = true
		case k == "post" && !hasV:
			r.Post = true
		case k == "extable" && !hasV:
			r.Extable = true
		case k == "addr" && hasV:
			r.Addr, err = parseHexAddr(v)
		case k == "slot" && hasV:
			r.Slot, err = parseHexAddr(v)
		default:
			return fmt.Errorf("%w: unknown mode option %q (want preempt, post, extable, addr=HEX, slot=HEX)", ErrSyntax, o)
		}
		if err != nil {
			return fmt.Errorf("%w: mode option %q: %v", ErrSyntax, o, err)
		}
	}
	return nil
}

// "accept" is for tables made by observing a live kernel, which tells only
// whether a probe was accepted.
var verdicts = map[string]bool{"reject": true, "emulate": true, "singlestep": true, "boost": true, "accept": true}

// ParseWant parses the WANT column.
func ParseWant(s string) (Want, error) {
	var w Want
	f := strings.Fields(s)
	if len(f) == 0 || !verdicts[f[0]] {
		return w, fmt.Errorf("%w: want %q: must start with reject, emulate, singlestep, boost or accept", ErrSyntax, s)
	}
	w.Verdict = f[0]
	for _, x := range f[1:] {
		switch {
		case strings.HasPrefix(x, "E") && w.Verdict == "reject" && w.Errno == "":
			w.Errno = x
		case strings.HasPrefix(x, "op="):
			w.Emulate = x[3:]
		case x == "opt" && !w.Opt:
			w.Opt = true
		case strings.HasPrefix(x, "slot="):
			b, err := hex.DecodeString(x[5:])
			if err != nil || len(b) == 0 || len(b) > 32 {
				return w, fmt.Errorf("%w: want %q: bad slot", ErrSyntax, s)
			}
			w.Slot = b
		case strings.HasPrefix(x, "len="):
			n, err := strconv.Atoi(x[4:])
			if err != nil || n < 1 || n > 15 {
				return w, fmt.Errorf("%w: want %q: bad len", ErrSyntax, s)
			}
			w.Len = n
		default:
			return w, fmt.Errorf("%w: want %q: unknown word %q", ErrSyntax, s, x)
		}
	}
	if w.Verdict == "reject" && w.Errno == "" {
		return w, fmt.Errorf("%w: want %q: reject needs an errno", ErrSyntax, s)
	}
	return w, nil
}

// Table is a parsed golden file: its header comments and rows.
type Table struct {
	Header []string // comment lines before the first row, without "# "
	Rows   []Row
}

// ReadTable parses a golden table. Blank lines and lines starting with # are
// skipped (leading ones are kept as the header).
func ReadTable(rd io.Reader) (*Table, error) {
	t := &Table{}
	sc := bufio.NewScanner(rd)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			if len(t.Rows) == 0 && strings.HasPrefix(line, "#") {
				t.Header = append(t.Header, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
			}
			continue
		}
		r, err := ParseRow(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		r.Line = n
		t.Rows = append(t.Rows, r)
	}
	return t, sc.Err()
}
