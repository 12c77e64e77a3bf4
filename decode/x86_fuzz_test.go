package decode_test

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// goldenAddr is the address every golden instruction is decoded at.
const goldenAddr = 0x1000

// goldenCase is one line of testdata/decode.golden (format documented there).
type goldenCase struct {
	line  int
	text  string
	insn  []byte // the instruction bytes (or, for an error, the bytes given)
	rest  []byte // bytes after it in memory
	mode  decode.Mode
	items []goldenItem
}

// goldenItem is one WANT item: key[@off][/size][=value].
type goldenItem struct {
	key      string
	off      int // -1 if absent
	size     int // -1 if absent
	value    string
	hasValue bool
}

func (c *goldenCase) input() []byte { return append(append([]byte(nil), c.insn...), c.rest...) }

func (c *goldenCase) want(key string) (goldenItem, bool) {
	for _, it := range c.items {
		if it.key == key {
			return it, true
		}
	}
	return goldenItem{}, false
}

func parseHexBytes(s string) ([]byte, error) {
	s = strings.ReplaceAll(strings.TrimSpace(s), " ", "")
	return hex.DecodeString(s)
}

// loadGolden parses testdata/decode.golden.
func loadGolden(t testing.TB) []goldenCase {
	t.Helper()
	f, err := os.Open("testdata/decode.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []goldenCase
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c, err := parseGoldenLine(line)
		if err != nil {
			t.Fatalf("testdata/decode.golden:%d: %v: %q", n, err, line)
		}
		c.line = n
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

func parseGoldenLine(line string) (goldenCase, error) {
	var c goldenCase
	c.text = line
	f := strings.Split(line, "\t")
	if len(f) != 3 {
		return c, fmt.Errorf("want 3 tab-separated fields, got %d", len(f))
	}
	hexes := strings.SplitN(f[0], "|", 2)
	if len(hexes) != 2 {
		return c, errors.New("want HEX|REST")
	}
	var err error
	if c.insn, err = parseHexBytes(hexes[0]); err != nil {
		return c, err
	}
	if c.rest, err = parseHexBytes(hexes[1]); err != nil {
		return c, err
	}
	if c.mode, err = decode.ParseMode(f[1]); err != nil {
		return c, err
	}
	for _, w := range strings.Fields(f[2]) {
		it := goldenItem{off: -1, size: -1}
		if k, v, ok := strings.Cut(w, "="); ok {
			w, it.value, it.hasValue = k, v, true
		}
		if k, s, ok := strings.Cut(w, "/"); ok {
			n, err := strconv.Atoi(s)
			if err != nil {
				return c, fmt.Errorf("item %q: bad size", w)
			}
			w, it.size = k, n
		}
		if k, o, ok := strings.Cut(w, "@"); ok {
			n, err := strconv.Atoi(o)
			if err != nil {
				return c, fmt.Errorf("item %q: bad offset", w)
			}
			w, it.off = k, n
		}
		it.key = w
		c.items = append(c.items, it)
	}
	_, hasLen := c.want("len")
	_, hasErr := c.want("err")
	if hasLen == hasErr {
		return c, errors.New("want exactly one of len= and err=")
	}
	return c, nil
}

func parseNum(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	u, err := strconv.ParseUint(strings.TrimPrefix(s, "-"), 0, 64)
	if neg {
		return -int64(u), err
	}
	return int64(u), err
}

var errKinds = map[string]error{
	"invalid":   decode.ErrInvalid,
	"truncated": decode.ErrTruncated,
	"toolong":   decode.ErrTooLong,
}

// checkGolden compares inst/err with the case's WANT items and returns the
// differences.
func checkGolden(c *goldenCase, inst *decode.Inst, err error) []string {
	var bad []string
	fail := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	num := func(it goldenItem) int64 {
		v, e := parseNum(it.value)
		if e != nil {
			fail("item %s: bad number %q", it.key, it.value)
		}
		return v
	}
	if it, ok := c.want("err"); ok {
		want := errKinds[it.value]
		if want == nil {
			return []string{"unknown err kind " + it.value}
		}
		if !errors.Is(err, want) {
			fail("error = %v, want %v", err, want)
		}
		return bad
	}
	if err != nil {
		return []string{fmt.Sprintf("unexpected error %v", err)}
	}
	mask := uint64(1)<<inst.AddrSize - 1
	if inst.AddrSize >= 64 {
		mask = ^uint64(0)
	}
	for _, it := range c.items {
		switch it.key {
		case "len":
			if n := num(it); int64(inst.Len) != n || n != int64(len(c.insn)) {
				fail("len = %d, want %d (HEX has %d bytes)", inst.Len, n, len(c.insn))
			}
		case "op":
			m, o, _ := strings.Cut(it.value, ":")
			if got := fmt.Sprintf("%v:%02x", inst.Map, inst.Opcode); got != m+":"+o {
				fail("op = %s, want %s", got, it.value)
			}
		case "enc":
			if inst.Enc.String() != it.value {
				fail("enc = %v, want %s", inst.Enc, it.value)
			}
		case "modrm":
			if !inst.HasModRM || inst.ModRMOff != int(num(it)) {
				fail("modrm = %v at %d, want at %s", inst.HasModRM, inst.ModRMOff, it.value)
			}
		case "nomodrm":
			if inst.HasModRM {
				fail("has ModRM, want none")
			}
		case "sib":
			if !inst.HasSIB || !inst.HasModRM || inst.ModRMOff+1 != int(num(it)) {
				fail("sib = %v (ModRM at %d), want at %s", inst.HasSIB, inst.ModRMOff, it.value)
			}
		case "nosib":
			if inst.HasSIB {
				fail("has SIB, want none")
			}
		case "disp":
			if inst.DispLen != it.size || it.off >= 0 && inst.DispOff != it.off ||
				it.hasValue && inst.Disp != num(it) {
				fail("disp = %d bytes at %d = %#x, want %d at %d = %s", inst.DispLen, inst.DispOff, inst.Disp,
					it.size, it.off, it.value)
			}
		case "imm":
			if inst.ImmLen != it.size || it.off >= 0 && inst.ImmOff != it.off ||
				it.hasValue && inst.Imm != num(it) {
				fail("imm = %d bytes at %d = %#x, want %d at %d = %s", inst.ImmLen, inst.ImmOff, inst.Imm,
					it.size, it.off, it.value)
			}
		case "imm2":
			if inst.Imm2Len != it.size || it.hasValue && inst.Imm2 != num(it) {
				fail("imm2 = %d bytes = %#x, want %d = %s", inst.Imm2Len, inst.Imm2, it.size, it.value)
			}
		case "riprel":
			if !inst.RIPRel {
				fail("not RIP-relative")
			}
		case "norip":
			if inst.RIPRel {
				fail("RIP-relative, want not")
			}
		case "ripaddr":
			got := (inst.Addr + uint64(inst.Len) + uint64(inst.Disp)) & mask
			if !inst.RIPRel || got != uint64(num(it)) {
				fail("RIP-relative %v address %#x, want %s", inst.RIPRel, got, it.value)
			}
		case "branch":
			if inst.Branch.String() != it.value {
				fail("branch = %v, want %s", inst.Branch, it.value)
			}
		case "target":
			if !inst.Branch.Relative() || inst.Target != uint64(num(it)) {
				fail("target = %#x (%v), want %s", inst.Target, inst.Branch, it.value)
			}
		case "osz":
			if int64(inst.OpSize) != num(it) {
				fail("osz = %d, want %s", inst.OpSize, it.value)
			}
		case "asz":
			if int64(inst.AddrSize) != num(it) {
				fail("asz = %d, want %s", inst.AddrSize, it.value)
			}
		default:
			fail("unknown item %q", it.key)
		}
	}
	return bad
}

// TestGolden checks every line of testdata/decode.golden against the decoder.
func TestGolden(t *testing.T) {
	cases := loadGolden(t)
	if len(cases) < 100 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, c := range cases {
		inst, err := decode.Decode(c.input(), c.mode, goldenAddr)
		for _, d := range checkGolden(&c, &inst, err) {
			t.Errorf("decode.golden:%d [% x|% x] mode %v: %s", c.line, c.insn, c.rest, c.mode, d)
		}
	}
}

// FuzzDecode: for any bytes in either mode, Decode does not panic; on success
// the length is 1..15 and within the input; on error the error wraps one of
// the sentinels and, for non-empty input, Len is at least 1.
func FuzzDecode(f *testing.F) {
	for _, c := range loadGolden(f) {
		f.Add(c.input(), c.mode == decode.Mode64)
	}
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, b []byte, is64 bool) {
		mode := decode.Mode32
		if is64 {
			mode = decode.Mode64
		}
		inst, err := decode.Decode(b, mode, 0xffffffff81000000)
		if err == nil {
			if inst.Len < 1 || inst.Len > 15 || inst.Len > len(b) {
				t.Fatalf("[% x] mode %v: Len %d", b, mode, inst.Len)
			}
			return
		}
		sentinel := false
		for _, s := range []error{decode.ErrInvalid, decode.ErrTruncated, decode.ErrTooLong} {
			if errors.Is(err, s) {
				sentinel = true
			}
		}
		if !sentinel {
			t.Fatalf("[% x] mode %v: error %v wraps no sentinel", b, mode, err)
		}
		var de *decode.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("[% x] mode %v: error %T is not a *decode.DecodeError", b, mode, err)
		}
		if len(b) > 0 && (inst.Len < 1 || de.Len < 1 || inst.Len > 15) {
			t.Fatalf("[% x] mode %v: error %v with Len %d (DecodeError.Len %d)", b, mode, err, inst.Len, de.Len)
		}
	})
}
