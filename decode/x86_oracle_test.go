package decode_test

// Oracle tests: instruction lengths against GNU objdump (binutils 2.40 or
// later), gated by KBOOST_ORACLE=1 because they download kernels and run
// objdump over hundreds of megabytes of code.
//
//	KBOOST_ORACLE=1 go test ./decode/ -run Oracle -v -timeout 60m
//
//	TestOracleVmlinuxAmd64  every executable section of Debian's linux-image-amd64 vmlinux
//	TestOracleVmlinux686    the same for linux-image-686 (i386)
//	TestOracleUsrBin        every x86 ELF reachable from /usr/bin (KBOOST_ORACLE_ELF=a:b: only those)
//	TestOracleFuzz          x86gen candidates, KBOOST_ORACLE_N per mode (default 1,000,000)
//	TestOracleSweep         x86gen.Sweep: every opcode x prefix/VEX/EVEX/XOP field x ModRM form
//	TestOracleGolden        testdata/decode.golden lengths, targets and RIP-relative addresses
//
// KBOOST_ORACLE_GROUPS sets how many mismatch groups are printed (default 60);
// KBOOST_ORACLE_LOG names a file to which the first samples of every mismatch
// group are appended. objdump runs with -M intel64 for 64-bit code: kboost,
// like the Linux kernel's decoder, gives 66-prefixed near branches Intel
// semantics (64-bit operand size, rel32), binutils' default is AMD's (rel16,
// and "retw" for 66 C3/C2, same length). Otherwise intel64 only changes the
// text (REX.W far indirect branches print as lcallq/ljmpq, m16:64); sysenter
// and sysexit decode either way (-M amd64 would make them "(bad)"). It does
// nothing for 32-bit code.
//
// Agreement rules, applied to every instruction objdump prints. kboost
// decodes at the address objdump printed, given the bytes up to the end of
// the section or objdump's stop address (the next symbol), so that one
// disagreement does not derail the rest of the sweep:
//
//   - objdump printed an instruction and kboost decoded one of the same
//     length (this includes a prefix-only line of the same length: e.g.
//     objdump treats FWAIT, 9B, as a prefix and may print "9B" as "rex.XB"
//     when REX bytes follow it);
//   - objdump printed "(bad)" and kboost returned an error wrapping
//     decode.ErrInvalid or decode.ErrTooLong (objdump prints "(bad)" for an
//     instruction running past 15 bytes, where the CPU raises #GP): both say
//     that no valid instruction starts here. The lengths are not compared:
//     objdump's length after "(bad)" is only where its sweep resumes and has
//     no architectural meaning;
//   - objdump printed ".byte 0xNN" (it ran out of bytes: end of section, stop
//     address), or a prefix-only line (what it prints for prefixes when the
//     rest of the instruction is cut off), and kboost returned an error
//     wrapping decode.ErrTruncated.
//
// Everything else is a mismatch ("(bad)" against a kboost length included),
// unless allowedMismatch explains it with the Intel SDM rule that objdump
// does not follow. Mismatches are grouped by class and by opKey (map, opcode,
// mandatory prefix, VEX fields, ModRM form) and the test fails on any.

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/objdump"
	"github.com/kboost/kboost/internal/x86gen"
	"github.com/kboost/kboost/kimage"
	"golang.org/x/arch/x86/x86asm"
)

// oracleGate skips unless KBOOST_ORACLE is set.
func oracleGate(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("oracle test: set KBOOST_ORACLE=1 (needs objdump and network access to Debian apt)")
	}
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Fatalf("objdump not found: apt-get install binutils: %v", err)
	}
}

func isLegacyPrefix(c byte) bool { return decode.PrefixOf(c) != 0 }

// prefixEnd returns the offset of the first byte after the legacy prefixes
// and, in 64-bit mode, REX bytes.
func prefixEnd(mode decode.Mode, b []byte) int {
	i := 0
	for i < len(b) && (isLegacyPrefix(b[i]) || mode == decode.Mode64 && b[i]&0xf0 == 0x40) {
		i++
	}
	return i
}

// allowedMismatch decides whether a disagreement between objdump and kboost
// is a known case where objdump departs from the Intel SDM (kboost follows
// the SDM and the Linux kernel's decoder). b holds the bytes at the
// instruction (up to the end of its section), objdumpLen/objdumpText what
// objdump printed, kbLen/kbErr kboost's result. It returns the reason, which
// names the SDM rule.
func allowedMismatch(mode decode.Mode, b []byte, objdumpLen int, objdumpText string, kbLen int, kbErr error) (reason string, ok bool) {
	words := strings.Fields(objdumpText)
	prefixOnly := len(words) > 0
	for _, w := range words {
		if !(w == "rex" || strings.HasPrefix(w, "rex.") || strings.Contains(
			" lock rep repz repnz cs ds es ss fs gs data16 data32 addr16 addr32 bnd notrack xacquire xrelease ", " "+w+" ")) {
			prefixOnly = false
		}
	}
	pe := prefixEnd(mode, b)

	// 1. A REX byte that is not the last prefix. SDM Vol. 2A 2.2.1 (REX
	// Prefixes): "the REX prefix byte must immediately precede the opcode
	// byte or the escape opcode byte (0FH) ... Other placements are ignored."
	// The byte stays part of the instruction; objdump instead prints the
	// prefixes up to that REX as a separate prefix-only line.
	if mode == decode.Mode64 && prefixOnly && objdumpLen < pe && objdumpLen >= 1 &&
		b[objdumpLen-1]&0xf0 == 0x40 && kbLen > objdumpLen {
		return "SDM 2A 2.2.1: a REX not immediately before the opcode is ignored, not an instruction", true
	}

	// 2. Long prefix runs. SDM Vol. 2A 2.1.1: prefixes are part of the
	// instruction, in any number, as long as the whole instruction fits in 15
	// bytes (2.3.11; longer raises #GP). objdump stops collecting prefixes
	// after 14 and prints those 14 as a prefix-only line, whatever follows
	// (kboost decodes what follows with those prefixes: a valid instruction
	// of at most 15 bytes, ErrTooLong, or ErrInvalid for its opcode). When
	// the instruction would run past 15 bytes, objdump prints its first
	// prefixes as a prefix-only line; kboost reports ErrTooLong.
	if prefixOnly && objdumpLen == 14 && pe >= 14 {
		return "SDM 2A 2.1.1: prefixes count toward the 15-byte limit only; objdump splits a run at 14 prefixes", true
	}
	if prefixOnly && errors.Is(kbErr, decode.ErrTooLong) && objdumpLen <= pe {
		return "SDM 2A 2.1.1: instruction longer than 15 bytes (#GP); objdump prints its prefixes as a separate line", true
	}

	// 3. A legacy 66/F2/F3/F0 or a REX prefix before VEX, EVEX or XOP. SDM
	// Vol. 2A 2.3.2 ("Any VEX-encoded instruction with a LOCK/66H/F2H/F3H/REX
	// prefix preceding VEX will #UD"), the same rule for EVEX (2.7, Intel
	// AVX-512 encoding) and, for XOP, the AMD APM Vol. 3 description of the
	// XOP prefix. objdump decodes the instruction anyway.
	if errors.Is(kbErr, decode.ErrInvalid) && pe+1 < len(b) && objdumpText != "" &&
		!strings.Contains(objdumpText, "(bad)") && !prefixOnly {
		c := b[pe]
		vex := (c == 0xc4 || c == 0xc5 || c == 0x62) && (mode == decode.Mode64 || b[pe+1] >= 0xc0) ||
			c == 0x8f && b[pe+1]&0x1f >= 8
		bad := false
		for _, p := range b[:pe] {
			if p == 0x66 || p == 0xf2 || p == 0xf3 || p == 0xf0 || mode == decode.Mode64 && p&0xf0 == 0x40 {
				bad = true
			}
		}
		if vex && bad {
			return "SDM 2A 2.3.2: 66/F2/F3/F0/REX before VEX/EVEX/XOP is #UD; objdump decodes it", true
		}
	}

	// 4. SWAPGS (0F 01 F8) outside 64-bit mode. SDM Vol. 2B SWAPGS:
	// "IF CS.L != 1 (* Not in 64-Bit Mode *) THEN #UD". objdump decodes it
	// in 32-bit code.
	if mode == decode.Mode32 && errors.Is(kbErr, decode.ErrInvalid) && pe+2 < len(b) &&
		b[pe] == 0x0f && b[pe+1] == 0x01 && b[pe+2] == 0xf8 && strings.HasSuffix(objdumpText, "swapgs") {
		return "SDM 2B SWAPGS: #UD outside 64-bit mode; objdump decodes it in 32-bit code", true
	}

	// 5. FWAIT (9B). SDM Vol. 2A FWAIT/WAIT and e.g. FSTSW/FNSTSW: 9B is a
	// complete one-byte instruction; "FSTSW" is the assembler's name for the
	// pair 9B + FNSTSW. objdump treats 9B as a prefix: it prints 9B with the
	// following x87 instruction as one instruction, and a REX before 9B as a
	// prefix-only line (kboost: REX + FWAIT, the REX having no effect).
	if pe < len(b) && b[pe] == 0x9b && kbErr == nil && kbLen == pe+1 {
		if objdumpLen > kbLen && !strings.HasPrefix(objdumpText, "fwait") {
			return "SDM 2A FWAIT: 9B is an instruction of its own; objdump merges it with the following x87 instruction", true
		}
		if mode == decode.Mode64 && prefixOnly && objdumpLen == pe && b[pe-1]&0xf0 == 0x40 {
			return "SDM 2A FWAIT: 9B is an opcode, so a REX before it belongs to it; objdump treats 9B as a prefix", true
		}
	}
	return "", false
}

// ---------------------------------------------------------------------------
// Comparison bookkeeping.

type sample struct {
	bytes   []byte
	addr    uint64
	objLen  int
	objText string
	kbLen   int
	kbErr   string
	where   string
}

type group struct {
	key     string
	count   int
	samples []sample
}

type tally struct {
	name       string
	mode       decode.Mode
	start      time.Time
	compared   int // instructions compared
	agreeValid int
	agreeBad   int // (bad) vs ErrInvalid
	agreeTrunc int // .byte vs ErrTruncated
	allowed    map[string]int
	mismatch   map[string]*group
	nMismatch  int
	// validity: objdump "(bad)" where kboost decodes a length, by encoding.
	validity        map[string]int
	validitySamples map[string][]string
	nValidity       int
	notes           []string
	logMu           sync.Mutex
	log             *os.File // KBOOST_ORACLE_LOG file, nil if unset
}

func newTally(name string, mode decode.Mode) *tally {
	return &tally{name: name, mode: mode, start: time.Now(), allowed: map[string]int{}, mismatch: map[string]*group{},
		validity: map[string]int{}, validitySamples: map[string][]string{}}
}

// opKey names the encoding of b for grouping mismatches: map, opcode byte,
// the mandatory-prefix selector (none/66/f3/f2 or VEX/EVEX pp), ModRM.mod as
// reg/mem, ModRM.reg for group opcodes, and for VEX/EVEX/XOP the L, W and
// whether vvvv is 1111 (unused). It is found without the decoder under test.
func opKey(mode decode.Mode, b []byte) string {
	i := prefixEnd(mode, b)
	if i >= len(b) {
		return "prefixes-only"
	}
	pfx := "none"
	for _, c := range b[:i] {
		switch {
		case c == 0xf2 || c == 0xf3:
			pfx = fmt.Sprintf("%02x", c)
		case c == 0x66 && pfx == "none":
			pfx = "66"
		}
	}
	at := func(k int) int {
		if k < len(b) {
			return int(b[k])
		}
		return -1
	}
	modrm := func(k int, group bool) string {
		m := at(k)
		if m < 0 {
			return ""
		}
		s := " mem"
		if m>>6 == 3 {
			s = " reg"
		}
		if group {
			s += fmt.Sprintf(" /%d", m>>3&7)
		}
		return s
	}
	c := b[i]
	vexLike := i+1 < len(b) && (mode == decode.Mode64 || b[i+1] >= 0xc0)
	ppName := [4]string{"none", "66", "f3", "f2"}
	switch {
	case c == 0x0f && i+1 < len(b):
		op := b[i+1]
		switch op {
		case 0x38, 0x3a:
			if i+2 < len(b) {
				return fmt.Sprintf("0f%02x %02x %s%s", op, b[i+2], pfx, modrm(i+3, op == 0x38 && b[i+2] == 0xf3))
			}
		case 0x0f:
			return "3dnow" + modrm(i+2, false)
		}
		group := op <= 0x01 || op == 0x18 || op >= 0x71 && op <= 0x73 || op == 0xae || op == 0xba ||
			op == 0xc7 || op == 0xb9 || op == 0x0d || op == 0xa6 || op == 0xa7
		return fmt.Sprintf("0f %02x %s%s", op, pfx, modrm(i+2, group))
	case c == 0xc5 && vexLike && i+2 < len(b):
		v := b[i+1]
		return fmt.Sprintf("vex map1 %02x %s L%d W0 %s%s", b[i+2], ppName[v&3], v>>2&1, vvvv(v>>3&15),
			modrm(i+3, b[i+2] >= 0x71 && b[i+2] <= 0x73 || b[i+2] == 0xae))
	case c == 0xc4 && vexLike && i+3 < len(b):
		m, v := b[i+1]&31, b[i+2]
		return fmt.Sprintf("vex map%d %02x %s L%d W%d %s%s", m, b[i+3], ppName[v&3], v>>2&1, v>>7, vvvv(v>>3&15),
			modrm(i+4, m == 1 && (b[i+3] >= 0x71 && b[i+3] <= 0x73 || b[i+3] == 0xae) || m == 2 && b[i+3] == 0xf3))
	case c == 0x62 && vexLike && i+4 < len(b):
		m, v, p2 := b[i+1]&7, b[i+2], b[i+3]
		return fmt.Sprintf("evex map%d %02x %s L%d W%d %s b%d%s", m, b[i+4], ppName[v&3], p2>>5&3, v>>7,
			vvvv(v>>3&15), p2>>4&1, modrm(i+5, m == 1 && b[i+4] >= 0x71 && b[i+4] <= 0x73 || m == 2 && b[i+4] >= 0xc6 && b[i+4] <= 0xc7))
	case c == 0x8f && i+3 < len(b) && b[i+1]&0x1f >= 8:
		m, v := b[i+1]&31, b[i+2]
		return fmt.Sprintf("xop map%d %02x %s L%d W%d %s%s", m, b[i+3], ppName[v&3], v>>2&1, v>>7, vvvv(v>>3&15),
			modrm(i+4, m == 9 && b[i+3] <= 0x02 || m == 9 && b[i+3] == 0x12 || m == 10 && b[i+3] == 0x12))
	}
	if c&0xf8 == 0xd8 || c == 0xf6 || c == 0xf7 || c == 0xfe || c == 0xff || c >= 0x80 && c <= 0x83 ||
		c == 0xc0 || c == 0xc1 || c >= 0xd0 && c <= 0xd3 || c == 0x8f || c == 0xc6 || c == 0xc7 {
		return fmt.Sprintf("%02x%s", c, modrm(i+1, true))
	}
	return fmt.Sprintf("%02x", c)
}

func vvvv(inv byte) string {
	if inv == 15 {
		return "vvvv=unused"
	}
	return "vvvv=used"
}

// check compares one objdump record with kboost's decode of b (the bytes at
// r.Addr up to the end of what objdump could see).
func (tl *tally) check(t *testing.T, r *objdump.Record, b []byte, where string) {
	tl.compared++
	var inst decode.Inst
	err := decode.DecodeInto(&inst, b, tl.mode, r.Addr)
	kbLen := inst.Len
	var de *decode.DecodeError
	if errors.As(err, &de) {
		kbLen = de.Len
	}
	switch {
	case err == nil && !r.Bad && !r.Truncated && kbLen == r.Len:
		tl.agreeValid++
		return
	case r.Bad && (errors.Is(err, decode.ErrInvalid) || errors.Is(err, decode.ErrTooLong)):
		tl.agreeBad++
		return
	case (r.Truncated || r.PrefixOnly) && errors.Is(err, decode.ErrTruncated):
		tl.agreeTrunc++
		return
	}
	if reason, ok := allowedMismatch(tl.mode, b, r.Len, r.Text, kbLen, err); ok {
		tl.allowed[reason]++
		return
	}
	class := "length"
	switch {
	case r.Bad && err == nil:
		// objdump makes no length claim for "(bad)": this is a validity
		// difference (kboost decodes a structural length where objdump, and
		// usually the CPU, say #UD), not a length disagreement. Counted and
		// reported apart; it does not fail the test. The kernel's decoder,
		// which decides kprobe boundaries, does not validate either.
		key := opKey(tl.mode, b)
		tl.validity[key]++
		tl.nValidity++
		if len(tl.validitySamples[key]) < 1 {
			tl.validitySamples[key] = append(tl.validitySamples[key], fmt.Sprintf("% x", b[:min(len(b), 15)]))
		}
		return
	case r.Bad:
		class = "objdump-bad/kboost-" + errClass(err)
	case err != nil:
		class = "objdump-valid/kboost-" + errClass(err)
	case r.PrefixOnly:
		class = "objdump-prefix-only"
	}
	key := fmt.Sprintf("%s %s", class, opKey(tl.mode, b))
	g := tl.mismatch[key]
	if g == nil {
		g = &group{key: key}
		tl.mismatch[key] = g
	}
	g.count++
	tl.nMismatch++
	n := min(len(b), 15)
	s := sample{bytes: append([]byte(nil), b[:n]...), addr: r.Addr, objLen: r.Len, objText: r.Text,
		kbLen: kbLen, where: where}
	if err != nil {
		s.kbErr = err.Error()
	}
	if len(g.samples) < 3 {
		g.samples = append(g.samples, s)
	}
	if g.count <= 3 && tl.log != nil {
		tl.logMu.Lock()
		fmt.Fprintf(tl.log, "%s\tmode=%v\t%s\tbytes=% x\tobjdump len=%d %q\tkboost len=%d err=%v\t%s\n",
			time.Now().UTC().Format(time.RFC3339), tl.mode, tl.name, s.bytes, s.objLen, s.objText, s.kbLen,
			s.kbErr, where)
		tl.logMu.Unlock()
	}
}

func errClass(err error) string {
	for _, e := range []error{decode.ErrInvalid, decode.ErrTruncated, decode.ErrTooLong} {
		if errors.Is(err, e) {
			return strings.ReplaceAll(e.Error(), " ", "-")
		}
	}
	return "error"
}

// report prints totals and the grouped mismatches, and fails on any mismatch.
func (tl *tally) report(t *testing.T) {
	t.Helper()
	el := time.Since(tl.start)
	t.Logf("%s (%v-bit): %d instructions compared in %v (%.0f/s): %d agree, %d both invalid ((bad) vs ErrInvalid), %d both truncated, %d allowed, %d mismatches; %d validity differences (objdump (bad), kboost a length: not failures)",
		tl.name, tl.mode, tl.compared, el.Round(time.Millisecond), float64(tl.compared)/el.Seconds(),
		tl.agreeValid, tl.agreeBad, tl.agreeTrunc, sum(tl.allowed), tl.nMismatch, tl.nValidity)
	if tl.nValidity > 0 {
		keys := make([]string, 0, len(tl.validity))
		for k := range tl.validity {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return tl.validity[keys[i]] > tl.validity[keys[j]] })
		for i, k := range keys {
			if i == 10 {
				t.Logf("  validity: ... %d more encodings", len(keys)-10)
				break
			}
			t.Logf("  validity %8d  %s  e.g. %s", tl.validity[k], k, tl.validitySamples[k][0])
		}
	}
	for _, n := range tl.notes {
		t.Logf("%s: note: %s", tl.name, n)
	}
	var reasons []string
	for r := range tl.allowed {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		t.Logf("  allowed %8d  %s", tl.allowed[r], r)
	}
	var gs []*group
	byClass := map[string]int{}
	for _, g := range tl.mismatch {
		gs = append(gs, g)
		class, _, _ := strings.Cut(g.key, " ")
		byClass[class] += g.count
	}
	var classes []string
	for c := range byClass {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		t.Logf("  class %-45s %8d mismatches", c, byClass[c])
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].count != gs[j].count {
			return gs[i].count > gs[j].count
		}
		return gs[i].key < gs[j].key
	})
	maxGroups := 60
	if v, err := strconv.Atoi(os.Getenv("KBOOST_ORACLE_GROUPS")); err == nil && v > 0 {
		maxGroups = v
	}
	for i, g := range gs {
		if i == maxGroups {
			t.Logf("  ... %d more groups", len(gs)-i)
			break
		}
		t.Logf("  MISMATCH %7d  %s", g.count, g.key)
		for _, s := range g.samples {
			t.Logf("      %#x [% x]: objdump len %d %q; kboost len %d %s (%s)",
				s.addr, s.bytes, s.objLen, s.objText, s.kbLen, s.kbErr, s.where)
		}
	}
	if tl.nMismatch > 0 {
		t.Errorf("%s: %d length disagreements with objdump in %d groups (see above and allowedMismatch)",
			tl.name, tl.nMismatch, len(gs))
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// mismatchLog opens the shared mismatch log named by KBOOST_ORACLE_LOG, if set.
func mismatchLog(t *testing.T) *os.File {
	p := os.Getenv("KBOOST_ORACLE_LOG")
	if p == "" {
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Logf("mismatch log %s: %v", p, err)
		return nil
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// ---------------------------------------------------------------------------
// ELF files: objdump -d over every executable section.

type elfSection struct {
	name string
	addr uint64
	data []byte
}

// compareELF disassembles path with objdump and compares every instruction.
func compareELF(ctx context.Context, t *testing.T, tl *tally, path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	secs := map[string]*elfSection{}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Type == elf.SHT_NOBITS || s.Size == 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return fmt.Errorf("%s: section %s: %w", path, s.Name, err)
		}
		secs[s.Name] = &elfSection{name: s.Name, addr: s.Addr, data: data}
	}
	cfg := objdump.Config{Intel64: tl.mode == decode.Mode64}
	// objdump does not decode past its stop address, the start of the next
	// symbol (or a switch to an object symbol it dumps as data): an
	// instruction that would cross it is printed as ".byte" lines, or as a
	// prefix-only line and ".byte" lines, up to the boundary. So kboost gets
	// the bytes up to that boundary too. A record waits in the queue until
	// the boundary after it is known: the next record for an instruction,
	// the first record after a run of ".byte" and prefix-only lines for one
	// of those.
	var queue []objdump.Record
	dataBytes := 0
	process := func(h *objdump.Record, next *objdump.Record) error {
		s := secs[h.Section]
		if s == nil {
			return fmt.Errorf("%s: objdump disassembled section %q, which is not executable in the ELF", path, h.Section)
		}
		off := h.Addr - s.addr
		if h.Addr < s.addr || off+uint64(h.Len) > uint64(len(s.data)) {
			return fmt.Errorf("%s: objdump record %#x+%d outside section %s", path, h.Addr, h.Len, s.name)
		}
		end := uint64(len(s.data))
		if next != nil && next.Section == h.Section && (next.Symbol != h.Symbol || next.Data && !h.Data) &&
			next.Addr > h.Addr {
			end = min(end, next.Addr-s.addr)
		}
		b := s.data[off:end]
		if !bytes.Equal(b[:h.Len], h.Bytes) {
			return fmt.Errorf("%s: objdump bytes at %#x [% x] differ from the ELF's [% x]", path, h.Addr, h.Bytes, b[:h.Len])
		}
		if h.Data {
			dataBytes += h.Len // an object symbol objdump dumps as data
			return nil
		}
		tl.check(t, h, b, fmt.Sprintf("%s %s <%s>", filepath.Base(path), h.Section, h.Symbol))
		return nil
	}
	// drain processes the queued records whose boundary is known; all of
	// them at the end of the output.
	drain := func(final bool) error {
		for len(queue) > 0 {
			h := &queue[0]
			j := 1
			if h.Truncated || h.PrefixOnly {
				for j < len(queue) && (queue[j].Truncated || queue[j].PrefixOnly) {
					j++
				}
			}
			var next *objdump.Record
			if j < len(queue) {
				next = &queue[j]
			} else if !final {
				return nil
			}
			if err := process(h, next); err != nil {
				return err
			}
			queue = queue[1:]
		}
		return nil
	}
	err = objdump.Run(ctx, path, cfg, func(r *objdump.Record) error {
		x := *r
		x.Bytes = append([]byte(nil), r.Bytes...)
		queue = append(queue, x)
		return drain(false)
	})
	if err != nil {
		return err
	}
	if err := drain(true); err != nil {
		return err
	}
	if dataBytes > 0 {
		tl.notes = append(tl.notes, fmt.Sprintf("%s: %d bytes of object symbols in code sections dumped as data by objdump, not compared",
			filepath.Base(path), dataBytes))
	}
	return nil
}

// ---------------------------------------------------------------------------
// Kernels.

// debianVmlinux returns the path of the uncompressed vmlinux of the current
// kernel of the Debian meta package meta (e.g. "linux-image-amd64"): the
// package is fetched with apt-get and cached by kimage.FetchDebianKernel, the
// vmlinux extracted once and cached in CacheDir()/vmlinux.
func debianVmlinux(t *testing.T, meta string) string {
	t.Helper()
	deb, err := kimage.FetchDebianKernel(context.Background(), meta)
	if err != nil {
		t.Fatalf("fetching %s: %v", meta, err)
	}
	dir := filepath.Join(kimage.CacheDir(), "vmlinux")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The same name as the CLI's cache (internal/cli), so both share it.
	vmlinux := filepath.Join(dir, strings.TrimSuffix(filepath.Base(deb), ".deb")+".elf")
	if _, err := os.Stat(vmlinux); err == nil {
		return vmlinux
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		t.Fatal(err)
	}
	v, err := kimage.ExtractVmlinux(dk.Vmlinuz)
	if err != nil {
		t.Fatalf("%s: vmlinuz: %v", deb, err)
	}
	tmp := fmt.Sprintf("%s.tmp%d", vmlinux, os.Getpid())
	if err := os.WriteFile(tmp, v, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, vmlinux); err != nil {
		t.Fatal(err)
	}
	return vmlinux
}

func testKernel(t *testing.T, meta string, mode decode.Mode) {
	oracleGate(t)
	path := debianVmlinux(t, meta)
	tl := newTally(filepath.Base(path), mode)
	tl.log = mismatchLog(t)
	if err := compareELF(context.Background(), t, tl, path); err != nil {
		t.Fatal(err)
	}
	if tl.compared < 1000000 {
		t.Errorf("%s: only %d instructions compared; expected millions", path, tl.compared)
	}
	tl.report(t)
}

// TestOracleVmlinuxAmd64: every executable section of Debian's amd64 kernel.
func TestOracleVmlinuxAmd64(t *testing.T) { testKernel(t, "linux-image-amd64", decode.Mode64) }

// TestOracleVmlinux686: every executable section of Debian's 686 (i386) kernel.
func TestOracleVmlinux686(t *testing.T) { testKernel(t, "linux-image-686", decode.Mode32) }

// TestOracleUsrBin: every x86 ELF reachable from /usr/bin (symlinks resolved,
// each file once), 64- or 32-bit by ELF class. KBOOST_ORACLE_ELF=file:file...
// compares those files instead.
func TestOracleUsrBin(t *testing.T) {
	oracleGate(t)
	dir := "/usr/bin"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	var skipped []string
	modes := map[string]decode.Mode{}
	seen := map[string]bool{}
	var paths []string
	for _, e := range ents {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	if only := os.Getenv("KBOOST_ORACLE_ELF"); only != "" {
		paths = filepath.SplitList(only) // for re-running a few files
	}
	for _, p := range paths {
		p, err := filepath.EvalSymlinks(p)
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			continue // not an ELF file (scripts)
		}
		switch {
		case f.Machine == elf.EM_X86_64 && f.Class == elf.ELFCLASS64:
			modes[p] = decode.Mode64
		case f.Machine == elf.EM_386 && f.Class == elf.ELFCLASS32:
			modes[p] = decode.Mode32
		default:
			skipped = append(skipped, fmt.Sprintf("%s (%v %v)", p, f.Class, f.Machine))
			f.Close()
			continue
		}
		f.Close()
		files = append(files, p)
	}
	for _, s := range skipped {
		t.Logf("skipping non-x86 ELF %s", s)
	}
	tl := map[decode.Mode]*tally{
		decode.Mode64: newTally("/usr/bin 64-bit", decode.Mode64),
		decode.Mode32: newTally("/usr/bin 32-bit", decode.Mode32),
	}
	logf := mismatchLog(t)
	for _, x := range tl {
		x.log = logf
	}
	// Two workers: objdump in one process, parsing and decoding in ours.
	type result struct {
		path string
		tl   *tally
		err  error
	}
	work := make(chan string)
	results := make(chan result)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				x := newTally(p, modes[p])
				err := compareELF(context.Background(), t, x, p)
				results <- result{p, x, err}
			}
		}()
	}
	go func() {
		for _, p := range files {
			work <- p
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	nfiles := map[decode.Mode]int{}
	for r := range results {
		if r.err != nil {
			t.Errorf("%s: %v", r.path, r.err)
			continue
		}
		nfiles[r.tl.mode]++
		merge(tl[r.tl.mode], r.tl)
	}
	for _, m := range []decode.Mode{decode.Mode64, decode.Mode32} {
		tl[m].notes = append(tl[m].notes, fmt.Sprintf("%d files", nfiles[m]))
		if nfiles[m] > 0 {
			tl[m].report(t)
		}
	}
	if nfiles[decode.Mode64] == 0 {
		t.Errorf("no x86-64 ELF found in %s", dir)
	}
}

// merge adds src's counts into dst.
func merge(dst, src *tally) {
	dst.notes = append(dst.notes, src.notes...)
	dst.compared += src.compared
	dst.agreeValid += src.agreeValid
	dst.agreeBad += src.agreeBad
	dst.agreeTrunc += src.agreeTrunc
	dst.nMismatch += src.nMismatch
	dst.nValidity += src.nValidity
	for k, v := range src.validity {
		dst.validity[k] += v
		if len(dst.validitySamples[k]) == 0 {
			dst.validitySamples[k] = src.validitySamples[k]
		}
	}
	for k, v := range src.allowed {
		dst.allowed[k] += v
	}
	for k, g := range src.mismatch {
		d := dst.mismatch[k]
		if d == nil {
			d = &group{key: k}
			dst.mismatch[k] = d
		}
		d.count += g.count
		for _, s := range g.samples {
			if len(d.samples) < 3 {
				d.samples = append(d.samples, s)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Fuzz: generated byte strings, each in its own 32-byte slot.

const (
	slotSize = 32
	slotFill = 0x90
)

func oracleN(t *testing.T) int {
	n := 1000000
	if s := os.Getenv("KBOOST_ORACLE_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("KBOOST_ORACLE_N=%q: want a positive integer", s)
		}
		n = v
	}
	return n
}

// runSlots feeds candidates from next, each in its own 32-byte slot, to
// objdump in batches and compares the first instruction of every slot.
func runSlots(t *testing.T, tl *tally, machine string, next func(dst []byte) ([]byte, string, bool)) {
	t.Helper()
	const batch = 1 << 16
	const vma = 0x100000
	buf := make([]byte, batch*slotSize)
	kinds := make([]string, batch)
	var cand []byte
	for more := true; more; {
		m := 0
		for m < batch {
			var kind string
			var ok bool
			cand, kind, ok = next(cand[:0])
			if !ok {
				more = false
				break
			}
			if len(cand) > 15 {
				t.Fatalf("candidate longer than 15 bytes: % x", cand)
			}
			slot := buf[m*slotSize : (m+1)*slotSize]
			copy(slot, cand)
			for j := len(cand); j < slotSize; j++ {
				slot[j] = slotFill
			}
			kinds[m] = kind
			m++
		}
		if m == 0 {
			break
		}
		code := buf[:m*slotSize]
		nextSlot := 0 // the slot whose start we expect next
		err := objdump.RunBytes(context.Background(), code, objdump.Config{Machine: machine,
			Intel64: tl.mode == decode.Mode64, VMA: vma}, func(r *objdump.Record) error {
			off := r.Addr - vma
			if off%slotSize != 0 {
				if off/slotSize >= uint64(nextSlot) {
					return fmt.Errorf("objdump record at %#x [% x] %q starts inside slot %d before its first instruction",
						r.Addr, r.Bytes, r.Text, off/slotSize)
				}
				if off+uint64(r.Len) > uint64(nextSlot)*slotSize {
					return fmt.Errorf("objdump record at %#x [% x] %q crosses into slot %d",
						r.Addr, r.Bytes, r.Text, nextSlot)
				}
				return nil
			}
			i := int(off / slotSize)
			if i != nextSlot {
				return fmt.Errorf("objdump skipped slot %d (next record at slot %d)", nextSlot, i)
			}
			nextSlot++
			tl.check(t, r, code[off:off+slotSize], kinds[i])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if nextSlot != m {
			t.Fatalf("objdump printed %d of %d slots", nextSlot, m)
		}
	}
}

// TestOracleFuzz decodes generated candidates (x86gen) with objdump and
// kboost in both modes. Each candidate (at most 15 bytes) sits at the start of
// its own 32-byte slot, the rest filled with 0x90 (NOP). Whatever objdump
// decodes after the candidate's first instruction starts before byte 15 and
// so ends by byte 29 (15-byte limit); bytes 15..31 are NOPs, so objdump is
// back in step at the next slot. Only the first instruction of each slot is
// compared; kboost sees the whole slot, as objdump does.
func TestOracleFuzz(t *testing.T) {
	oracleGate(t)
	n := oracleN(t)
	for _, mode := range []decode.Mode{decode.Mode64, decode.Mode32} {
		t.Run(mode.String(), func(t *testing.T) {
			tl := newTally(fmt.Sprintf("fuzz %v-bit", mode), mode)
			tl.log = mismatchLog(t)
			bits := 64
			machine := objdump.MachineX86_64
			if mode == decode.Mode32 {
				bits, machine = 32, objdump.MachineI386
			}
			gen := x86gen.New(x86gen.Config{Seed: 1, Bits: bits})
			left := n
			runSlots(t, tl, machine, func(dst []byte) ([]byte, string, bool) {
				if left == 0 {
					return dst, "", false
				}
				left--
				dst = gen.Next(dst)
				return dst, "fuzz " + gen.Last().String(), true
			})
			if tl.compared != n {
				t.Errorf("compared %d cases, want %d", tl.compared, n)
			}
			tl.report(t)
		})
	}
}

// TestOracleSweep runs the systematic opcode sweep (x86gen.Sweep: every
// opcode of every map under each mandatory prefix / VEX, EVEX, XOP field
// combination, register and memory ModRM forms of each ModRM.reg) through the
// same slot harness as TestOracleFuzz, in both modes.
func TestOracleSweep(t *testing.T) {
	oracleGate(t)
	for _, mode := range []decode.Mode{decode.Mode64, decode.Mode32} {
		t.Run(mode.String(), func(t *testing.T) {
			tl := newTally(fmt.Sprintf("sweep %v-bit", mode), mode)
			tl.log = mismatchLog(t)
			bits, machine := 64, objdump.MachineX86_64
			if mode == decode.Mode32 {
				bits, machine = 32, objdump.MachineI386
			}
			sw := x86gen.NewSweep(bits)
			runSlots(t, tl, machine, func(dst []byte) ([]byte, string, bool) {
				dst, ok := sw.Next(dst)
				return dst, "sweep", ok
			})
			if tl.compared != sw.Len() {
				t.Errorf("compared %d cases, want %d", tl.compared, sw.Len())
			}
			tl.report(t)
		})
	}
}

// TestOracleGolden checks testdata/decode.golden against objdump: each line's
// bytes are disassembled on their own at the golden address, and objdump must
// agree with the line's length (or error), branch target and RIP-relative
// address, under the same rules and allowedMismatch as the other oracles.
// Truncated lines are given to objdump without the rest, so that it runs out
// of bytes too: it must then print ".byte" somewhere (or, for a lone prefix
// run, only prefix-only lines).
func TestOracleGolden(t *testing.T) {
	oracleGate(t)
	cases := loadGolden(t)
	tl := map[decode.Mode]*tally{
		decode.Mode64: newTally("golden 64-bit", decode.Mode64),
		decode.Mode32: newTally("golden 32-bit", decode.Mode32),
	}
	for _, c := range cases {
		machine := objdump.MachineX86_64
		if c.mode == decode.Mode32 {
			machine = objdump.MachineI386
		}
		it, isErr := c.want("err")
		truncated := isErr && it.value == "truncated"
		code := c.input()
		if truncated {
			code = c.insn
		} else {
			for len(code) < slotSize {
				code = append(code, slotFill)
			}
		}
		var recs []objdump.Record
		err := objdump.RunBytes(context.Background(), code, objdump.Config{Machine: machine,
			Intel64: c.mode == decode.Mode64, VMA: goldenAddr}, func(r *objdump.Record) error {
			x := *r
			x.Bytes = append([]byte(nil), r.Bytes...)
			recs = append(recs, x)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("decode.golden:%d", c.line)
		if len(recs) == 0 || recs[0].Addr != goldenAddr {
			t.Errorf("%s: objdump printed no record at %#x", where, goldenAddr)
			continue
		}
		if truncated {
			tl[c.mode].compared++
			// objdump, out of bytes, prints ".byte" for what it cannot finish;
			// before that it may print the prefixes on their own and decode
			// what follows them as a shorter instruction. A lone prefix run
			// is printed as prefix-only lines.
			anyTrunc, allPrefixOnly := false, true
			for _, r := range recs {
				anyTrunc = anyTrunc || r.Truncated
				allPrefixOnly = allPrefixOnly && r.PrefixOnly
			}
			allPrefixes := prefixEnd(c.mode, c.insn) == len(c.insn)
			if anyTrunc || allPrefixOnly && allPrefixes {
				tl[c.mode].agreeTrunc++
			} else {
				t.Errorf("%s [% x] mode %v: objdump does not run out of bytes: first record %q", where, c.insn, c.mode, recs[0].Text)
			}
			continue
		}
		before := tl[c.mode].nMismatch
		tl[c.mode].check(t, &recs[0], code, where)
		if tl[c.mode].nMismatch > before {
			continue
		}
		text := recs[0].Text
		if v, ok := c.want("target"); ok {
			if !containsWord(text, v.value) {
				t.Errorf("%s: objdump %q does not show target %s", where, text, v.value)
			}
		}
		if v, ok := c.want("ripaddr"); ok {
			if !strings.HasSuffix(text, "# "+v.value) {
				t.Errorf("%s: objdump %q does not show RIP-relative address %s", where, text, v.value)
			}
		}
	}
	for _, m := range []decode.Mode{decode.Mode64, decode.Mode32} {
		tl[m].report(t)
	}
}

// containsWord reports whether text contains w delimited by non-hex characters.
func containsWord(text, w string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if end == len(text) || !strings.ContainsRune("0123456789abcdefx", rune(text[end])) {
			return true
		}
		i = j + 1
	}
}

// allowedX86asmMismatch explains a length disagreement with
// golang.org/x/arch/x86/x86asm, which decodes a subset of x86 and has known
// gaps. b is the input, xLen x86asm's length, kbLen/kbErr kboost's result.
func allowedX86asmMismatch(mode decode.Mode, b []byte, xLen int, kbLen int, kbErr error) (string, bool) {
	if kbErr != nil {
		return "", false
	}
	pe := prefixEnd(mode, b)
	// MOV to/from control, debug (and, on the 386/486, test) registers,
	// 0F 20-24 and 0F 26: SDM Vol. 2B MOV—Move to/from Control Registers
	// and Debug Registers: "The two bits in the mod field are ignored"; the
	// r/m field always names a register, so no SIB or displacement follows.
	// x86asm reads a memory operand's SIB and displacement.
	if pe+2 < len(b) && b[pe] == 0x0f && b[pe+1] >= 0x20 && b[pe+1] <= 0x26 && b[pe+1] != 0x25 &&
		kbLen == pe+3 && xLen > kbLen {
		return "SDM 2B MOV CRn/DRn: mod is ignored, no SIB or displacement (x86asm reads them)", true
	}
	// VZEROUPPER/VZEROALL, VEX 0F 77: SDM Vol. 2C: no ModRM byte follows the
	// opcode; x86asm decodes one (and its SIB/displacement).
	if pe+1 < len(b) {
		vexEnd := 0
		switch {
		case b[pe] == 0xc5 && (mode == decode.Mode64 || b[pe+1] >= 0xc0) && pe+2 < len(b):
			vexEnd = pe + 2
		case b[pe] == 0xc4 && (mode == decode.Mode64 || b[pe+1] >= 0xc0) && pe+3 < len(b) && b[pe+1]&31 == 1:
			vexEnd = pe + 3
		}
		if vexEnd > 0 && b[vexEnd] == 0x77 && kbLen == vexEnd+1 && xLen > kbLen {
			return "SDM 2C VZEROUPPER/VZEROALL: VEX 0F 77 has no ModRM (x86asm reads one)", true
		}
	}
	return "", false
}

// TestX86asmCrossCheck compares kboost's lengths with x86asm's wherever
// x86asm decodes an instruction: over the golden corpus and generated
// candidates (no objdump needed, so not gated).
func TestX86asmCrossCheck(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	type input struct {
		b     []byte
		mode  decode.Mode
		where string
	}
	var ins []input
	for _, c := range loadGolden(t) {
		ins = append(ins, input{c.input(), c.mode, fmt.Sprintf("decode.golden:%d", c.line)})
	}
	for _, mode := range []decode.Mode{decode.Mode64, decode.Mode32} {
		bits := 64
		if mode == decode.Mode32 {
			bits = 32
		}
		g := x86gen.New(x86gen.Config{Seed: 2, Bits: bits})
		for range n {
			b := g.Next(nil)
			for len(b) < slotSize {
				b = append(b, slotFill)
			}
			ins = append(ins, input{b, mode, "x86gen " + g.Last().String()})
		}
	}
	groups := map[string]int{}
	samples := map[string][]string{}
	allowed := map[string]int{}
	compared, mism, kbInvalid := 0, 0, 0
	for _, in := range ins {
		bits := 64
		if in.mode == decode.Mode32 {
			bits = 32
		}
		xi, xerr := x86asm.Decode(in.b, bits)
		if xerr != nil || xi.Op == 0 {
			continue // x86asm does not decode it (Op 0: a prefix it could not attach)
		}
		kb, err := decode.Decode(in.b, in.mode, 0x1000)
		kbLen := kb.Len
		if err != nil {
			// x86asm does not check validity (mandatory prefixes, mod
			// restrictions, VEX fields): it decodes many #UD encodings.
			// Validity is judged against objdump and the SDM instead.
			kbInvalid++
			continue
		}
		compared++
		if kbLen == xi.Len {
			continue
		}
		if r, ok := allowedX86asmMismatch(in.mode, in.b, xi.Len, kbLen, err); ok {
			allowed[r]++
			continue
		}
		mism++
		key := fmt.Sprintf("%v-bit %s", in.mode, opKey(in.mode, in.b))
		if err != nil {
			key += " kboost-" + errClass(err)
		}
		groups[key]++
		if len(samples[key]) < 2 {
			samples[key] = append(samples[key], fmt.Sprintf("[% x] x86asm len %d %q; kboost len %d %v (%s)",
				in.b[:min(15, len(in.b))], xi.Len, xi.String(), kbLen, err, in.where))
		}
	}
	t.Logf("x86asm cross-check: %d inputs, %d decoded by both and compared, %d decoded by x86asm only (kboost: invalid), %d allowed, %d mismatches in %d groups",
		len(ins), compared, kbInvalid, sum(allowed), mism, len(groups))
	for r, c := range allowed {
		t.Logf("  allowed %7d  %s", c, r)
	}
	var keys []string
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return groups[keys[i]] > groups[keys[j]] })
	for i, k := range keys {
		if i == 80 {
			break
		}
		t.Logf("  MISMATCH %6d  %s", groups[k], k)
		for _, s := range samples[k] {
			t.Logf("      %s", s)
		}
	}
	if mism > 0 {
		t.Errorf("%d length disagreements with x86asm not covered by allowedX86asmMismatch", mism)
	}
}

// TestAllowedMismatch pins each allowedMismatch rule to an example objdump
// really prints (binutils 2.40) and checks that near misses are not excused.
func TestAllowedMismatch(t *testing.T) {
	inv := &decode.DecodeError{Err: decode.ErrInvalid}
	long := &decode.DecodeError{Err: decode.ErrTooLong}
	rep := func(b byte, n int, tail ...byte) []byte {
		return append(bytes.Repeat([]byte{b}, n), tail...)
	}
	m64, m32 := decode.Mode64, decode.Mode32
	for _, c := range []struct {
		mode    decode.Mode
		b       []byte
		objLen  int
		objText string
		kbLen   int
		kbErr   error
		want    bool
	}{
		// 1. REX not last.
		{m64, []byte{0x48, 0x66, 0x90}, 1, "rex.W", 3, nil, true},
		{m64, []byte{0xf0, 0x48, 0xf0, 0x48, 0x90}, 2, "lock rex.W", 5, nil, true},
		{m64, []byte{0x48, 0x90}, 1, "rex.W", 2, nil, false},
		{m32, []byte{0x48, 0x66, 0x90}, 1, "dec    %eax", 3, nil, false},
		// 2. Prefix runs.
		{m64, rep(0x66, 14, 0x90), 14, strings.Repeat("data16 ", 14), 15, nil, true},
		{m64, rep(0x66, 14, 0x0e), 14, strings.Repeat("data16 ", 14), 15, inv, true},
		{m64, rep(0x66, 13, 0xc5, 0xf8), 1, "data16", 15, long, true},
		{m64, rep(0x66, 13, 0x90), 13, strings.Repeat("data16 ", 13), 14, nil, false},
		{m64, []byte{0x66, 0x90}, 1, "data16", 2, nil, false},
		// 3. Prefix before VEX/EVEX/XOP.
		{m64, []byte{0x66, 0xc5, 0xf8, 0x77}, 4, "data16 vzeroupper", 4, inv, true},
		{m32, []byte{0xf3, 0xc4, 0xe2, 0x79, 0x18, 0x00}, 6, "repz vbroadcastss (%eax),%xmm0", 6, inv, true},
		{m64, []byte{0xc5, 0xf8, 0x77}, 3, "vzeroupper", 3, inv, false},
		{m32, []byte{0x66, 0xc5, 0x00}, 3, "lds    (%eax),%ax", 3, inv, false},
		{m64, []byte{0x66, 0xc5, 0xf8, 0x77}, 4, "data16 vzeroupper", 4, nil, false},
		// 4. SWAPGS in 32-bit code.
		{m32, []byte{0x0f, 0x01, 0xf8}, 3, "swapgs", 3, inv, true},
		{m64, []byte{0x0f, 0x01, 0xf8}, 3, "swapgs", 3, inv, false},
		// 5. FWAIT.
		{m32, []byte{0x9b, 0xdf, 0xe0}, 3, "fstsw  %ax", 1, nil, true},
		{m64, []byte{0x9b, 0x9b, 0xdb, 0xe3}, 4, "finit", 1, nil, true},
		{m64, []byte{0x42, 0x9b, 0xbc}, 1, "rex.X", 2, nil, true},
		{m32, []byte{0x9b, 0xdf, 0xe0}, 3, "fstsw  %ax", 3, nil, false},
		// Not a known class.
		{m64, []byte{0x8b, 0x05, 0, 0, 0, 0}, 6, "mov    0x0(%rip),%eax", 7, nil, false},
		{m64, []byte{0x0f, 0xb8, 0xc1}, 2, "(bad)", 6, nil, false},
	} {
		reason, ok := allowedMismatch(c.mode, c.b, c.objLen, c.objText, c.kbLen, c.kbErr)
		if ok != c.want || ok && !strings.HasPrefix(reason, "SDM") {
			t.Errorf("allowedMismatch(%v, [% x], %d, %q, %d, %v) = %q, %v; want ok=%v with an SDM reason",
				c.mode, c.b, c.objLen, c.objText, c.kbLen, c.kbErr, reason, ok, c.want)
		}
	}
}
