package kernelref

import (
	"strings"
	"testing"
)

const sampleC = `/* header */
static int helper(int x);

static unsigned long
two_line(int a)
{
	return a;
}

int one_line(struct s *p)
{
	if (p) {
		return 1;
	}
	return 0;
}

#ifdef A
static void twice(void)
{
	x();
}
#else
static void twice(void)
{
}
#endif

struct thing {
	int a;
};
#define W(x) \
	((x) + 1)
int table[] = { W(1) };
#undef W
`

func TestCutFunc(t *testing.T) {
	lines := strings.Split(sampleC, "\n")
	for _, tc := range []struct {
		name string
		nth  int
		want string
	}{
		{"two_line", 0, "static unsigned long\ntwo_line(int a)\n{\n\treturn a;\n}\n"},
		{"one_line", 0, "int one_line(struct s *p)\n{\n\tif (p) {\n\t\treturn 1;\n\t}\n\treturn 0;\n}\n"},
		{"twice", 1, "static void twice(void)\n{\n\tx();\n}\n"},
		{"twice", 2, "static void twice(void)\n{\n}\n"},
	} {
		got, err := cutFunc(lines, tc.name, tc.nth)
		if err != nil {
			t.Errorf("%s/%d: %v", tc.name, tc.nth, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s/%d:\n%q\nwant\n%q", tc.name, tc.nth, got, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		nth  int
	}{{"helper", 0}, {"missing", 0}, {"twice", 0}, {"twice", 3}} {
		if got, err := cutFunc(lines, tc.name, tc.nth); err == nil {
			t.Errorf("%s/%d: want an error, got %q", tc.name, tc.nth, got)
		}
	}
}

func TestPieces(t *testing.T) {
	for _, tc := range []struct {
		p    piece
		want string
	}{
		{piece{kind: kindStruct, name: "thing"}, "struct thing {\n\tint a;\n};\n"},
		{piece{kind: kindRange, name: "#define W(", end: "#undef W"}, "#define W(x) \\\n\t((x) + 1)\nint table[] = { W(1) };\n#undef W\n"},
		{piece{kind: kindLines, name: `^#(ifdef|else)`}, "#ifdef A\n#else\n"},
	} {
		got, err := tc.p.cut(sampleC)
		if err != nil || got != tc.want {
			t.Errorf("%+v: got %q, %v; want %q", tc.p, got, err, tc.want)
		}
	}
	if _, err := (piece{kind: kindStruct, name: "nothing"}).cut(sampleC); err == nil {
		t.Error("missing struct: want an error")
	}
	if _, err := (piece{kind: kindLines, name: `^nomatch`}).cut(sampleC); err == nil {
		t.Error("no matching line: want an error")
	}
}

func TestOnly64(t *testing.T) {
	got := only64("static void riprel_analyze(struct arch_uprobe *auprobe, struct insn *insn)\n{\n\tx();\n}\n")
	if !strings.Contains(got, "#else\nstatic void riprel_analyze(struct arch_uprobe *auprobe, struct insn *insn) {}\n#endif") {
		t.Errorf("only64: %q", got)
	}
	if got := longSize("a != sizeof(unsigned long))"); got != "a != KR_SIZEOF_LONG)" {
		t.Errorf("longSize: %q", got)
	}
}

// Cutting never panics, whatever the source text.
func FuzzCut(f *testing.F) {
	f.Add(sampleC, "two_line", 0)
	f.Add("int f(\n{\n", "f", 1)
	f.Add("struct thing {\n", "thing", 2)
	f.Fuzz(func(t *testing.T, src, name string, kind int) {
		p := piece{kind: pieceKind(kind & 3), name: name, end: "}", nth: kind >> 2 & 3}
		if p.kind == kindLines {
			p.name = regexpQuoteForFuzz(name)
		}
		_, _ = p.cut(src)
	})
}

func regexpQuoteForFuzz(s string) string { return "^" + strings.ReplaceAll(s, "\\", "") }
