package armspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	src := `# comment
isa a64
index 25 4
sf:1 00 100101 hw:2 imm16:16 Rd=11111 | movn | dpimm | alias if=movn
0 00101 imm26:26 | b | branch | pcrel branch=jmp
`
	s, err := Parse(strings.NewReader(src), "t.spec")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Lines) != 2 || s.KeyShift != 25 || s.KeyBits != 4 {
		t.Fatalf("parsed %+v", s)
	}
	l := s.Lines[0]
	if l.Mask != 0x7F80001F || l.Value != 0x1280001F || l.Cond != "ArmCondMovn" {
		t.Errorf("line 1: mask %#x value %#x cond %s", l.Mask, l.Value, l.Cond)
	}
	if b := s.Lines[1]; b.Mask != 0xFC000000 || b.Value != 0x14000000 || b.Branch != "BranchJmp" {
		t.Errorf("line 2: %+v", b)
	}
	if _, err := Generate(s, Cmdline); err != nil {
		t.Fatal(err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, src := range []string{
		"0 00101 imm26:26 | b | branch |",            // no isa
		"isa a64\n0 00101 imm26:25 | b | branch |",   // 31 positions
		"isa a64\n0 00101 imm26:26 | b | nosuch |",   // class
		"isa a64\n0 00101 imm26:26 | b | branch | x", // flag
		"isa a64\n0 00101 imm26:26 | - | branch |",   // "-" needs unallocated
		"isa a64\n0 00101 imm26:26 | b | branch",     // 3 fields
		"isa q99",
		"isa a64\nindex 30 8",
	} {
		if _, err := Parse(strings.NewReader(src), "t.spec"); err == nil {
			t.Errorf("Parse(%q): no error", src)
		}
	}
}

// FuzzParse: the spec parser never panics, and what it accepts generates.
func FuzzParse(f *testing.F) {
	f.Add("isa a64\n0 00101 imm26:26 | b | branch | pcrel branch=jmp\n")
	f.Add("isa t32\nindex 12 4\n1101 cond:4 imm8:8 | b | branch | if=!al\n")
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse(strings.NewReader(src), "f.spec")
		if err != nil {
			return
		}
		if len(s.Lines) > 64 {
			return
		}
		if _, err := Generate(s, Cmdline); err != nil {
			t.Fatalf("accepted spec does not generate: %v", err)
		}
	})
}

// TestParseFileInclude checks that included lines keep their own file and
// line, sit where the include directive is, and that bad includes fail.
func TestParseFileInclude(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.spec", "isa a64\n0 00101 imm26:26 | b | branch | pcrel branch=jmp\ninclude part.spec\n1 00101 imm26:26 | bl | branch | pcrel branch=call\n")
	write("part.spec", "# part\n\n11010110 01011111 000000 Rn:5 00000 | ret | branch | branch=ret\n")
	s, err := ParseFile(filepath.Join(dir, "main.spec"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range s.Lines {
		got = append(got, l.Name+"@"+l.Pos())
	}
	want := "b@main.spec:2 ret@part.spec:3 bl@main.spec:4"
	if strings.Join(got, " ") != want {
		t.Errorf("lines %v, want %s", got, want)
	}
	write("loop.spec", "isa a64\ninclude loop.spec\n")
	write("missing.spec", "isa a64\ninclude nosuch.spec\n")
	write("early.spec", "include part.spec\nisa a64\n")
	for _, name := range []string{"loop.spec", "missing.spec", "early.spec"} {
		if _, err := ParseFile(filepath.Join(dir, name)); err == nil {
			t.Errorf("ParseFile(%s): no error", name)
		}
	}
	if _, err := Parse(strings.NewReader("isa a64\ninclude part.spec\n"), "r.spec"); err == nil {
		t.Error("Parse with include: no error (a reader has no directory)")
	}
}
