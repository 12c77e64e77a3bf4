package decode_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// a64Golden is one line of testdata/arm64.golden (format documented there).
type a64Golden struct {
	line  int
	bytes []byte
	want  string
}

func readA64Golden(t *testing.T) []a64Golden {
	t.Helper()
	f, err := os.Open("testdata/arm64.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []a64Golden
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 || f[1] != "a64" {
			t.Fatalf("arm64.golden:%d: want HEX<TAB>a64<TAB>WANT", n)
		}
		b, err := hex.DecodeString(strings.ReplaceAll(f[0], " ", ""))
		if err != nil || len(b) != 4 {
			t.Fatalf("arm64.golden:%d: bad HEX %q", n, f[0])
		}
		out = append(out, a64Golden{n, b, f[2]})
	}
	return out
}

// firstHexOperand returns the first bare hex number among the operands of an
// objdump text ("b 0x1040", "adrp x0, 0x1000", "ldr x0, 0x1008").
func firstHexOperand(text string) (uint64, bool) {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ',' }) {
		if strings.HasPrefix(f, "0x") {
			v, err := strconv.ParseUint(f[2:], 16, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// TestA64Golden checks kboost against objdump's recorded text: mnemonic,
// validity, and for PC-relative instructions the target address.
func TestA64Golden(t *testing.T) {
	for i, g := range readA64Golden(t) {
		inst, err := decode.Decode(g.bytes, decode.ModeA64, 0x1000+4*uint64(i))
		if theirs, ours := firstField(g.want), ourMnemonic(&inst, err); theirs != ours {
			if cls := allowedMismatchA64(inst.Word, &inst, ours, theirs); cls != "" {
				continue
			}
		}
		if inst.Len != 4 {
			t.Errorf("line %d: Len %d, want 4", g.line, inst.Len)
		}
		if g.want == "undefined" {
			if !errors.Is(err, decode.ErrInvalid) {
				t.Errorf("line %d %x: got %v, want ErrInvalid (objdump: undefined)", g.line, g.bytes, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("line %d %x: %v; objdump: %s", g.line, g.bytes, err, g.want)
			continue
		}
		got := decode.Format(&inst, nil)
		if firstField(got) != firstField(g.want) {
			t.Errorf("line %d %x: kboost %q, objdump %q", g.line, g.bytes, got, g.want)
		}
		if inst.Branch.Relative() || inst.PCRel {
			if v, ok := firstHexOperand(g.want); !ok || v != inst.Target {
				t.Errorf("line %d %x: target %#x, objdump %q", g.line, g.bytes, inst.Target, g.want)
			}
		}
	}
}

// TestOracleA64Golden re-runs objdump over the golden words and checks the
// recorded text.
func TestOracleA64Golden(t *testing.T) {
	oracleGateA64(t)
	gs := readA64Golden(t)
	var code []byte
	for _, g := range gs {
		code = append(code, g.bytes...)
	}
	i := 0
	err := runObjdumpA64(context.Background(), code, 0x1000, func(r *a64Rec) error {
		text := strings.ReplaceAll(r.text, "\t", " ")
		if r.mnemonic() == "undefined" {
			text = "undefined"
		}
		if i < len(gs) && text != gs[i].want {
			t.Errorf("arm64.golden:%d: objdump now prints %q, file says %q", gs[i].line, text, gs[i].want)
		}
		i++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != len(gs) {
		t.Fatalf("objdump printed %d words, golden has %d", i, len(gs))
	}
}

// TestA64Branches checks the branch kinds and targets of the control
// transfers against the architecture's encodings (ARM DDI 0487, C6.2).
func TestA64Branches(t *testing.T) {
	le := func(w uint32) []byte { return []byte{byte(w), byte(w >> 8), byte(w >> 16), byte(w >> 24)} }
	cases := []struct {
		w      uint32
		kind   decode.BranchKind
		target uint64 // 0: not PC-relative
		pcrel  bool
	}{
		{0x14000010, decode.BranchJmp, 0x1040, false},  // b +0x40
		{0x97fffff0, decode.BranchCall, 0x0fc0, false}, // bl -0x40
		{0x54000040, decode.BranchJcc, 0x1008, false},  // b.eq +8
		{0xb4000040, decode.BranchJcc, 0x1008, false},  // cbz x0, +8
		{0x36080040, decode.BranchJcc, 0x1008, false},  // tbz w0, #1, +8
		{0xd61f0020, decode.BranchJmpInd, 0, false},    // br x1
		{0xd63f0020, decode.BranchCallInd, 0, false},   // blr x1
		{0xd65f03c0, decode.BranchRet, 0, false},       // ret
		{0xd65f0bff, decode.BranchRet, 0, false},       // retaa
		{0xd69f03e0, decode.BranchIret, 0, false},      // eret
		{0xd4000001, decode.BranchInt, 0, false},       // svc #0
		{0xd4200080, decode.BranchInt, 0, false},       // brk #4
		{0x00000000, decode.BranchUD, 0, false},        // udf #0
		{0x90000000, decode.BranchNone, 0x1000, true},  // adrp x0, page
		{0xb0000000, decode.BranchNone, 0x2000, true},  // adrp x0, page+1
		{0x10000040, decode.BranchNone, 0x1008, true},  // adr x0, +8
		{0x58000040, decode.BranchNone, 0x1008, true},  // ldr x0, literal
		{0x9c000040, decode.BranchNone, 0x1008, true},  // ldr q0, literal
		{0xaa0103e0, decode.BranchNone, 0, false},      // mov x0, x1
	}
	for _, c := range cases {
		inst, err := decode.Decode(le(c.w), decode.ModeA64, 0x1000)
		if err != nil {
			t.Errorf("%08x: %v", c.w, err)
			continue
		}
		if inst.Branch != c.kind || inst.PCRel != c.pcrel {
			t.Errorf("%08x (%s): branch %v pcrel %v, want %v %v", c.w, decode.Format(&inst, nil), inst.Branch, inst.PCRel, c.kind, c.pcrel)
		}
		if c.target != 0 && inst.Target != c.target {
			t.Errorf("%08x: target %#x, want %#x", c.w, inst.Target, c.target)
		}
	}
}

// TestDecodeA64Allocs checks that decoding a valid word does not allocate.
func TestDecodeA64Allocs(t *testing.T) {
	b := []byte{0x20, 0x00, 0xe0, 0xf8} // ldaddal
	var inst decode.Inst
	if n := testing.AllocsPerRun(1000, func() { _ = decode.DecodeInto(&inst, b, decode.ModeA64, 0x1000) }); n != 0 {
		t.Fatalf("DecodeInto(A64) allocates %.1f times per call", n)
	}
}

// FuzzDecodeA64: no panic; Len is 4 (or the input length when shorter) and
// errors are typed.
func FuzzDecodeA64(f *testing.F) {
	for _, s := range []string{"1f2003d5", "3f2303d5", "200020f8", "00000000", "ffffffff", "341200a0", "00", ""} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		inst, err := decode.Decode(b, decode.ModeA64, 0xffff800008000000)
		if len(b) >= 4 && inst.Len != 4 {
			t.Fatalf("Len %d for %d bytes", inst.Len, len(b))
		}
		if err != nil {
			var de *decode.DecodeError
			if !errors.As(err, &de) || !(errors.Is(err, decode.ErrInvalid) || errors.Is(err, decode.ErrTruncated)) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if inst.ArmOp == nil || inst.ArmOp.Unallocated() {
			t.Fatalf("decoded without a table entry")
		}
		_ = decode.Format(&inst, nil)
	})
}

// TestAllowedMismatchA64 pins the classes allowedMismatchA64 accepts: the
// one documented SME class only, never another word.
func TestAllowedMismatchA64(t *testing.T) {
	for _, c := range []struct {
		w    uint32
		want string
	}{
		{0x04a01234, ""}, // SVE space (op0 0010), no documented class
		{0xa0801234, ""}, // SME space (op0 0000, bit 31), no documented class
		{0xd503233f, ""}, // paciasp
		{0x4e284820, ""}, // aese
		{0x00000000, ""}, // udf
		{0x0000dead, ""}, // udf
	} {
		var inst decode.Inst
		if got := allowedMismatchA64(c.w, &inst, "x", "y"); got != c.want {
			t.Errorf("allowedMismatchA64(%08x) = %q, want %q", c.w, got, c.want)
		}
	}
}
