package decode_test

// A32 and Thumb oracle tests against GNU objdump (arm-linux-gnueabi-objdump,
// binutils 2.40), gated by KBOOST_ORACLE=1:
//
//	KBOOST_ORACLE=1 go test ./decode/ -run OracleARM32 -v -timeout 30m
//
//	TestOracleARM32Kernel  every word of the decompressed kernel Image of Debian's
//	                       linux-image-armmp (an ARM-mode kernel: CONFIG_THUMB2_KERNEL
//	                       is not set), checked as A32
//	TestOracleARM32Modules the .text of the largest kernel modules of the same package,
//	                       disassembled by objdump as ELF (mapping symbols decide ARM/Thumb/data)
//	TestOracleARM32FuzzA32 KBOOST_ORACLE_N words (default 1,000,000): half uniform random,
//	                       half drawn from spec/arm.spec (a random line, its free bits random)
//	TestOracleARM32FuzzT32 the same number of Thumb instructions: half uniform random
//	                       halfwords, half drawn from spec/thumb.spec; objdump and kboost
//	                       both track IT blocks through the stream (decode.ITState)
//	TestOracleARM32Golden  testdata/arm32.golden against objdump
//
// Agreement, for every instruction objdump prints: objdump and kboost start it
// at the same address and take the same number of bytes (Thumb: 2 or 4), and
//
//   - the mnemonics (the first word of the text, with the condition) are equal; or
//   - objdump prints "<UNDEFINED>" (or a .word/.inst) and kboost returns ErrInvalid.
//
// Everything else is a mismatch unless allowedMismatchARM32 names its class;
// the counts per class are printed. The kernel test fails on any other
// mismatch in code, the other tests on any other mismatch at all.

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
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

const arm32Objdump = "arm-linux-gnueabi-objdump"

// arm32Rec is one instruction line of objdump's ARM disassembly.
type arm32Rec struct {
	addr uint64
	n    int    // bytes: 4 for an A32 word, 2 or 4 for Thumb
	word uint32 // as decode.Inst.Word
	text string
	hw   bool // printed as halfwords (Thumb)
}

// mnemonic returns objdump's mnemonic, or "undefined".
func (r *arm32Rec) mnemonic() string {
	t := r.text
	if t == "" || strings.HasPrefix(t, "@ <UNDEFINED>") || strings.HasPrefix(t, ".word") ||
		strings.HasPrefix(t, ".inst") || strings.HasPrefix(t, ".short") || strings.Contains(t, "UNDEFINED") && strings.HasPrefix(t, "@") ||
		strings.HasPrefix(t, "undefined") || strings.Contains(firstWord(t), "?") {
		// "ldr??.w", "vrint?.f32", "undefined (bcc, cond=0xE)": objdump's
		// own way of printing an encoding it has no name for.
		return "undefined"
	}
	return firstWord(t)
}

func firstWord(t string) string {
	if i := strings.IndexAny(t, " \t"); i >= 0 {
		return t[:i]
	}
	return t
}

// parseARM32Line parses "  addr:\tHEX[ HEX] \ttext" (A32 words are one
// 8-digit group, Thumb instructions one or two 4-digit groups).
func parseARM32Line(line string, r *arm32Rec) bool {
	s := strings.TrimLeft(line, " ")
	colon := strings.Index(s, ":\t")
	if colon <= 0 {
		return false
	}
	addr, err := strconv.ParseUint(s[:colon], 16, 64)
	if err != nil {
		return false
	}
	rest := s[colon+2:]
	tab := strings.IndexByte(rest, '\t')
	hexpart := rest
	r.text = ""
	if tab >= 0 {
		hexpart, r.text = rest[:tab], strings.TrimSpace(rest[tab+1:])
	}
	f := strings.Fields(hexpart)
	if len(f) == 0 || len(f) > 2 {
		return false
	}
	var w uint64
	n := 0
	for _, g := range f {
		v, err := strconv.ParseUint(g, 16, 32)
		if err != nil || len(g) != 4 && len(g) != 8 {
			return false
		}
		w = w<<(4*len(g)) | v
		n += len(g) / 2
	}
	r.addr, r.n, r.word = addr, n, uint32(w)
	r.hw = len(f[0]) == 4
	if strings.HasPrefix(r.text, "@") && !strings.Contains(r.text, "UNDEFINED") {
		r.text = ""
	}
	if i := strings.Index(r.text, "@ <UNDEFINED>"); i > 0 {
		// "vld1.32\t\t\t@ <UNDEFINED> instruction: 0x...": objdump found the
		// encoding's name but the word UNDEFINED (a reserved field value).
		r.text = r.text[i:]
	}
	if i := strings.Index(r.text, "\t@"); i >= 0 && !strings.HasPrefix(r.text, "@") {
		r.text = strings.TrimSpace(r.text[:i])
	}
	return true
}

// runObjdumpARM32 runs objdump with args and calls fn for every instruction
// line.
func runObjdumpARM32(ctx context.Context, args []string, fn func(r *arm32Rec) error) error {
	var rec arm32Rec
	return objdump.RunLines(ctx, objdump.Config{Objdump: arm32Objdump}, args, func(line []byte) error {
		if parseARM32Line(string(line), &rec) {
			return fn(&rec)
		}
		return nil
	})
}

// rawArgs are objdump's arguments for raw code in file at vma.
func rawArgs(file string, vma uint64, thumb bool) []string {
	a := []string{"-D", "-w", "-z", "-b", "binary", "-m", decode.ARM.ObjdumpArg, "--adjust-vma=" + strconv.FormatUint(vma, 10)}
	if thumb {
		a = append(a, "-M", "force-thumb")
	}
	return append(a, file)
}

// arm32Tally counts agreement.
type arm32Tally struct {
	name      string
	insns     int
	agree     int
	undefBoth int
	allowed   map[string]int
	mismatch  map[string]int
	samples   map[string]string
	examples  map[string]string
	// chunks, when not nil, counts per 64 KiB chunk of addresses: words,
	// words objdump finds undefined, mismatches.
	chunks map[uint64]*[3]int
}

func newARM32Tally(name string) *arm32Tally {
	return &arm32Tally{name: name, allowed: map[string]int{}, mismatch: map[string]int{},
		samples: map[string]string{}, examples: map[string]string{}}
}

func (tl *arm32Tally) check(inst *decode.Inst, err error, itCond decode.Cond, inIT bool, r *arm32Rec) {
	tl.insns++
	var chunk *[3]int
	if tl.chunks != nil {
		if chunk = tl.chunks[r.addr>>16]; chunk == nil {
			chunk = new([3]int)
			tl.chunks[r.addr>>16] = chunk
		}
		chunk[0]++
		if r.mnemonic() == "undefined" {
			chunk[1]++
		}
	}
	ours := "undefined"
	if err == nil {
		ours = decode.ARMMnemonic(inst, itCond, inIT)
	} else if !errors.Is(err, decode.ErrInvalid) {
		ours = "error"
	}
	theirs := r.mnemonic()
	if ours == theirs {
		if ours == "undefined" {
			tl.undefBoth++
		}
		tl.agree++
		return
	}
	if cls := allowedMismatchARM32(inst, ours, theirs, r.text); cls != "" {
		tl.allowed[cls]++
		if _, ok := tl.examples[cls]; !ok {
			tl.examples[cls] = fmt.Sprintf("%s %08x ours %q objdump %q", inst.Mode, r.word, ours, r.text)
		}
		return
	}
	key := ours + " | " + theirs
	if chunk != nil {
		chunk[2]++
	}
	tl.mismatch[key]++
	if _, ok := tl.samples[key]; !ok {
		line := 0
		if inst.ArmOp != nil {
			line = inst.ArmOp.Line
		}
		tl.samples[key] = fmt.Sprintf("%08x (spec line %d, it %v %v) objdump %q", r.word, line, inIT, itCond, r.text)
	}
}

// arm32Reporter is what report needs from a *testing.T.
type arm32Reporter interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
}

func (tl *arm32Tally) report(t arm32Reporter) {
	t.Helper()
	nm, na := 0, 0
	for _, n := range tl.mismatch {
		nm += n
	}
	for _, n := range tl.allowed {
		na += n
	}
	t.Logf("%s: %d instructions: mnemonic agreement %d (%.3f%%; %d undefined for both), allowed %d, mismatches %d",
		tl.name, tl.insns, tl.agree, 100*float64(tl.agree)/float64(max(tl.insns, 1)), tl.undefBoth, na, nm)
	var classes []string
	for c := range tl.allowed {
		classes = append(classes, c)
	}
	sort.Strings(classes)
	for _, c := range classes {
		t.Logf("  allowed %-24s %8d  e.g. %s", c, tl.allowed[c], tl.examples[c])
	}
	var keys []string
	for k := range tl.mismatch {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return tl.mismatch[keys[i]] > tl.mismatch[keys[j]] })
	limit := 100
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
		t.Errorf("%s: %d instructions disagree with objdump in %d groups outside the allowedMismatchARM32 classes", tl.name, nm, len(keys))
	}
}

// allowedMismatchARM32 explains the disagreements kboost accepts, by class
// (each with the Arm ARM's reason why kboost's reading is the architectural
// one):
//
//   - "coproc": a generic coprocessor instruction (LDC, STC, MCR, MRC, CDP,
//     MCRR, MRRC and the *2 forms) on a coprocessor other than 10, 11, 14
//     and 15. objdump -m arm enables every obsolete coprocessor extension
//     and names such words after it (FPA lfm/sfm, Maverick cf*, iWMMXt
//     w*/tm*, XScale mia/mar), or calls the reserved coprocessors 8 and 9
//     UNDEFINED outside the Armv8.2 half-precision and Armv8.x SIMD
//     encodings kboost names; kboost names the generic instruction
//     (ArmSystem/ArmLoadStore), which is what the kprobes decode tables see.
//   - "objdump-flags-invalid": objdump names the word but prints an operand
//     it marks as invalid ("(UNDEF: n)", "<illegal reg>", "<illegal width
//     64>", "<invalid reg>", "<unknown>", "<undefined>", "<bad align>"): a
//     reserved field value (banked register, element size, alignment, VFP
//     register, SBZ field) that makes the encoding UNDEFINED or
//     UNPREDICTABLE; kboost either rejects it or names the neighbouring
//     encoding.
//   - "reserved-size": objdump names an Advanced SIMD encoding whose size
//     field holds a value the Arm ARM reserves (UNDEFINED): ".f8"
//     compares, VABS, VNEG; VMUL.P16/.P32; VREV16/VREV32 of elements as
//     wide as the container; VRECPE/VRSQRTE.U16 (reservedSizeARM32). kboost
//     finds the word UNDEFINED.
//   - "m-profile": kboost names (or finds UNDEFINED) a Thumb word that objdump names
//     after an Armv8.1-M Mainline instruction (branch future bf/bfl, low-overhead
//     loops wls/dls/le, csel, clrm, ...): objdump -m arm enables M-profile
//     extensions too; Linux runs A-profile, where these words are UNDEFINED.
//     Also VLDR/VSTR of the M-profile system registers (FPCXTNS, VPR, P0),
//     which sit in the coprocessor 15 LDC/STC space, and Thumb MSR/MRS of an
//     M-profile special register (PRIMASK, CONTROL_NS, IEPSR, ...: the SYSm
//     forms).
//   - "store-pc-base": a Thumb STR/STRB/STRH (immediate) with Rn = 1111,
//     UNDEFINED in the Arm ARM (there is no store-literal form), which
//     objdump prints as if PC-relative ("strh.w lr, [pc, #-2659]").
//
// Encodings with violated SBZ/SBO ("(0)", "(1)") fields are CONSTRAINED
// UNPREDICTABLE; where objdump names them, the spec files name them the same
// way (the comments there say where), so they need no class.
func allowedMismatchARM32(inst *decode.Inst, ours, theirs, text string) string {
	if ours == "undefined" && reservedSizeARM32(theirs) {
		return "reserved-size"
	}
	if coprocSpace(inst) {
		return "coproc"
	}
	if strings.Contains(text, "(UNDEF") || strings.Contains(text, "<illegal") || strings.Contains(text, "<invalid") ||
		strings.Contains(text, "<unknown") || strings.Contains(text, "<undefined>") || strings.Contains(text, "<overflow") ||
		strings.Contains(text, "<bad align") {
		return "objdump-flags-invalid"
	}
	if isMProfile(theirs) || (strings.HasPrefix(theirs, "vldr") || strings.HasPrefix(theirs, "vstr")) && inst.Word>>8&15 == 15 ||
		inst.Mode == decode.ModeT32 && (strings.HasPrefix(theirs, "msr") || strings.HasPrefix(theirs, "mrs")) && mProfileSysReg(text) {
		return "m-profile"
	}
	if ours == "undefined" && inst.Mode == decode.ModeT32 && strings.HasPrefix(theirs, "str") && strings.Contains(text, "[pc") {
		return "store-pc-base"
	}
	return ""
}

// reservedSizeARM32 reports whether objdump's mnemonic m is one it prints
// for an Advanced SIMD encoding whose size field holds a value the Arm ARM
// reserves, making the word UNDEFINED: a floating-point compare, VABS or VNEG
// with size 00 (".f8"), VMUL (polynomial) with size 01 or 10, VREV16 or
// VREV32 with an element size not smaller than the reversed container,
// VRECPE/VRSQRTE (integer) with size 01.
// An IT condition objdump inserts before the '.' ("vmulvs.p16") is ignored.
func reservedSizeARM32(m string) bool {
	if strings.HasSuffix(m, ".f8") {
		return true
	}
	base, dt, ok := strings.Cut(m, ".")
	if !ok {
		return false
	}
	for _, r := range []string{"vmul.p16", "vmul.p32", "vrev16.16", "vrev16.32", "vrev32.32", "vrecpe.u16", "vrsqrte.u16"} {
		rb, rdt, _ := strings.Cut(r, ".")
		if dt == rdt && (base == rb || len(base) == len(rb)+2 && strings.HasPrefix(base, rb) && isCondARM32(base[len(rb):])) {
			return true
		}
	}
	return false
}

// isCondARM32 reports whether c is a condition suffix objdump prints.
func isCondARM32(c string) bool {
	for i := decode.CondEQ; i <= decode.CondAL; i++ {
		if c == i.String() {
			return true
		}
	}
	return false
}

// mProfileSysReg reports whether objdump's text of an MSR or MRS names an
// M-profile special register (the Thumb MSR/MRS SYSm forms of Armv7-M and
// Armv8-M).
func mProfileSysReg(text string) bool {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }) {
		switch strings.ToUpper(f) {
		case "IAPSR", "EAPSR", "XPSR", "IPSR", "EPSR", "IEPSR", "MSP", "PSP", "MSPLIM", "PSPLIM", "PRIMASK",
			"BASEPRI", "BASEPRI_MAX", "FAULTMASK", "CONTROL", "MSP_NS", "PSP_NS", "MSPLIM_NS", "PSPLIM_NS",
			"PRIMASK_NS", "BASEPRI_NS", "FAULTMASK_NS", "CONTROL_NS", "SP_NS":
			return true
		}
	}
	return false
}

// mProfile lists the Armv8.1-M (M-profile) mnemonics objdump -m arm also
// decodes; those encodings are UNDEFINED in the A-profile Thumb that Linux
// runs.
var mProfile = map[string]bool{}

func init() {
	for _, m := range []string{"bf", "bfl", "bfx", "bflx", "bfcsel", "wls", "dls", "le", "lctp", "wlstp", "dlstp", "letp", "vctp", "csel", "csinc", "csinv", "csneg", "cinc", "cinv", "cneg", "cset", "csetm", "clrm", "vscclrm", "sg", "tt", "ttt", "tta", "ttat", "bxns", "blxns", "autg", "bxaut", "pacg", "vscclrm", "pac", "pacbti", "aut", "bti"} {
		mProfile[m] = true
	}
}

// isMProfile reports whether objdump's mnemonic m, less a size suffix and
// an IT condition, is an M-profile one.
func isMProfile(m string) bool {
	if i := strings.IndexByte(m, '.'); i >= 0 {
		m = m[:i]
	}
	if mProfile[m] {
		return true
	}
	for _, c := range []string{"eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", "<und>"} {
		if b, ok := strings.CutSuffix(m, c); ok && mProfile[b] {
			return true
		}
	}
	return false
}

// coprocSpace reports whether inst's word is a generic coprocessor
// instruction on a coprocessor other than 10, 11, 14 and 15.
func coprocSpace(inst *decode.Inst) bool {
	w := inst.Word
	if inst.Mode == decode.ModeT32 && (inst.Len != 4 || w>>29 != 7 || w>>26&3 != 3) {
		return false
	}
	if inst.Mode == decode.ModeA32 && w>>26&3 != 3 || w>>24&15 == 15 {
		return false
	}
	cp := w >> 8 & 15
	return cp != 10 && cp != 11 && cp != 14 && cp != 15
}

// compareARM32Raw runs objdump over raw code at vma in one mode and checks
// every instruction: same start, same length, same mnemonic.
func compareARM32Raw(t *testing.T, tl *arm32Tally, code []byte, vma uint64, mode decode.Mode) {
	t.Helper()
	f, err := os.CreateTemp("", "kboost-arm32-*.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(code); err != nil {
		t.Fatal(err)
	}
	f.Close()
	thumb := mode == decode.ModeT32
	var inst decode.Inst
	var it decode.ITState
	next := vma
	err = runObjdumpARM32(context.Background(), rawArgs(f.Name(), vma, thumb), func(r *arm32Rec) error {
		if r.addr != next {
			return fmt.Errorf("boundary: objdump printed %#x, kboost expected %#x", r.addr, next)
		}
		off := r.addr - vma
		derr := decode.DecodeInto(&inst, code[off:], mode, r.addr)
		if uint64(len(code))-off < uint64(inst.Len) || errors.Is(derr, decode.ErrTruncated) {
			next = vma + uint64(len(code)) // objdump shows a trailing fragment its own way
			return nil
		}
		if inst.Len != r.n || inst.Word != r.word {
			return fmt.Errorf("boundary at %#x: kboost length %d word %08x, objdump %d bytes %08x (%s)", r.addr, inst.Len, inst.Word, r.n, r.word, r.text)
		}
		next = r.addr + uint64(inst.Len)
		c, in := decode.Cond(0), false
		if thumb {
			c, in = it.Next(&inst)
		}
		tl.check(&inst, derr, c, in, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != vma+uint64(len(code)) {
		t.Fatalf("objdump stopped at %#x, expected %#x", next, vma+uint64(len(code)))
	}
}

func oracleGateARM32(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to run objdump oracle tests")
	}
	if _, err := exec.LookPath(arm32Objdump); err != nil {
		t.Fatalf("%s not found: apt-get install binutils-arm-linux-gnueabi", arm32Objdump)
	}
}

func fuzzN() int {
	n := 1_000_000
	if s := os.Getenv("KBOOST_ORACLE_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	return n
}

// a32FuzzWords returns n A32 words: even indexes uniform random, odd ones a
// random spec line with random free bits.
func a32FuzzWords(n int, seed int64) []byte {
	rng := rand.New(rand.NewSource(seed))
	ops := opcodes.A32.Ops
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

// t32FuzzCode returns n Thumb instructions: even indexes a uniform random
// first halfword (and second, when it needs one), odd ones a random line of
// spec/thumb.spec with random free bits.
func t32FuzzCode(n int, seed int64) []byte {
	rng := rand.New(rand.NewSource(seed))
	ops := opcodes.T32.Ops
	buf := make([]byte, 0, 3*n)
	for i := 0; i < n; i++ {
		w := rng.Uint32()
		if i%2 == 1 {
			op := &ops[rng.Intn(len(ops))]
			if op.Mask&0xFFFF0000 == 0xFFFF0000 && op.Value>>16 == 0 { // T16 line
				w &= 0xFFFF
			}
			w = w&^op.Mask | op.Value
			if w>>16 == 0 {
				buf = binary.LittleEndian.AppendUint16(buf, uint16(w))
				continue
			}
		}
		hw1 := uint16(w >> 16)
		buf = binary.LittleEndian.AppendUint16(buf, hw1)
		if decode.T32Len(hw1) == 4 {
			buf = binary.LittleEndian.AppendUint16(buf, uint16(w))
		}
	}
	return buf
}

func TestOracleARM32FuzzA32(t *testing.T) {
	oracleGateARM32(t)
	n := fuzzN()
	tl := newARM32Tally(fmt.Sprintf("A32 fuzz (%d words)", n))
	compareARM32Raw(t, tl, a32FuzzWords(n, 1), 0, decode.ModeA32)
	tl.report(t)
}

func TestOracleARM32FuzzT32(t *testing.T) {
	oracleGateARM32(t)
	n := fuzzN()
	tl := newARM32Tally(fmt.Sprintf("T32 fuzz (%d instructions)", n))
	compareARM32Raw(t, tl, t32FuzzCode(n, 2), 0, decode.ModeT32)
	tl.report(t)
}

// debianArmmp returns the decompressed kernel Image of Debian's current
// linux-image-armmp package, the package path and its kernel config.
func debianArmmp(t *testing.T) ([]byte, string, *kimage.KConfig) {
	t.Helper()
	deb, err := kimage.FetchDebianKernel(context.Background(), "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := kimage.ParseKConfig(dk.Config)
	if err != nil {
		t.Fatal(err)
	}
	img, err := kimage.ExtractARMZImage(dk.Vmlinuz)
	if err != nil {
		t.Fatal(err)
	}
	return img, deb, cfg
}

// armmpTextBase is where the armmp Image is linked: PAGE_OFFSET (0xc0000000,
// CONFIG_VMSPLIT_3G) + TEXT_OFFSET (0x8000).
const armmpTextBase = 0xC0008000

func TestOracleARM32Kernel(t *testing.T) {
	oracleGateARM32(t)
	img, deb, cfg := debianArmmp(t)
	if cfg.Bool("CONFIG_THUMB2_KERNEL") {
		t.Fatalf("%s: a Thumb-2 kernel; this test decodes the Image as A32", deb)
	}
	if v, _ := cfg.Value("CONFIG_PAGE_OFFSET"); v != "0xC0000000" {
		t.Fatalf("%s: CONFIG_PAGE_OFFSET %q, want 0xC0000000", deb, v)
	}
	tl := newARM32Tally("armmp kernel Image (A32) " + filepath.Base(deb))
	tl.chunks = map[uint64]*[3]int{}
	compareARM32Raw(t, tl, img[:len(img)&^3], armmpTextBase, decode.ModeA32)
	t.Logf("boundaries: %d words from %#x, objdump and kboost step identically", tl.insns, armmpTextBase)
	// The Image holds data after the text (rodata, init data, the
	// appended DTB space); a 64 KiB chunk where objdump finds under 1% of
	// the words undefined is code. Mismatches there fail the test; the
	// rest is reported.
	var cw, cn, cm, dm int
	for _, c := range tl.chunks {
		if c[1]*100 < c[0] {
			cw++
			cn += c[0]
			cm += c[2]
		} else {
			dm += c[2]
		}
	}
	t.Logf("code-like 64 KiB chunks (<1%% undefined): %d of %d, %d words, %d mismatches; %d mismatches in data-like chunks",
		cw, len(tl.chunks), cn, cm, dm)
	tl.report(&reportOnly{t})
	if cm > 0 {
		t.Errorf("%d words in code-like chunks disagree with objdump", cm)
	}
}

// reportOnly turns report's failure into a log line: the kernel test fails
// on mismatches in code only.
type reportOnly struct{ *testing.T }

func (r *reportOnly) Errorf(format string, args ...any) { r.Logf("(data included) "+format, args...) }

// arm32GoldenSamples returns two instructions per spec line of each ISA
// (the line's fixed bits, the free bits from a seeded generator), IT
// instructions left out so that every entry decodes on its own.
func arm32GoldenSamples() (a32, t32 []byte) {
	rng := rand.New(rand.NewSource(7))
	for i := range opcodes.A32.Ops {
		op := &opcodes.A32.Ops[i]
		for k := 0; k < 2; k++ {
			w := rng.Uint32()&^op.Mask | op.Value
			a32 = binary.LittleEndian.AppendUint32(a32, w)
		}
	}
	for i := range opcodes.T32.Ops {
		op := &opcodes.T32.Ops[i]
		if op.Name == "it" {
			continue
		}
		for k := 0; k < 2; k++ {
			w := rng.Uint32()
			if op.Value>>16 == 0 {
				w &= 0xFFFF
			}
			w = w&^op.Mask | op.Value
			if w>>16 == 0 {
				if w&0xFF00 == 0xBF00 && w&15 != 0 { // an IT by chance
					continue
				}
				t32 = binary.LittleEndian.AppendUint16(t32, uint16(w))
				continue
			}
			t32 = binary.LittleEndian.AppendUint16(t32, uint16(w>>16))
			t32 = binary.LittleEndian.AppendUint16(t32, uint16(w))
		}
	}
	return a32, t32
}

// TestOracleARM32Golden checks testdata/arm32.golden against objdump; with
// KBOOST_UPDATE_GOLDEN=1 it rewrites the file from arm32GoldenSamples,
// keeping the entries where kboost and objdump agree (the regression
// corpus; the fuzz tests measure the disagreements).
func TestOracleARM32Golden(t *testing.T) {
	oracleGateARM32(t)
	if os.Getenv("KBOOST_UPDATE_GOLDEN") == "1" {
		a32, t32 := arm32GoldenSamples()
		var out bytes.Buffer
		out.WriteString("# hex<TAB>mode<TAB>mnemonic GNU objdump 2.40 prints (arm-linux-gnueabi-objdump -m arm [-M force-thumb])\n")
		out.WriteString("# generated by KBOOST_ORACLE=1 KBOOST_UPDATE_GOLDEN=1 go test ./decode -run OracleARM32Golden\n")
		for _, c := range []struct {
			code []byte
			mode decode.Mode
		}{{a32, decode.ModeA32}, {t32, decode.ModeT32}} {
			recs := objdumpRecords(t, c.code, c.mode)
			for _, r := range recs {
				inst, err := decode.Decode(r.raw, c.mode, 0x10000)
				ours := "undefined"
				if err == nil {
					ours = decode.ARMMnemonic(&inst, decode.CondAL, false)
				}
				if ours == r.want {
					fmt.Fprintf(&out, "%x\t%s\t%s\n", r.raw, c.mode, r.want)
				}
			}
		}
		if err := os.WriteFile("testdata/arm32.golden", out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := readARM32Golden(t)
	for _, mode := range []decode.Mode{decode.ModeA32, decode.ModeT32} {
		var code []byte
		var want []string
		for _, e := range g {
			if e.mode == mode {
				code = append(code, e.raw...)
				want = append(want, e.want)
			}
		}
		recs := objdumpRecords(t, code, mode)
		if len(recs) != len(want) {
			t.Fatalf("%s: objdump printed %d instructions, golden has %d", mode, len(recs), len(want))
		}
		for i, r := range recs {
			if r.want != want[i] {
				t.Errorf("%s %x: objdump now prints %q, golden says %q", mode, r.raw, r.want, want[i])
			}
		}
	}
}

type goldenRec struct {
	raw  []byte
	want string
}

// objdumpRecords disassembles code (no IT blocks in it) and returns each
// instruction's bytes and objdump's mnemonic.
func objdumpRecords(t *testing.T, code []byte, mode decode.Mode) []goldenRec {
	t.Helper()
	f, err := os.CreateTemp("", "kboost-arm32-golden-*.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	f.Write(code)
	f.Close()
	var out []goldenRec
	err = runObjdumpARM32(context.Background(), rawArgs(f.Name(), 0x10000, mode == decode.ModeT32), func(r *arm32Rec) error {
		off := r.addr - 0x10000
		if off+uint64(r.n) > uint64(len(code)) {
			return fmt.Errorf("objdump record at %#x past the end", r.addr)
		}
		out = append(out, goldenRec{append([]byte(nil), code[off:off+uint64(r.n)]...), r.mnemonic()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestOracleARM32Userland checks real Thumb-2 code (and the ARM PLT) with IT
// blocks: the .text of Debian armhf's libc.so.6 (libc6:armhf, built for
// Thumb-2), disassembled by objdump as an ELF file, where mapping symbols
// ($a, $t, $d) tell objdump which instruction set each range holds. kboost
// decodes each instruction in the mode objdump used (A32 words are printed
// as one 8-digit group, Thumb as 4-digit halfwords) and tracks IT blocks
// with decode.ITState through each contiguous Thumb run. The Debian armmp
// kernel is ARM-mode (CONFIG_THUMB2_KERNEL is not set), so it has no Thumb
// code to check.
func TestOracleARM32Userland(t *testing.T) {
	oracleGateARM32(t)
	so := libcArmhf(t)
	ef, err := elf.Open(so)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	type sec struct {
		addr uint64
		data []byte
	}
	var secs []sec
	for _, s := range ef.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS {
			d, err := s.Data()
			if err != nil {
				t.Fatal(err)
			}
			secs = append(secs, sec{s.Addr, d})
		}
	}
	bytesAt := func(addr uint64) []byte {
		for _, s := range secs {
			if addr >= s.addr && addr < s.addr+uint64(len(s.data)) {
				return s.data[addr-s.addr:]
			}
		}
		return nil
	}
	tl := newARM32Tally("libc6:armhf libc.so.6 (Thumb-2 + ARM PLT) " + filepath.Base(so))
	var inst decode.Inst
	var it decode.ITState
	var next uint64
	var thumb, armN int
	err = runObjdumpARM32(context.Background(), []string{"-d", "-w", so}, func(r *arm32Rec) error {
		if r.text == ".word" || strings.HasPrefix(r.text, ".word") || strings.HasPrefix(r.text, ".short") || strings.HasPrefix(r.text, ".byte") {
			it.Reset()
			return nil // data ($d)
		}
		b := bytesAt(r.addr)
		if b == nil {
			return fmt.Errorf("%#x: not in an executable section", r.addr)
		}
		mode := decode.ModeA32
		if r.hw {
			mode = decode.ModeT32
		}
		if r.addr != next || mode == decode.ModeA32 {
			it.Reset()
		}
		derr := decode.DecodeInto(&inst, b, mode, r.addr)
		if inst.Len != r.n || inst.Word != r.word {
			return fmt.Errorf("boundary at %#x: kboost length %d word %08x, objdump %d bytes %08x (%s)", r.addr, inst.Len, inst.Word, r.n, r.word, r.text)
		}
		next = r.addr + uint64(inst.Len)
		c, in := decode.Cond(0), false
		if mode == decode.ModeT32 {
			c, in = it.Next(&inst)
			thumb++
		} else {
			armN++
		}
		tl.check(&inst, derr, c, in, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Thumb and %d ARM instructions; boundaries agree", thumb, armN)
	if thumb < 100000 {
		t.Fatalf("only %d Thumb instructions: is libc.so.6 still Thumb-2?", thumb)
	}
	tl.report(t)
}

// libcArmhf returns the path of libc.so.6 from Debian's libc6:armhf package.
func libcArmhf(t *testing.T) string {
	t.Helper()
	return armhfPackageFile(t, "libc6", "lib/arm-linux-gnueabihf/libc.so.6")
}

// armhfPackageFile returns the path of file (relative to /) in Debian's
// armhf package pkg, downloaded with apt-get into the kboost cache and
// unpacked with dpkg-deb into a temporary directory.
func armhfPackageFile(t *testing.T, pkg, file string) string {
	t.Helper()
	dir := filepath.Join(kimage.CacheDir(), "debs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(dir, pkg+"_*_armhf.deb")
	debs, _ := filepath.Glob(glob)
	if len(debs) == 0 {
		cmd := exec.Command("apt-get", "download", pkg+":armhf")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get download %s:armhf (needs `dpkg --add-architecture armhf && apt-get update`, see scripts/setup.sh): %v: %s", pkg, err, out)
		}
		debs, _ = filepath.Glob(glob)
		if len(debs) == 0 {
			t.Fatalf("apt-get download %s:armhf left no package", pkg)
		}
	}
	sort.Strings(debs)
	tmp := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-x", debs[len(debs)-1], tmp).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v: %s", err, out)
	}
	p := filepath.Join(tmp, file)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
