package decode_test

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// arm32Golden is one line of testdata/arm32.golden: the instruction bytes
// (hex, in memory order), the mode (a32, t32) and the mnemonic GNU objdump
// 2.40 printed for it, decoded on its own (outside any IT block), or
// "undefined".
type arm32Golden struct {
	raw  []byte
	mode decode.Mode
	want string
	line int
}

func readARM32Golden(t *testing.T) []arm32Golden {
	t.Helper()
	f, err := os.Open("testdata/arm32.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []arm32Golden
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("arm32.golden:%d: want hex<TAB>mode<TAB>mnemonic", n)
		}
		raw, err := hex.DecodeString(f[0])
		if err != nil {
			t.Fatalf("arm32.golden:%d: %v", n, err)
		}
		m, err := decode.ParseMode(f[1])
		if err != nil {
			t.Fatalf("arm32.golden:%d: %v", n, err)
		}
		out = append(out, arm32Golden{raw, m, f[2], n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestARM32Golden checks kboost's length and mnemonic for every line of the
// golden corpus (objdump's answers, recorded by TestOracleARM32Golden).
func TestARM32Golden(t *testing.T) {
	g := readARM32Golden(t)
	if len(g) < 500 {
		t.Fatalf("arm32.golden has %d entries, want >= 500", len(g))
	}
	for _, e := range g {
		inst, err := decode.Decode(e.raw, e.mode, 0x10000)
		if inst.Len != len(e.raw) {
			t.Errorf("arm32.golden:%d %x: length %d, want %d", e.line, e.raw, inst.Len, len(e.raw))
			continue
		}
		got := "undefined"
		if err == nil {
			got = decode.ARMMnemonic(&inst, decode.CondAL, false)
		} else if !errors.Is(err, decode.ErrInvalid) {
			t.Errorf("arm32.golden:%d %x: %v", e.line, e.raw, err)
			continue
		}
		if got != e.want {
			t.Errorf("arm32.golden:%d %x (%s): kboost %q, objdump %q", e.line, e.raw, e.mode, got, e.want)
		}
	}
}

// TestITState follows the Arm ARM's ITSTATE rules: ITTE EQ makes the next
// three instructions EQ, EQ, NE; the fourth is outside the block; an IT
// inside a block starts a new one.
func TestITState(t *testing.T) {
	decodeT := func(hw uint16) decode.Inst {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], hw)
		inst, err := decode.Decode(b[:], decode.ModeT32, 0)
		if err != nil {
			t.Fatalf("%04x: %v", hw, err)
		}
		return inst
	}
	type step struct {
		hw   uint16
		cond decode.Cond
		in   bool
	}
	// bf06: ITTE EQ (firstcond 0000, mask 0110); 1840: adds r0, r0, r1.
	// bf18: IT NE; bf5c: ITT PL.
	for _, seq := range [][]step{
		{{0xBF06, 0, false}, {0x1840, decode.CondEQ, true}, {0x1840, decode.CondEQ, true}, {0x1840, decode.CondNE, true}, {0x1840, 0, false}},
		{{0xBF18, 0, false}, {0x1840, decode.CondNE, true}, {0x1840, 0, false}},
		{{0xBF06, 0, false}, {0xBF18, decode.CondEQ, true}, {0x1840, decode.CondNE, true}, {0x1840, 0, false}},
		{{0xBF5C, 0, false}, {0x1840, decode.CondPL, true}, {0x1840, decode.CondPL, true}, {0x1840, 0, false}},
	} {
		var s decode.ITState
		for i, st := range seq {
			inst := decodeT(st.hw)
			c, in := s.Next(&inst)
			if in != st.in || in && c != st.cond {
				t.Errorf("seq %04x step %d (%04x): got %v %v, want %v %v", seq[0].hw, i, st.hw, c, in, st.cond, st.in)
			}
		}
	}
	inst := decodeT(0xBF06)
	if got := decode.ARMMnemonic(&inst, 0, false); got != "itte" {
		t.Errorf("bf06: %q, want itte", got)
	}
	add := decodeT(0x1840)
	if got := decode.ARMMnemonic(&add, decode.CondNE, true); got != "addne" {
		t.Errorf("1840 in an NE block: %q, want addne (T16 ADDS sets no flags in an IT block)", got)
	}
}

// TestARM32Targets checks branch and literal targets computed by hand from
// the Arm ARM's pseudocode (PC = address + 8 in A32, + 4 in Thumb; literal
// bases Align(PC, 4)).
func TestARM32Targets(t *testing.T) {
	cases := []struct {
		hex    string
		mode   decode.Mode
		addr   uint64
		target uint64
		pcrel  bool
	}{
		{"feffffea", decode.ModeA32, 0x1000, 0x1000, false},   // b .
		{"000000eb", decode.ModeA32, 0x1000, 0x1008, false},   // bl .+8
		{"000000fb", decode.ModeA32, 0x1000, 0x100A, false},   // blx .+10 (H=1)
		{"04009fe5", decode.ModeA32, 0x1000, 0x100C, true},    // ldr r0, [pc, #4]
		{"04001fe5", decode.ModeA32, 0x1000, 0x1004, true},    // ldr r0, [pc, #-4]
		{"08008fe2", decode.ModeA32, 0x1000, 0x1010, true},    // add r0, pc, #8 (adr)
		{"fee7", decode.ModeT32, 0x1000, 0x1000, false},       // b.n .
		{"00d0", decode.ModeT32, 0x1000, 0x1004, false},       // beq.n .+4
		{"08b1", decode.ModeT32, 0x1002, 0x1008, false},       // cbz r0, .+6
		{"0148", decode.ModeT32, 0x1002, 0x1008, true},        // ldr r0, [pc, #4]
		{"fff7feff", decode.ModeT32, 0x1000, 0x1000, false},   // bl .
		{"00f000b8", decode.ModeT32, 0x1000, 0x1004, false},   // b.w .+4
		{"fff7feef", decode.ModeT32, 0x1002, 0x1000, false},   // blx to Align(PC,4)-4
		{"dff80400", decode.ModeT32, 0x1002, 0x1008, true},    // ldr.w r0, [pc, #4]
		{"3ff4feaf", decode.ModeT32, 0x1000, 0x1000, false},   // beq.w .
		{"0ff20400", decode.ModeT32, 0x1002, 0x1008, true},    // addw r0, pc, #4 (adr.w)
		{"aff20400", decode.ModeT32, 0x1002, 0x1000, true},    // subw r0, pc, #4
		{"00000000ffffffff", decode.ModeInvalid, 0, 0, false}, // sentinel, skipped
		{"0000a0e1", decode.ModeA32, 0x1000, 0, false},        // mov r0, r0: no target
		{"00bf", decode.ModeT32, 0x1000, 0, false},            // nop: no target
		{"1847", decode.ModeT32, 0x1000, 0, false},            // bx r3: indirect
		{"0df1080c", decode.ModeT32, 0x1000, 0, false},        // add.w ip, sp, #8
		{"4ff00000", decode.ModeT32, 0x1000, 0, false},        // mov.w r0, #0
		{"2de9f041", decode.ModeT32, 0x1000, 0, false},        // stmdb sp!, {...}
		{"bde8f081", decode.ModeT32, 0x1000, 0, false},        // ldmia.w sp!, {...}
		{"10b5", decode.ModeT32, 0x1000, 0, false},            // push {r4, lr}
		{"10bd", decode.ModeT32, 0x1000, 0, false},            // pop {r4, pc}
		{"7047", decode.ModeT32, 0x1000, 0, false},            // bx lr
		{"0000", decode.ModeT32, 0x1000, 0, false},            // movs r0, r0
		{"1eff2fe1", decode.ModeA32, 0x1000, 0, false},        // bx lr
		{"04e02de5", decode.ModeA32, 0x1000, 0, false},        // push {lr}
		{"04f09de4", decode.ModeA32, 0x1000, 0, false},        // pop {pc}
		{"f04f2de9", decode.ModeA32, 0x1000, 0, false},        // push {r4-fp, lr}
		{"f08fbde8", decode.ModeA32, 0x1000, 0, false},        // pop {r4-fp, pc}
		{"0000", decode.ModeInvalid, 0, 0, false},             // sentinel, skipped
	}
	for _, c := range cases {
		if c.mode == decode.ModeInvalid {
			continue
		}
		b, _ := hex.DecodeString(c.hex)
		inst, err := decode.Decode(b, c.mode, c.addr)
		if err != nil {
			t.Errorf("%s: %v", c.hex, err)
			continue
		}
		if inst.Len != len(b) {
			t.Errorf("%s: length %d, want %d", c.hex, inst.Len, len(b))
		}
		if c.target == 0 {
			if inst.PCRel || inst.Branch.Relative() {
				t.Errorf("%s: unexpected PC-relative target %#x", c.hex, inst.Target)
			}
			continue
		}
		if inst.Target != c.target || inst.PCRel != c.pcrel {
			t.Errorf("%s at %#x: target %#x pcrel %v, want %#x %v", c.hex, c.addr, inst.Target, inst.PCRel, c.target, c.pcrel)
		}
	}
}

// TestARM32DecodeNoAlloc checks that decoding does not allocate.
func TestARM32DecodeNoAlloc(t *testing.T) {
	var inst decode.Inst
	a32 := []byte{0x04, 0x00, 0x9f, 0xe5}
	t32 := []byte{0xdf, 0xf8, 0x04, 0x00}
	n := testing.AllocsPerRun(1000, func() {
		_ = decode.DecodeInto(&inst, a32, decode.ModeA32, 0x1000)
		_ = decode.DecodeInto(&inst, t32, decode.ModeT32, 0x1000)
	})
	if n != 0 {
		t.Errorf("%v allocations per decode, want 0", n)
	}
}

// checkARM32Result is the contract a fuzzed decode must keep.
func checkARM32Result(t *testing.T, b []byte, mode decode.Mode, inst *decode.Inst, err error) {
	t.Helper()
	if len(b) == 0 {
		if err == nil {
			t.Fatal("no error for empty input")
		}
		return
	}
	var de *decode.DecodeError
	if err != nil && !errors.As(err, &de) {
		t.Fatalf("%x: error %T is not a *DecodeError", b, err)
	}
	if err != nil && !errors.Is(err, decode.ErrInvalid) && !errors.Is(err, decode.ErrTruncated) {
		t.Fatalf("%x: unexpected error %v", b, err)
	}
	if errors.Is(err, decode.ErrTruncated) {
		return
	}
	switch {
	case mode == decode.ModeA32 && inst.Len != 4,
		mode == decode.ModeT32 && inst.Len != decode.T32Len(binary.LittleEndian.Uint16(b)):
		t.Fatalf("%x: length %d", b, inst.Len)
	}
	if err == nil {
		if inst.ArmOp == nil || decode.ARMMnemonic(inst, decode.CondAL, false) == "" {
			t.Fatalf("%x: decoded without an encoding", b)
		}
		_ = decode.Format(inst, nil)
	}
}

func FuzzDecodeA32(f *testing.F) {
	for _, s := range []string{"feffffea", "04009fe5", "0000a0e1", "f04f2de9", "00", ""} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		inst, err := decode.Decode(b, decode.ModeA32, 0x8000)
		checkARM32Result(t, b, decode.ModeA32, &inst, err)
	})
}

func FuzzDecodeT32(f *testing.F) {
	for _, s := range []string{"fee7", "fff7feff", "bf06", "dff80400", "2de9f041", "f0", ""} {
		b, _ := hex.DecodeString(s)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var it decode.ITState
		for off := 0; off < len(b) || off == 0; {
			inst, err := decode.Decode(b[off:], decode.ModeT32, 0x8000+uint64(off))
			checkARM32Result(t, b[off:], decode.ModeT32, &inst, err)
			c, in := it.Next(&inst)
			if err == nil {
				_ = decode.ARMFormatIT(&inst, c, in, nil)
			}
			if inst.Len == 0 || len(b) == 0 {
				break
			}
			off += inst.Len
		}
	})
}

// thumbSIMDHeader opens opcodes/spec/thumb-simd.spec; the rest of the file is
// derived from arm-simd.spec by thumbSIMDSpec.
const thumbSIMDHeader = `# Advanced SIMD and floating-point (VFP) lines of the T32 table, included by
# thumb.spec. GENERATED from arm-simd.spec by decode.TestThumbSIMDSpecFresh
# (KBOOST_UPDATE_SPEC=1 go test ./decode -run ThumbSIMDSpecFresh): edit
# arm-simd.spec, not this file. The T32 encodings are the A32 ones with the
# top byte changed: Advanced SIMD data processing 1111001U -> 111U1111,
# element and structure loads/stores 11110100 -> 11111001, floating point
# cond -> 1110; the 1111 11xx space is the same in both. The comments are
# those of arm-simd.spec, with A32 bit layouts.
`

// thumbSIMDSpec derives thumb-simd.spec from the text of arm-simd.spec: the
// header comment (up to the first blank line) is replaced, other comments
// and blank lines are kept, and each encoding line gets its T32 top byte.
func thumbSIMDSpec(arm string) (string, error) {
	var b strings.Builder
	b.WriteString(thumbSIMDHeader)
	lines := strings.Split(strings.TrimSuffix(arm, "\n"), "\n")
	i := 0
	for i < len(lines) && strings.HasPrefix(lines[i], "#") {
		i++
	}
	for n, l := range lines[i:] {
		if l == "" || strings.HasPrefix(l, "#") {
			b.WriteString(l + "\n")
			continue
		}
		pat, rest, ok := strings.Cut(l, "|")
		f := strings.Fields(pat)
		if !ok || len(f) == 0 {
			return "", fmt.Errorf("arm-simd.spec:%d: not an encoding line: %q", i+n+1, l)
		}
		switch t := f[0]; {
		case t == "cond:4":
			f[0] = "1110"
		case len(t) == 8 && strings.HasPrefix(t, "1111001"):
			f[0] = "111" + t[7:] + "1111"
		case t == "11110100":
			f[0] = "11111001"
		case len(t) == 8 && strings.HasPrefix(t, "111111"):
			// coprocessor space 1111 11xx: the same encoding in T32
		default:
			return "", fmt.Errorf("arm-simd.spec:%d: top byte %q has no T32 counterpart (want cond:4, 1111001U, 11110100 or 111111xx)", i+n+1, t)
		}
		p := strings.Join(f, " ")
		fmt.Fprintf(&b, "%-*s |%s\n", max(len(pat)-1, len(p)), p, rest)
	}
	return b.String(), nil
}

// TestThumbSIMDSpecFresh fails when opcodes/spec/thumb-simd.spec is not what
// thumbSIMDSpec derives from opcodes/spec/arm-simd.spec; with
// KBOOST_UPDATE_SPEC=1 it rewrites the file (then run `go generate ./opcodes`).
func TestThumbSIMDSpecFresh(t *testing.T) {
	arm, err := os.ReadFile("../opcodes/spec/arm-simd.spec")
	if err != nil {
		t.Fatal(err)
	}
	want, err := thumbSIMDSpec(string(arm))
	if err != nil {
		t.Fatal(err)
	}
	const path = "../opcodes/spec/thumb-simd.spec"
	if os.Getenv("KBOOST_UPDATE_SPEC") == "1" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s is stale: run `KBOOST_UPDATE_SPEC=1 go test ./decode -run ThumbSIMDSpecFresh` and `go generate ./opcodes`", path)
	}
}
