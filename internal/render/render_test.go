package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostile are names a binary may carry: markup, quotes, control bytes and
// invalid UTF-8.
var hostile = []string{
	`<script>alert(1)</script>`, `"><img src=x onerror=alert(2)>`, `'quoted'&amp;`, "ctl\x01\x07\x1b[31m\x7f",
	"bad\xff\xfeutf8\xc3", `</script><script>alert(3)</script>`, "a\u2028b",
}

// parseXML reads every token of an XML document.
func parseXML(t *testing.T, b []byte) []string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return texts
		}
		if err != nil {
			t.Fatalf("not valid XML: %v\n%s", err, b)
		}
		if cd, ok := tok.(xml.CharData); ok {
			texts = append(texts, string(cd))
		}
	}
}

func hostileGrid() *GridPage {
	g := Grid{Title: hostile[0], RowLabels: []string{hostile[3], hostile[4]}, RowNames: []string{hostile[1], hostile[5]}, ColLabels: []string{"0", "1"}}
	for r := 0; r < 2; r++ {
		var row []Cell
		for c := 0; c < 2; c++ {
			row = append(row, Cell{Key: hostile[2], Class: "boost", Letter: "B", Title: hostile[r*2+c], Verdict: hostile[6], Class2: "reject", Letter2: "X", Differs: c == 1})
		}
		g.Cells = append(g.Cells, row)
	}
	return &GridPage{Title: hostile[1], Policy: hostile[0], Policy2: hostile[4], Grids: []Grid{g}}
}

func TestGridSVGIsXMLWithHostileStrings(t *testing.T) {
	var b bytes.Buffer
	if err := GridSVG(&b, hostileGrid()); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(b.Bytes()) {
		t.Fatal("SVG is not valid UTF-8")
	}
	texts := strings.Join(parseXML(t, b.Bytes()), "")
	// the markup is text, not elements
	if !strings.Contains(texts, "<script>alert(1)</script>") {
		t.Errorf("hostile title not kept as text: %q", texts)
	}
	if strings.Contains(b.String(), "<script") || strings.Contains(b.String(), "<img") {
		t.Errorf("unescaped markup in the SVG")
	}
	if !strings.Contains(texts, "ctl\u2401\u2407\u241b[31m\u2421") {
		t.Errorf("control bytes not drawn as control pictures: %q", texts)
	}
}

func TestInstSVGIsXML(t *testing.T) {
	p := &ExplainPage{Title: hostile[0], Inst: Inst{Addr: "0x1000", Asm: hostile[3], Len: 2,
		Fields: []Field{{Name: "opcode", Class: "opcode", Off: 0, Bytes: []string{"0f"}, Text: hostile[4]}, {Name: hostile[1], Class: "disp", Off: 1, Bytes: []string{"05"}}}},
		Slot: &Slot{Addr: "0x2000", Addr0: "0x1000", InsnLen: 1, Resume: "0x1001", JumpOff: 1, TrapOff: -1, FixupFirst: -1, Code: []string{"90"},
			Bytes: []SlotByte{{0, "90", "copy"}, {1, "e9", "jmp"}}}}
	var b bytes.Buffer
	if err := InstSVG(&b, p); err != nil {
		t.Fatal(err)
	}
	parseXML(t, b.Bytes())
	if !strings.Contains(b.String(), `class="jumpback"`) {
		t.Error("no jump-back arrow")
	}
}

func TestCleanWriterSplitsAndReplaces(t *testing.T) {
	in := "é\x01ok\xffend€"
	// every split point: a rune cut between two Writes must survive
	for cut := 0; cut <= len(in); cut++ {
		var out bytesWriter
		cw := &cleanWriter{w: &out}
		cw.Write([]byte(in[:cut]))
		cw.Write([]byte(in[cut:]))
		cw.flush()
		if got, want := string(out), "é\u2401ok\uFFFDend€"; got != want {
			t.Fatalf("cut %d: %q, want %q", cut, got, want)
		}
	}
	if got := Clean("x\xc3"); got != "x\uFFFD" {
		t.Errorf("trailing partial rune: %q", got)
	}
}

func TestAuditHTMLEscapesHostileNames(t *testing.T) {
	b := &ReportBuilder{File: hostile[0], Arch: "x86-64", Policy: hostile[1], Notes: []string{hostile[5]}, AsmLimit: 100,
		RuleDesc: func(string) string { return hostile[1] }}
	for i, n := range hostile {
		b.Add(&FuncRec{Name: n, Addr: uint64(0x1000 + i*16), Size: 16, Lens: []int{1, 15}, Letters: "BX", Rules: []string{"r.a", n}, Asm: []string{n, "ret"}})
	}
	var out bytes.Buffer
	sum := &AuditSummary{Functions: len(hostile), Boundaries: 2 * len(hostile), Verdicts: []Count{{Name: "boost", N: len(hostile)}}}
	if err := AuditHTML(&out, b, sum); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !utf8.ValidString(s) {
		t.Fatal("report is not valid UTF-8")
	}
	// The only script elements are the report's own two.
	if n := strings.Count(s, "<script"); n != 2 {
		t.Errorf("%d <script> elements, want 2 (a name broke out)", n)
	}
	if strings.Contains(s, "<img") || strings.Contains(s, "</script><script>alert") {
		t.Error("hostile markup in the report")
	}
	// The embedded data is JSON that gives the names back as Clean draws them.
	m := regexp.MustCompile(`(?s)<script id="data" type="application/json">(.*?)</script>`).FindStringSubmatch(s)
	if m == nil {
		t.Fatal("no data element")
	}
	var data struct {
		Funcs [][]any  `json:"funcs"`
		Rules []string `json:"rules"`
	}
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatalf("data is not JSON: %v", err)
	}
	if len(data.Funcs) != len(hostile) {
		t.Fatalf("%d functions in the data, want %d", len(data.Funcs), len(hostile))
	}
	for i, f := range data.Funcs {
		if got, want := f[0].(string), Clean(hostile[i]); got != want {
			t.Errorf("name %d: %q, want %q", i, got, want)
		}
	}
}

func TestRuleCharsAreDistinct(t *testing.T) {
	seen := map[string]int{}
	for i := 0; i < 400; i++ {
		c := ruleChar(i)
		if j, ok := seen[c]; ok {
			t.Fatalf("rules %d and %d share %q", i, j, c)
		}
		seen[c] = i
		if strings.ContainsAny(c, "\"\\<>&") {
			t.Fatalf("rule %d: %q needs escaping", i, c)
		}
	}
}

func TestFuncRecRoundTrip(t *testing.T) {
	in := []FuncRec{
		{Name: hostile[0], Addr: 0xffffffff81000000, Size: 3, Lens: []int{1, 2}, Letters: "BS", Rules: []string{"a.b", ""}, Asm: []string{"nop", hostile[4]}},
		{Name: "x\x00y", Err: hostile[5]},
		{},
	}
	var b []byte
	for i := range in {
		b = AppendFuncRec(b, &in[i])
	}
	var got []FuncRec
	if err := ReadFuncRecs(b, func(f *FuncRec) {
		c := *f
		c.Lens = append([]int(nil), f.Lens...)
		c.Rules = append([]string(nil), f.Rules...)
		c.Asm = append([]string(nil), f.Asm...)
		got = append(got, c)
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("%d records, want %d", len(got), len(in))
	}
	for i := range in {
		w, g := in[i], got[i]
		if w.Name != g.Name || w.Addr != g.Addr || w.Size != g.Size || w.Letters != g.Letters || w.Err != g.Err ||
			strings.Join(w.Rules, "|") != strings.Join(g.Rules, "|") || strings.Join(w.Asm, "|") != strings.Join(g.Asm, "|") || len(w.Lens) != len(g.Lens) {
			t.Errorf("record %d: %+v, want %+v", i, g, w)
		}
	}
	for cut := 1; cut < len(b); cut++ {
		// a truncated stream is an error or fewer records, never a panic
		ReadFuncRecs(b[:cut], func(*FuncRec) {})
	}
}

func FuzzReadFuncRecs(f *testing.F) {
	f.Add(AppendFuncRec(nil, &FuncRec{Name: "f", Lens: []int{1}, Letters: "B", Rules: []string{"r"}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		ReadFuncRecs(b, func(*FuncRec) {})
	})
}
