package decode_test

// SME oracle tests against GNU objdump (aarch64-linux-gnu-objdump, binutils
// 2.40), gated by KBOOST_ORACLE=1:
//
//	KBOOST_ORACLE=1 go test ./decode/ -run OracleSME -v
//
//	TestOracleSMEFuzz        KBOOST_ORACLE_SME_N words (default 1,000,000) of the SME
//	                         space (A64 op0 = bits 28..25 = 0000 with bit 31 set): half
//	                         uniform random, half a random line of arm64-sme.spec with
//	                         random free bits
//	TestOracleSMEExhaustive  every word of the space (2^27), with KBOOST_SME_EXHAUSTIVE=1
//	                         as well (a few minutes)
//
// Agreement, for every word: both decode it, with equal mnemonics and equal
// text (operands included, blanks normalised), or objdump prints ".inst ... ;
// undefined" and kboost returns ErrInvalid. Everything else fails the test
// unless allowedMismatchSME names its class.

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/opcodes"
)

// smeFree are the bits a word of the SME space may have either way: 30..29
// and 24..0 (bit 31 is set, op0 = bits 28..25 is zero).
const smeFree = 0x61FFFFFF

// allowedMismatchSME explains the disagreements kboost accepts in the SME
// space, by class (theirs is objdump's mnemonic, ours kboost's):
//
//   - "mova-q-reserved": MOVA (vector to tile) and MOVA (tile to vector)
//     (printed as their alias MOV), bits 31..24 = 0xC0, bits 21..18 = 0, with
//     Q (bit 16) set and size (bits 23..22) not 11. The Arm ARM (DDI 0487,
//     "MOVA (vector to tile)", "MOVA (tile to vector)") encodes the 8-, 16-,
//     32- and 64-bit classes with Q = 0 and the 128-bit class as size = 11,
//     Q = 1; no encoding has Q = 1 with another size, so those words are
//     unallocated (UNDEFINED). objdump 2.40 ignores Q unless size is 11 and
//     prints them as the Q = 0 form; kboost decodes them as unallocated.
func allowedMismatchSME(w uint32, ours, theirs string) string {
	if w&0xFF3C0000 == 0xC0000000 && w>>16&1 == 1 && w>>22&3 != 3 && ours == "undefined" && theirs == "mov" {
		return "mova-q-reserved"
	}
	return ""
}

// smeTally counts agreement over SME words.
type smeTally struct {
	words, agree, undefBoth int
	allowed                 map[string]int
	allowedEx               map[string]string
	mismatch                map[string]int // "kind: ours | theirs" -> count
	samples                 map[string]string
	named                   map[string]int // objdump mnemonic -> words checked
	lines                   map[*opcodes.ArmOp]int
}

func newSMETally() *smeTally {
	return &smeTally{allowed: map[string]int{}, allowedEx: map[string]string{}, mismatch: map[string]int{},
		samples: map[string]string{}, named: map[string]int{}, lines: map[*opcodes.ArmOp]int{}}
}

func (tl *smeTally) miss(key, sample string) {
	if tl.mismatch[key] == 0 {
		tl.samples[key] = sample
	}
	tl.mismatch[key]++
}

func (tl *smeTally) check(inst *decode.Inst, err error, r *a64Rec) {
	tl.words++
	ours, theirs := ourMnemonic(inst, err), r.mnemonic()
	tl.named[theirs]++
	if err == nil {
		tl.lines[inst.ArmOp]++
	}
	if ours != theirs {
		if cls := allowedMismatchSME(r.word, ours, theirs); cls != "" {
			if tl.allowed[cls] == 0 {
				tl.allowedEx[cls] = fmt.Sprintf("%08x objdump %q", r.word, r.text)
			}
			tl.allowed[cls]++
			return
		}
		text := "(invalid)"
		if err == nil {
			text = fmt.Sprintf("%q (%s:%d)", decode.Format(inst, nil), inst.ArmOp.File, inst.ArmOp.Line)
		}
		tl.miss("mnemonic: "+ours+" | "+theirs, fmt.Sprintf("%08x objdump %q kboost %s", r.word, r.text, text))
		return
	}
	if ours == "undefined" {
		tl.undefBoth++
		tl.agree++
		return
	}
	if got, want := strings.Join(strings.Fields(decode.Format(inst, nil)), " "), strings.Join(strings.Fields(r.text), " "); got != want {
		tl.miss("text: "+ours, fmt.Sprintf("%08x objdump %q kboost %q", r.word, want, got))
		return
	}
	tl.agree++
}

func (tl *smeTally) report(t *testing.T, name string) {
	t.Helper()
	nm, na := 0, 0
	for _, n := range tl.mismatch {
		nm += n
	}
	for _, n := range tl.allowed {
		na += n
	}
	t.Logf("%s: %d words: agreement %d (%d undefined for both), allowed %d, mismatches %d", name, tl.words, tl.agree, tl.undefBoth, na, nm)
	var names []string
	for n := range tl.named {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, tl.named[n]))
	}
	t.Logf("  objdump's mnemonics: %s", strings.Join(parts, ", "))
	for c, n := range tl.allowed {
		t.Logf("  allowed %-20s %8d  e.g. %s", c, n, tl.allowedEx[c])
	}
	var keys []string
	for k := range tl.mismatch {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return tl.mismatch[keys[i]] > tl.mismatch[keys[j]] })
	for i, k := range keys {
		if i == 60 {
			t.Logf("  ... %d more mismatch groups", len(keys)-i)
			break
		}
		t.Logf("  MISMATCH %-30s %7d  %s", k, tl.mismatch[k], tl.samples[k])
	}
	if nm > 0 {
		t.Errorf("%s: %d words disagree with objdump in %d groups", name, nm, len(keys))
	}
}

// smeOps returns the allocated encodings of arm64-sme.spec.
func smeOps() []*opcodes.ArmOp {
	var ops []*opcodes.ArmOp
	for i := range opcodes.A64.Ops {
		if op := &opcodes.A64.Ops[i]; op.File == "arm64-sme.spec" && !op.Unallocated() {
			ops = append(ops, op)
		}
	}
	return ops
}

// compareSME runs objdump over the words in code and checks each one.
func compareSME(t *testing.T, tl *smeTally, code []byte) {
	t.Helper()
	var inst decode.Inst
	next := uint64(0)
	err := runObjdumpA64(t.Context(), code, 0, func(r *a64Rec) error {
		if r.addr != next || binary.LittleEndian.Uint32(code[r.addr:]) != r.word {
			return fmt.Errorf("objdump printed %#x word %08x, expected %#x", r.addr, r.word, next)
		}
		next += 4
		derr := decode.DecodeInto(&inst, code[r.addr:], decode.ModeA64, r.addr)
		tl.check(&inst, derr, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != uint64(len(code)) {
		t.Fatalf("objdump stopped at %#x of %#x", next, len(code))
	}
}

func TestOracleSMEFuzz(t *testing.T) {
	oracleGateA64(t)
	n := 1_000_000
	if s := os.Getenv("KBOOST_ORACLE_SME_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("KBOOST_ORACLE_SME_N=%q: want a word count of at least 2", s)
		}
	}
	ops := smeOps()
	if len(ops) == 0 {
		t.Fatal("no encodings from arm64-sme.spec in opcodes.A64")
	}
	rng := rand.New(rand.NewSource(5))
	code := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		w := 0x80000000 | rng.Uint32()&smeFree
		if i%2 == 1 {
			op := ops[rng.Intn(len(ops))]
			w = rng.Uint32()&^op.Mask | op.Value
		}
		binary.LittleEndian.PutUint32(code[4*i:], w)
	}
	tl := newSMETally()
	compareSME(t, tl, code)
	tl.report(t, fmt.Sprintf("SME fuzz (%d words)", n))
	for _, op := range ops {
		if tl.lines[op] == 0 {
			t.Errorf("%s:%d (%s) matched no fuzzed word", op.File, op.Line, op.Name)
		}
	}
}

func TestOracleSMEExhaustive(t *testing.T) {
	oracleGateA64(t)
	tl := newSMETally()
	const total, chunk = 1 << 27, 1 << 22
	// Every one of the 32 chunks with KBOOST_SME_EXHAUSTIVE=1 (about ten
	// minutes); otherwise two whole chunks (2^23 consecutive words: every
	// value of bits 21..0 under two random settings of the rest) per run.
	var bases []uint32
	if os.Getenv("KBOOST_SME_EXHAUSTIVE") == "1" {
		for base := uint32(0); base < total; base += chunk {
			bases = append(bases, base)
		}
	} else {
		seed := time.Now().UnixNano()
		rng := rand.New(rand.NewSource(seed))
		for _, k := range rng.Perm(total / chunk)[:2] {
			bases = append(bases, uint32(k)*chunk)
		}
		t.Logf("chunks at %#x and %#x (seed %d; KBOOST_SME_EXHAUSTIVE=1 checks all 32)", bases[0], bases[1], seed)
	}
	code := make([]byte, 4*chunk)
	for _, base := range bases {
		for i := uint32(0); i < chunk; i++ {
			x := base + i // bits 26..25 of x are word bits 30..29
			binary.LittleEndian.PutUint32(code[4*i:], 0x80000000|(x>>25&3)<<29|x&0x1FFFFFF)
		}
		compareSME(t, tl, code)
	}
	tl.report(t, fmt.Sprintf("SME space, %d of 32 chunks of 2^22 words", len(bases)))
}

// TestAllowedMismatchSME pins allowedMismatchSME to its one class: MOVA words
// with Q set and a size other than 11, which objdump calls MOV.
func TestAllowedMismatchSME(t *testing.T) {
	for _, c := range []struct {
		w            uint32
		ours, theirs string
		want         string
	}{
		{0xc0010000, "undefined", "mov", "mova-q-reserved"}, // vector to tile, size 00, Q 1
		{0xc0838000, "undefined", "mov", "mova-q-reserved"}, // tile to vector, size 10, Q 1
		{0xc0c10000, "undefined", "mov", ""},                // size 11, Q 1: the 128-bit form
		{0xc0000000, "undefined", "mov", ""},                // Q 0
		{0xc0010000, "mov", "undefined", ""},                // the other way round
		{0xc0090000, "undefined", "zero", ""},               // not MOVA
		{0xa0801234, "x", "y", ""},                          // SMOPA
	} {
		if got := allowedMismatchSME(c.w, c.ours, c.theirs); got != c.want {
			t.Errorf("allowedMismatchSME(%08x, %q, %q) = %q, want %q", c.w, c.ours, c.theirs, got, c.want)
		}
	}
}
