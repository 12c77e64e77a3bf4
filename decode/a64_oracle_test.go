package decode_test

// A64 oracle tests against GNU objdump (aarch64-linux-gnu-objdump, binutils
// 2.40), gated by KBOOST_ORACLE=1:
//
//	KBOOST_ORACLE=1 go test ./decode/ -run OracleA64 -v -timeout 30m
//
//	TestOracleA64Kernel  every word of the kernel text of Debian's linux-image-arm64 (the Image's PE .text)
//	TestOracleA64Fuzz    KBOOST_ORACLE_N words (default 1,000,000): half uniform random,
//	                     half drawn from the spec (a random encoding line, its free bits random)
//	TestOracleA64Golden  testdata/arm64.golden against objdump
//
// Agreement, for every word objdump prints (A64 words are all 4 bytes, so an
// instruction boundary is every 4 bytes; the kernel test checks that objdump
// and kboost step through .text identically):
//
//   - both decode it and the mnemonics (first word of the text) are equal; or
//   - objdump prints ".inst 0x... ; undefined" and kboost returns ErrInvalid.
//
// Everything else is a mismatch unless allowedMismatchA64 names its class;
// the counts per class are printed. The test fails on any other mismatch.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/objdump"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/opcodes"
)

const a64Objdump = "aarch64-linux-gnu-objdump"

// a64Rec is one line of objdump's A64 disassembly.
type a64Rec struct {
	addr uint64
	word uint32
	text string
}

// mnemonic returns objdump's mnemonic, or "undefined" (also for "; NYI":
// binutils recognises a reserved encoding but prints it as a raw word; the
// architecture leaves it unallocated).
func (r *a64Rec) mnemonic() string {
	if strings.HasPrefix(r.text, ".inst") && (strings.Contains(r.text, "undefined") || strings.Contains(r.text, "NYI")) {
		return "undefined"
	}
	return firstField(r.text)
}

func firstField(s string) string {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i]
	}
	return s
}

// runObjdumpA64 disassembles code (raw A64 words at vma) and calls fn for
// every instruction line. objdump prints A64 words as one 8-digit number, which
// internal/objdump's byte-column parser does not read, so the lines are parsed
// here; the arguments come from objdump.Config.
func runObjdumpA64(ctx context.Context, code []byte, vma uint64, fn func(r *a64Rec) error) error {
	f, err := os.CreateTemp("", "kboost-a64-*.bin")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(code); err != nil {
		f.Close()
		return err
	}
	f.Close()
	cfg := objdump.Config{Objdump: a64Objdump, Machine: decode.ARM64.ObjdumpArg, VMA: vma}
	var rec a64Rec
	return objdump.RunLines(ctx, cfg, cfg.Args(f.Name(), true), func(line []byte) error {
		if parseA64Line(line, &rec) {
			return fn(&rec)
		}
		return nil
	})
}

// parseA64Line parses "  addr:\twwwwwwww \ttext".
func parseA64Line(line []byte, r *a64Rec) bool {
	s := string(bytes.TrimLeft(line, " "))
	colon := strings.Index(s, ":\t")
	if colon <= 0 {
		return false
	}
	addr, err := strconv.ParseUint(s[:colon], 16, 64)
	if err != nil {
		return false
	}
	rest := s[colon+2:]
	if len(rest) < 8 {
		return false
	}
	w, err := strconv.ParseUint(rest[:8], 16, 32)
	if err != nil {
		return false
	}
	r.addr, r.word = addr, uint32(w)
	r.text = strings.TrimSpace(rest[8:])
	if i := strings.Index(r.text, "//"); i >= 0 {
		r.text = strings.TrimSpace(r.text[:i])
	}
	return true
}

// a64Tally counts agreement.
type a64Tally struct {
	name      string
	words     int
	agree     int
	undefBoth int
	allowed   map[string]int
	mismatch  map[string]int    // "ours|objdump" -> count
	samples   map[string]string // first example per mismatch key
	examples  map[string]string // first example per allowed class
	onWord    func(addr uint64, theirs string, allowed bool)
	named     map[string]map[string]int // allowed class -> objdump mnemonic -> count
}

func newA64Tally(name string) *a64Tally {
	return &a64Tally{name: name, allowed: map[string]int{}, mismatch: map[string]int{},
		samples: map[string]string{}, examples: map[string]string{}, named: map[string]map[string]int{}}
}

// ourMnemonic is kboost's mnemonic for a decode result: the first word of
// decode.Format, or "undefined" for ErrInvalid.
func ourMnemonic(inst *decode.Inst, err error) string {
	if err != nil {
		if errors.Is(err, decode.ErrInvalid) {
			return "undefined"
		}
		return "error"
	}
	return firstField(decode.Format(inst, nil))
}

func (tl *a64Tally) check(inst *decode.Inst, err error, r *a64Rec) {
	tl.words++
	ours, theirs := ourMnemonic(inst, err), r.mnemonic()
	if tl.onWord != nil {
		defer func() { tl.onWord(r.addr, theirs, ours != theirs) }()
	}
	if ours == theirs {
		if ours == "undefined" {
			tl.undefBoth++
		}
		tl.agree++
		return
	}
	if cls := allowedMismatchA64(r.word, inst, ours, theirs); cls != "" {
		tl.allowed[cls]++
		if tl.named[cls] == nil {
			tl.named[cls] = map[string]int{}
		}
		tl.named[cls][theirs]++
		if _, ok := tl.examples[cls]; !ok {
			tl.examples[cls] = fmt.Sprintf("%08x ours %q objdump %q", r.word, ours, r.text)
		}
		return
	}
	key := ours + " | " + theirs
	tl.mismatch[key]++
	if _, ok := tl.samples[key]; !ok {
		line := 0
		if inst.ArmOp != nil {
			line = inst.ArmOp.Line
		}
		tl.samples[key] = fmt.Sprintf("%08x (spec line %d) objdump %q kboost %q", r.word, line, r.text, decode.Format(inst, nil))
	}
}

func (tl *a64Tally) report(t *testing.T) {
	t.Helper()
	nm := 0
	for _, n := range tl.mismatch {
		nm += n
	}
	na := 0
	for _, n := range tl.allowed {
		na += n
	}
	t.Logf("%s: %d words: mnemonic agreement %d (%.3f%%; %d undefined for both), allowed %d, mismatches %d",
		tl.name, tl.words, tl.agree, 100*float64(tl.agree)/float64(max(tl.words, 1)), tl.undefBoth, na, nm)
	var classes []string
	for c := range tl.allowed {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		t.Logf("  allowed %-28s %8d  e.g. %s", c, tl.allowed[c], tl.examples[c])
		var ns []string
		for n := range tl.named[c] {
			ns = append(ns, n)
		}
		sort.Slice(ns, func(i, j int) bool { return tl.named[c][ns[i]] > tl.named[c][ns[j]] })
		var top []string
		for i, n := range ns {
			if i == 15 {
				break
			}
			top = append(top, fmt.Sprintf("%s %d", n, tl.named[c][n]))
		}
		t.Logf("    objdump there: %s (%d names)", strings.Join(top, ", "), len(ns))
	}
	var keys []string
	for k := range tl.mismatch {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return tl.mismatch[keys[i]] > tl.mismatch[keys[j]] })
	limit := 80
	if s := os.Getenv("KBOOST_ORACLE_GROUPS"); s != "" {
		limit, _ = strconv.Atoi(s)
	}
	for i, k := range keys {
		if i >= limit {
			t.Logf("  ... %d more mismatch groups", len(keys)-limit)
			break
		}
		t.Logf("  MISMATCH %-30s %7d  %s", k, tl.mismatch[k], tl.samples[k])
	}
	if nm > 0 {
		t.Errorf("%s: %d words disagree with objdump in %d groups", tl.name, nm, len(keys))
	}
}

// allowedMismatchA64 explains the disagreements kboost accepts, by class:
//
//   - the SME space (op0 0000 with bit 31 set): the classes of
//     allowedMismatchSME (a64_sme_oracle_test.go).
//   - the SVE space (op0 0010): the classes of allowedMismatchSVE
//     (a64_sve_oracle_test.go), none today.
func allowedMismatchA64(w uint32, inst *decode.Inst, ours, theirs string) string {
	op0 := w >> 25 & 15
	if op0 == 0 && w>>31 == 1 {
		return allowedMismatchSME(w, ours, theirs)
	}
	if op0 == 2 {
		return allowedMismatchSVE(w, ours, theirs)
	}
	return ""
}

// compareA64 runs objdump over code at vma and checks every word.
func compareA64(t *testing.T, tl *a64Tally, code []byte, vma uint64) {
	t.Helper()
	var inst decode.Inst
	next := vma
	err := runObjdumpA64(context.Background(), code, vma, func(r *a64Rec) error {
		if r.addr != next {
			return fmt.Errorf("boundary: objdump printed %#x, expected %#x (kboost steps 4 bytes)", r.addr, next)
		}
		off := r.addr - vma
		derr := decode.DecodeInto(&inst, code[off:], decode.ModeA64, r.addr)
		if inst.Len != 4 || inst.Word != r.word {
			return fmt.Errorf("boundary at %#x: kboost length %d word %08x, objdump word %08x", r.addr, inst.Len, inst.Word, r.word)
		}
		next = r.addr + 4
		tl.check(&inst, derr, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != vma+uint64(len(code)&^3) {
		t.Fatalf("objdump stopped at %#x, expected %#x", next, vma+uint64(len(code)&^3))
	}
}

func oracleGateA64(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to run objdump oracle tests")
	}
	if _, err := exec.LookPath(a64Objdump); err != nil {
		t.Fatalf("%s not found: apt-get install binutils-aarch64-linux-gnu", a64Objdump)
	}
}

// debianARM64Text returns the kernel text of Debian's current arm64 kernel
// (linux-image-arm64's .deb) and its link address. Debian ships no System.map
// for arm64 (only a placeholder) and an Image rather than an ELF vmlinux, so the
// range is the Image's PE/COFF ".text" section (the EFI stub's header): from
// _stext to __initdata_begin, which holds .text, the read-only data between
// it and the init text (decoded as words by both sides) and .init.text. The
// link address of _text is the arm64 default (KIMAGE_VADDR, 0xffff800008000000).
func debianARM64Text(t *testing.T) ([]byte, uint64, string) {
	t.Helper()
	deb, err := kimage.FetchDebianKernel(context.Background(), "linux-image-arm64")
	if err != nil {
		t.Fatal(err)
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		t.Fatal(err)
	}
	img := dk.Vmlinuz
	if len(img) > 2 && img[0] == 0x1f && img[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(img))
		if err != nil {
			t.Fatal(err)
		}
		if img, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if !kimage.IsARM64Image(img) || len(img) < 0x100 {
		t.Fatalf("%s: vmlinuz is not an arm64 Image", deb)
	}
	le := binary.LittleEndian
	pe := int(le.Uint32(img[0x3c:]))
	if pe+24 > len(img) || string(img[pe:pe+4]) != "PE\x00\x00" {
		t.Fatalf("%s: Image has no PE header (EFI stub)", deb)
	}
	nsec := int(le.Uint16(img[pe+6:]))
	sec := pe + 24 + int(le.Uint16(img[pe+20:]))
	for i := 0; i < nsec && sec+40*(i+1) <= len(img); i++ {
		e := img[sec+40*i:]
		if strings.TrimRight(string(e[:8]), "\x00") != ".text" {
			continue
		}
		size, va, raw := le.Uint32(e[8:]), le.Uint32(e[12:]), le.Uint32(e[20:])
		if va != raw || uint64(va)+uint64(size) > uint64(len(img)) {
			t.Fatalf("PE .text: va %#x raw %#x size %#x (image %d bytes)", va, raw, size, len(img))
		}
		const kimageVaddr = 0xffff800008000000
		return img[va : va+size], kimageVaddr + uint64(va), filepath.Base(deb)
	}
	t.Fatalf("%s: no .text in the Image's PE section table", deb)
	return nil, 0, ""
}

func TestOracleA64Kernel(t *testing.T) {
	oracleGateA64(t)
	code, vma, name := debianARM64Text(t)
	tl := newA64Tally("arm64 kernel .text " + name)
	chunks := map[uint64]*[3]int{}            // 64 KiB chunk -> words, undefined (objdump), allowed
	chunkNames := map[uint64]map[string]int{} // chunk -> objdump mnemonic of allowed words -> count
	tl.onWord = func(addr uint64, theirs string, allowed bool) {
		c := chunks[addr>>16]
		if c == nil {
			c = new([3]int)
			chunks[addr>>16] = c
		}
		c[0]++
		if theirs == "undefined" {
			c[1]++
		}
		if allowed {
			c[2]++
			if chunkNames[addr>>16] == nil {
				chunkNames[addr>>16] = map[string]int{}
			}
			chunkNames[addr>>16][theirs]++
		}
	}
	compareA64(t, tl, code, vma)
	// The range holds read-only data as well as code; chunks where objdump
	// finds under 1% undefined words are code.
	var cw, cn, ca int
	names := map[string]int{}
	for k, c := range chunks {
		if c[1]*100 < c[0] {
			cw++
			cn += c[0]
			ca += c[2]
			for n, v := range chunkNames[k] {
				names[n] += v
			}
		}
	}
	var ns []string
	for n := range names {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return names[ns[i]] > names[ns[j]] })
	var top []string
	for i, n := range ns {
		if i == 20 {
			break
		}
		top = append(top, fmt.Sprintf("%s %d", n, names[n]))
	}
	t.Logf("code-like 64 KiB chunks (<1%% undefined): %d of %d, %d words, %d of them allowed mismatches (%.3f%%: objdump names %s), 0 mismatches",
		cw, len(chunks), cn, ca, 100*float64(ca)/float64(max(cn, 1)), strings.Join(top, ", "))
	t.Logf("boundaries: %d words from %#x to %#x, objdump and kboost step identically", tl.words, vma, vma+uint64(len(code)))
	tl.report(t)
}

// a64FuzzWords returns n words: even indexes uniform random, odd ones a
// random spec line (unallocated carve-outs included) with random free bits.
func a64FuzzWords(n int, seed int64) []byte {
	rng := rand.New(rand.NewSource(seed))
	ops := opcodes.A64.Ops
	buf := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		w := rng.Uint32()
		if i%2 == 1 {
			op := &ops[rng.Intn(len(ops))]
			w = w&^op.Mask | op.Value
		}
		binary.LittleEndian.PutUint32(buf[4*i:], w)
	}
	return buf
}

func TestOracleA64Fuzz(t *testing.T) {
	oracleGateA64(t)
	n := 1_000_000
	if s := os.Getenv("KBOOST_ORACLE_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	tl := newA64Tally(fmt.Sprintf("arm64 fuzz (%d words)", n))
	compareA64(t, tl, a64FuzzWords(n, 1), 0)
	tl.report(t)
}
