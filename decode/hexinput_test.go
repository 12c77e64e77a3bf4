package decode

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// TestParseHex: the one input rule. The words are the Arm ARM's encodings
// (NOP d503201f; A32 PUSH {lr} e52de004; Thumb-2 STMDB sp!,{r4-r11,lr}
// e92d 4ff0), the bytes their little-endian memory images.
func TestParseHex(t *testing.T) {
	for _, c := range []struct {
		arch  *Arch
		args  []string
		words bool
		want  string // memory order
	}{
		{ARM64, []string{"1f 20 03 d5"}, false, "1f2003d5"},
		{ARM64, []string{"1f2003d5"}, false, "1f2003d5"},
		{ARM64, []string{`\x1f\x20\x03\xd5`}, false, "1f2003d5"},
		{ARM64, []string{"d503201f"}, true, "1f2003d5"},
		{ARM64, []string{"0xd503201f"}, false, "1f2003d5"},
		{ARM64, []string{"0xd503201f", "1f 20 03 d5"}, false, "1f2003d51f2003d5"},
		{ARM, []string{"e52de004"}, true, "04e02de5"},
		{Thumb, []string{"e92d", "4ff0"}, true, "2de9f04f"},
		{Thumb, []string{"e92d4ff0"}, true, "2de9f04f"},
		{Thumb, []string{"0x4408"}, false, "0844"},
		{X86_64, []string{"0x48,0x8b", "05"}, true, "488b05"},
		{I386, []string{"66:e8"}, false, "66e8"},
	} {
		got, err := c.arch.ParseHex(c.args, c.words)
		if err != nil || hex.EncodeToString(got) != c.want {
			t.Errorf("%s %q words=%v: %x, %v; want %s", c.arch.Name, c.args, c.words, got, err, c.want)
		}
	}
	for _, c := range []struct {
		arch  *Arch
		args  []string
		words bool
		why   string
	}{
		{ARM64, []string{"d503201"}, false, "odd number"},
		{ARM64, []string{"d50320"}, true, "8 hex digits"},
		{Thumb, []string{"e92d4f"}, true, "4 hex digits"},
		{X86_64, []string{"zz"}, false, "not hex"},
		{X86_64, []string{" , "}, false, "no bytes"},
		{ARM64, []string{`0x\x1f`}, false, "cannot be words"},
	} {
		_, err := c.arch.ParseHex(c.args, c.words)
		var he *HexError
		if !errors.As(err, &he) || !errors.Is(err, ErrHex) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%s %q: %v, want a HexError saying %q", c.arch.Name, c.args, err, c.why)
		}
	}
}

// TestDecodeOne: one instruction means one: short input is ErrTruncated,
// more input ErrTrailing (with the instruction decoded), both wrapped in a
// *DecodeError.
func TestDecodeOne(t *testing.T) {
	for _, c := range []struct {
		arch *Arch
		code string
		want error
		n    int
	}{
		{X86_64, "488b05100000", ErrTruncated, 0},
		{X86_64, "9090", ErrTrailing, 1},
		{X86_64, "90", nil, 1},
		{ARM64, "1f2003", ErrTruncated, 0},
		{ARM64, "1f2003d500", ErrTrailing, 4},
		{Thumb, "2de9", ErrTruncated, 0},
		{Thumb, "08440844", ErrTrailing, 2},
	} {
		b, _ := hex.DecodeString(c.code)
		inst, err := c.arch.DecodeOne(b, 0x1000)
		var de *DecodeError
		if c.want == nil && err != nil || c.want != nil && (!errors.Is(err, c.want) || !errors.As(err, &de)) {
			t.Errorf("%s %s: %v, want %v", c.arch.Name, c.code, err, c.want)
		}
		if c.n > 0 && inst.Len != c.n {
			t.Errorf("%s %s: len %d, want %d", c.arch.Name, c.code, inst.Len, c.n)
		}
	}
}

// FuzzParseHex: any input either is refused with a *HexError, or gives
// bytes that read back the same written as plain hex (and, for word
// arches, as the words they make up).
func FuzzParseHex(f *testing.F) {
	f.Add("1f 20 03 d5", "0xd503201f", false)
	f.Add("e92d 4ff0", `\x90`, true)
	f.Add("0x", "zz", false)
	f.Fuzz(func(t *testing.T, a, b string, words bool) {
		for _, arch := range Arches {
			got, err := arch.ParseHex([]string{a, b}, words)
			if err != nil {
				var he *HexError
				if !errors.As(err, &he) || !errors.Is(err, ErrHex) {
					t.Fatalf("%s %q %q: %T %v", arch.Name, a, b, err, err)
				}
				continue
			}
			again, err := arch.ParseHex([]string{hex.EncodeToString(got)}, false)
			if err != nil || string(again) != string(got) {
				t.Fatalf("%s %q %q: % x, again % x (%v)", arch.Name, a, b, got, again, err)
			}
		}
	})
}
