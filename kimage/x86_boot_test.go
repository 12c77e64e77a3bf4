package kimage

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
)

// optimize_nops over a site: a run of 0x90 becomes add_nops of its length,
// a single 0x90 stays, other instructions are stepped over whole.
func TestX86OptimizeNops(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte{0x90, 0x90, 0x90}, []byte{0x0f, 0x1f, 0x00}},
		{[]byte{0x90}, []byte{0x90}},
		{[]byte{0x48, 0x89, 0xe5, 0x90, 0x90}, []byte{0x48, 0x89, 0xe5, 0x66, 0x90}},
		// a 0x90 inside an instruction's immediate is not a NOP
		{[]byte{0xb8, 0x90, 0x90, 0x90, 0x90, 0x90}, []byte{0xb8, 0x90, 0x90, 0x90, 0x90, 0x90}},
		{bytes.Repeat([]byte{0x90}, 10), append(append([]byte{}, x86Nops[8]...), 0x66, 0x90)},
	} {
		got := append([]byte(nil), c.in...)
		optimizeNops61(got)
		if !bytes.Equal(got, c.want) {
			t.Errorf("optimizeNops61(% x) = % x, want % x", c.in, got, c.want)
		}
	}
}

func TestX86FeaturesSet(t *testing.T) {
	c := QEMU64()
	if !c.Features.Has(X86FeatureAlways) || c.Features.Has(X86FeatureXenPV) || c.CPUs != 1 {
		t.Errorf("qemu64: %+v", c)
	}
}

func hexBytes(t *testing.T, s string) []byte {
	t.Helper()
	var out []byte
	for _, f := range strings.Fields(s) {
		b, err := strconv.ParseUint(f, 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, byte(b))
	}
	return out
}

// optimize_nops after 6.1 (alternative.c of 6.12.117 and 7.2.13): a NOP
// run starting before the site's last instruction becomes one add_nop (a
// jmp.d8 over int3 when longer than ASM_NOP_MAX, 11); a NOP that is the
// last instruction stays; what counts as a NOP is each version's
// insn_is_nop.
func TestX86OptimizeNopsVersions(t *testing.T) {
	r612, r72 := x86BootVersions[1], x86BootVersions[2]
	for _, c := range []struct {
		rules   *x86BootRules
		in, out string
	}{
		{r612, "90 90 90 48 89 c7", "0f 1f 00 48 89 c7"},
		{r612, "48 89 c7 90 90", "48 89 c7 66 90"},
		{r612, "48 89 c7 66 90", "48 89 c7 66 90"},       // the last instruction: already optimized
		{r612, "0f 1f 00 90 90 90", "66 0f 1f 44 00 00"}, // NOPL joins the run
		{r612, "90 90 90 90 90 90 90 90 90 90 90 90 c3", "eb 0a cc cc cc cc cc cc cc cc cc cc c3"},
		{r612, "f3 90 90 90", "f3 90 66 90"}, // PAUSE is no NOP
		{r612, "41 90 90", "0f 1f 00"},       // 6.12 takes xchg %eax,%r8d for one
		{r72, "41 90 90", "41 90 90"},
		{r72, "48 89 c0 90 90", "0f 1f 44 00 00"}, // mov %rax,%rax is one in 7.2
		{r612, "48 89 c0 90 90", "48 89 c0 66 90"},
		{r72, "89 c0 90 90", "89 c0 66 90"}, // mov %eax,%eax zero-extends
		{r72, "48 8d 76 00 90", "0f 1f 44 00 00"},
		{r72, "eb 00 90", "0f 1f 00"},
	} {
		b := &X86Boot{rules: c.rules}
		got := hexBytes(t, c.in)
		b.optimizeNops(got)
		if want := hexBytes(t, c.out); !bytes.Equal(got, want) {
			t.Errorf("Linux %s optimize_nops(%s) = % x, want % x", c.rules.version, c.in, got, want)
		}
	}
}

// apply_relocation: a call or jmp copied from the replacement keeps its
// target (the displacement rebased by repl-instr), a JMP.d32 whose rebased
// displacement fits a byte becomes JMP.d8 and int3s, a branch into the
// replacement itself is left alone, and so is a rip-relative operand's.
func TestX86ApplyRelocation(t *testing.T) {
	const instr, repl = 0xffffffff81000000, 0xffffffff83000000
	rel := func(from, to uint64) []byte {
		return binary.LittleEndian.AppendUint32(nil, uint32(int32(int64(to-from))))
	}
	// call T from repl -> call T from instr
	tgt := uint64(0xffffffff81234560)
	buf := append([]byte{0xe8}, rel(repl+5, tgt)...)
	applyRelocation(buf, instr, repl, 5)
	if want := append([]byte{0xe8}, rel(instr+5, tgt)...); !bytes.Equal(buf, want) {
		t.Errorf("call: % x, want % x", buf, want)
	}
	// jmp.d32 to instr+0x40 -> eb 3e cc cc cc
	buf = append([]byte{0xe9}, rel(repl+5, instr+0x40)...)
	applyRelocation(buf, instr, repl, 5)
	if want := []byte{0xeb, 0x3e, 0xcc, 0xcc, 0xcc}; !bytes.Equal(buf, want) {
		t.Errorf("jmp: % x, want % x", buf, want)
	}
	// mov 0x100(%rip),%rax: the data stays where it was
	buf = append([]byte{0x48, 0x8b, 0x05}, rel(repl+7, 0xffffffff82000000)...)
	applyRelocation(buf, instr, repl, 7)
	if want := append([]byte{0x48, 0x8b, 0x05}, rel(instr+7, 0xffffffff82000000)...); !bytes.Equal(buf, want) {
		t.Errorf("rip-relative: % x, want % x", buf, want)
	}
	// jne to the end of the replacement: relative to the block, kept
	buf = []byte{0x75, 0x02, 0x31, 0xc0}
	applyRelocation(buf, instr, repl, 4)
	if want := []byte{0x75, 0x02, 0x31, 0xc0}; !bytes.Equal(buf, want) {
		t.Errorf("inner jcc: % x, want % x", buf, want)
	}
}

// The version rules by release: exact, the nearest older, the oldest.
func TestX86BootRulesFor(t *testing.T) {
	for _, c := range []struct {
		release, version string
		noted            bool
	}{
		{"6.1.0-57-amd64", "6.1", false},
		{"6.12.117+deb12-amd64", "6.12", false},
		{"7.2.13+deb14-amd64", "7.2", false},
		{"6.6.8", "6.1", true},
		{"6.7.12", "6.1", true},
		{"6.8.0-31-generic", "6.12", true}, // paravirt sites are ALT_FLAG_DIRECT_CALL alternatives from 6.8
		{"6.11.11", "6.12", true},
		{"6.18.44", "6.12", true},
		{"8.0", "7.2", true},
		{"5.10.0", "6.1", true},
		{"", "6.1", true},
	} {
		r, note := x86BootRulesFor(c.release)
		if r.version != c.version || (note != "") != c.noted {
			t.Errorf("%q: Linux %s, note %q; want %s (note: %v)", c.release, r.version, note, c.version, c.noted)
		}
	}
	if _, note := x86BootRulesFor("6.9.3"); !strings.Contains(note, "as Linux 6.12, whose rules upstream has had since 6.8") {
		t.Errorf("6.9.3: note %q does not say the 6.12 rules hold from 6.8", note)
	}
}

// is_endbr: ENDBR64, ENDBR32 and the version's poison.
func TestX86IsEndbr(t *testing.T) {
	word := func(s string) uint32 { return binary.LittleEndian.Uint32(hexBytes(t, s)) }
	for _, c := range []struct {
		bytes  string
		poison uint32
		want   bool
	}{
		{"f3 0f 1e fa", x86BootVersions[1].endbrPoison, true},
		{"f3 0f 1e fb", x86BootVersions[1].endbrPoison, true},
		{"66 0f 1f 00", x86BootVersions[1].endbrPoison, true},
		{"0f 1f 40 d6", x86BootVersions[2].endbrPoison, true},
		{"0f 1f 40 d6", x86BootVersions[1].endbrPoison, false},
		{"55 48 89 e5", x86BootVersions[2].endbrPoison, false},
	} {
		if got := isEndbr(word(c.bytes), c.poison); got != c.want {
			t.Errorf("is_endbr(%s) with poison %#x = %v", c.bytes, c.poison, got)
		}
	}
}
