package objdump

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Record is one instruction line of objdump's output.
type Record struct {
	Section string // section being disassembled, e.g. ".text"
	Symbol  string // the last symbol header seen in Section ("" before any)
	Addr    uint64 // address printed at the start of the line
	Len     int    // number of bytes printed (len(Bytes))
	Bytes   []byte // the instruction's bytes; valid until the next Scan
	Text    string // mnemonic and operands as printed, surrounding blanks trimmed
	Line    int    // 1-based line number in the output where the record starts

	// Bad is set when objdump printed "(bad)": it found no valid instruction.
	// Len is then whatever objdump chose to skip and has no architectural meaning.
	Bad bool
	// PrefixOnly is set when the text is nothing but prefix names ("rex.W",
	// "data16", "lock", "es rex.W", ...): objdump split these bytes off the
	// instruction they belong to.
	PrefixOnly bool
	// Truncated is set for ".byte 0xNN" lines: objdump ran out of bytes
	// (end of section or of the input) in the middle of an instruction.
	Truncated bool
	// Data is set for a line of a hex and ASCII dump: objdump (2.37 and
	// later) dumps the bytes of an object symbol (STT_OBJECT) inside a code
	// section instead of disassembling them. Text is the ASCII column. It is
	// not an instruction.
	Data bool
}

// ParseError reports a line that looks like an instruction but is malformed.
type ParseError struct {
	Line int
	Text string
	Why  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("objdump output line %d: %s: %q", e.Line, e.Why, e.Text)
}

// ErrLineTooLong is wrapped when a line exceeds the scanner's buffer (1 MiB).
var ErrLineTooLong = errors.New("objdump output line longer than 1 MiB")

// Scanner parses objdump -d output incrementally.
type Scanner struct {
	r       *bufio.Reader
	line    int
	section string
	symbol  string
	err     error

	cur, pend Record
	havePend  bool
	curBytes  []byte
	pendBytes []byte

	// Skipped counts "..." lines (elided zero blocks; only without -z).
	Skipped int
}

// NewScanner returns a Scanner reading objdump output from r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{r: bufio.NewReaderSize(r, 1<<20)}
}

// Err returns the first error other than io.EOF met by Scan.
func (s *Scanner) Err() error { return s.err }

// Record returns the record found by the last successful Scan.
func (s *Scanner) Record() *Record { return &s.cur }

// Scan advances to the next instruction record. It returns false at the end of
// the input or on error (see Err).
func (s *Scanner) Scan() bool {
	for s.err == nil {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.err = fmt.Errorf("line %d: %w", s.line+1, ErrLineTooLong)
			return false
		}
		if len(line) == 0 && err != nil {
			if err != io.EOF {
				s.err = err
			}
			return s.flush()
		}
		s.line++
		line = bytes.TrimRight(line, "\r\n")
		if emitted := s.parseLine(line); emitted {
			return true
		}
		if s.err != nil {
			return false
		}
		if err != nil {
			if err != io.EOF {
				s.err = err
			}
			return s.flush()
		}
	}
	return false
}

// flush emits the pending record, if any.
func (s *Scanner) flush() bool {
	if !s.havePend {
		return false
	}
	s.emit()
	return true
}

// emit moves the pending record to cur.
func (s *Scanner) emit() {
	s.cur, s.pend = s.pend, s.cur
	s.curBytes, s.pendBytes = s.pendBytes, s.curBytes
	s.cur.Bytes = s.curBytes
	s.cur.Len = len(s.curBytes)
	s.havePend = false
}

// parseLine handles one line; it reports whether a record became current.
func (s *Scanner) parseLine(line []byte) bool {
	if len(line) == 0 {
		return false
	}
	if bytes.HasPrefix(line, []byte("Disassembly of section ")) {
		name := bytes.TrimSuffix(line[len("Disassembly of section "):], []byte(":"))
		emitted := s.flush()
		s.section = string(name)
		s.symbol = ""
		return emitted
	}
	if bytes.Equal(bytes.TrimSpace(line), []byte("...")) {
		s.Skipped++
		return s.flush()
	}
	// Symbol header: "<hex> <name>:".
	if line[0] != ' ' && line[0] != '\t' {
		if sp := bytes.IndexByte(line, ' '); sp > 0 && isHex(line[:sp]) &&
			bytes.HasSuffix(line, []byte(">:")) && len(line) > sp+3 && line[sp+1] == '<' {
			emitted := s.flush()
			s.symbol = string(line[sp+2 : len(line)-2])
			return emitted
		}
	}
	// Instruction line: "<spaces><hex>:\t<hex bytes>\t<text>".
	trim := bytes.TrimLeft(line, " ")
	colon := bytes.IndexByte(trim, ':')
	if colon <= 0 || colon+1 >= len(trim) || trim[colon+1] != '\t' || !isHex(trim[:colon]) {
		return false // header, relocation, warning, ...
	}
	if colon > 16 {
		s.err = &ParseError{Line: s.line, Text: string(line), Why: "address longer than 64 bits"}
		return false
	}
	addr := parseHex(trim[:colon])
	rest := trim[colon+2:]
	hexPart, text := rest, []byte(nil)
	data := false
	if tab := bytes.IndexByte(rest, '\t'); tab >= 0 {
		hexPart, text = rest[:tab], rest[tab+1:]
	} else if sp := bytes.Index(rest, []byte("  ")); sp >= 0 {
		// A data line: objdump dumps an object symbol inside a code
		// section as hex bytes, blanks, then the bytes as ASCII.
		hexPart, text, data = rest[:sp], rest[sp:], true
	}
	// Decode the bytes into a scratch slice first: the line may be a continuation.
	var tmp [64]byte
	raw := tmp[:0]
	for i := 0; i < len(hexPart); {
		c := hexPart[i]
		if c == ' ' {
			i++
			continue
		}
		if i+1 >= len(hexPart) || hexVal(c) < 0 || hexVal(hexPart[i+1]) < 0 ||
			(i+2 < len(hexPart) && hexPart[i+2] != ' ') {
			s.err = &ParseError{Line: s.line, Text: string(line), Why: "bad byte column"}
			return false
		}
		raw = append(raw, byte(hexVal(c)<<4|hexVal(hexPart[i+1])))
		i += 2
	}
	if len(raw) == 0 {
		s.err = &ParseError{Line: s.line, Text: string(line), Why: "no instruction bytes"}
		return false
	}
	textStr := strings.TrimSpace(string(text))
	if data {
		emitted := s.flush()
		s.pend = Record{Section: s.section, Symbol: s.symbol, Addr: addr, Text: textStr, Line: s.line, Data: true}
		s.pendBytes = append(s.pendBytes[:0], raw...)
		s.havePend = true
		return emitted
	}
	// Continuation of the previous instruction (objdump without -w): bytes only.
	if s.havePend && !s.pend.Data && textStr == "" && addr == s.pend.Addr+uint64(len(s.pendBytes)) {
		s.pendBytes = append(s.pendBytes, raw...)
		return false
	}
	emitted := s.flush()
	s.pend = Record{
		Section: s.section,
		Symbol:  s.symbol,
		Addr:    addr,
		Text:    textStr,
		Line:    s.line,
	}
	s.pendBytes = append(s.pendBytes[:0], raw...)
	s.pend.Bad = strings.Contains(textStr, "(bad)")
	s.pend.Truncated = strings.HasPrefix(textStr, ".byte ")
	s.pend.PrefixOnly = textStr != "" && onlyPrefixes(textStr)
	s.havePend = true
	return emitted
}

// prefixNames are the names binutils prints for prefixes it could not attach
// to an instruction.
var prefixNames = map[string]bool{
	"lock": true, "rep": true, "repz": true, "repnz": true, "repe": true, "repne": true,
	"cs": true, "ds": true, "es": true, "ss": true, "fs": true, "gs": true,
	"data16": true, "data32": true, "addr16": true, "addr32": true,
	"bnd": true, "notrack": true, "xacquire": true, "xrelease": true,
	"{vex}": true, "{vex3}": true, "{evex}": true,
}

// onlyPrefixes reports whether every word of text is a prefix name.
func onlyPrefixes(text string) bool {
	for _, w := range strings.Fields(text) {
		if prefixNames[w] {
			continue
		}
		if w == "rex" || strings.HasPrefix(w, "rex.") && len(w) <= 8 && strings.Trim(w[4:], "WRXB") == "" {
			continue
		}
		return false
	}
	return true
}

func isHex(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if hexVal(c) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func parseHex(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<4 | uint64(hexVal(c))
	}
	return v
}
