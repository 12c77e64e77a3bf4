package cpuspec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A spec survives Write then Parse unchanged.
func TestSpecRoundTrip(t *testing.T) {
	for _, s := range []*Spec{
		{Arch: "arm64", Version: "6.1.192", Caps: []string{"ALWAYS_BOOT", "HAS_PAN"}, Descs: []Desc{{Text: "Privileged Access Never", Cap: "HAS_PAN"}, {Text: `ARM erratum "x"`, Cap: "HAS_PAN"}}},
		{Arch: "x86", Version: "7.2.13", NCapInts: 2, NBugInts: 1, Features: []Feature{{Name: "FPU", Bit: 0, Flag: "fpu"}, {Name: "ALWAYS", Bit: 53}, {Name: "F00F", Bit: 64, Flag: "f00f", Bug: true}}},
	} {
		var b bytes.Buffer
		if err := s.Write(&b); err != nil {
			t.Fatal(err)
		}
		got, err := Parse(&b)
		if err != nil {
			t.Fatalf("%s: %v", s.Arch, err)
		}
		var b2 bytes.Buffer
		got.Write(&b2)
		var b1 bytes.Buffer
		s.Write(&b1)
		if b1.String() != b2.String() {
			t.Errorf("round trip:\n%s\nvs\n%s", b1.String(), b2.String())
		}
	}
}

// Extract follows each mkcapflags.sh naming rule: up to 6.11 an unquoted
// feature is shown under its macro name, "" hides it; later only quoted
// names are shown.
func TestExtractX86Naming(t *testing.T) {
	h := "#define NCAPINTS 2\n#define NBUGINTS 1\n" +
		"#define X86_FEATURE_FPU\t\t( 0*32+ 0) /* Onboard FPU */\n" +
		"#define X86_FEATURE_XMM\t\t( 0*32+25) /* \"sse\" */\n" +
		"#define X86_FEATURE_ALWAYS\t( 1*32+21) /* \"\" Always-present feature */\n" +
		"#define X86_BUG(x)\t\t\t(NCAPINTS*32 + (x))\n" +
		"#define X86_BUG_F00F\t\tX86_BUG(0) /* Intel F00F */\n"
	for _, c := range []struct {
		script string
		want   []string
	}{
		{`[ -z "$VALUE" ] && VALUE="\"$NAME\""`, []string{"fpu", "sse", "", "f00f"}},
		{`[ ! "$VALUE" ] && continue`, []string{"", "sse", "", ""}},
	} {
		files := map[string]string{"Makefile": "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 9\n", "arch/x86/include/asm/cpufeatures.h": h, "arch/x86/kernel/cpu/mkcapflags.sh": c.script}
		s, err := Extract("x86", func(p string) ([]byte, error) { return []byte(files[p]), nil })
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range s.Features {
			got = append(got, f.Flag)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") || s.Features[3].Bit != 64 || s.Features[2].Bit != 53 || s.Version != "6.1.9" {
			t.Errorf("%q: flags %q, features %+v", c.script, got, s.Features)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "arch mips\n", "arch x86\nversion 1\nfeature A 9999 a\n", "arch arm64\nversion 1\ndesc X notquoted\n", "arch x86\nversion 1\nncapints 1\nnbugints 1\nbug A 3 a\n"} {
		if _, err := Parse(strings.NewReader(in)); !errors.Is(err, ErrSpec) {
			t.Errorf("Parse(%q) = %v, want ErrSpec", in, err)
		}
	}
}

// FuzzParse: any input gives a spec or a typed error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add("arch x86\nversion 6.1.1\nncapints 1\nnbugints 1\nfeature FPU 0 fpu\nbug F00F 32 f00f\n")
	f.Add("arch arm64\nversion 6.1.1\ncap A\ndesc A \"x\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrSpec) && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		var b bytes.Buffer
		if err := s.Write(&b); err != nil {
			t.Fatal(err)
		}
		if _, err := Parse(&b); err != nil {
			t.Fatalf("written spec does not parse: %v", err)
		}
	})
}
