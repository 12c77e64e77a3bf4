package render

import (
	"bytes"
	"embed"
	"html/template"
	"io"
)

//go:embed tmpl/*.tmpl
var tmplFS embed.FS

var tmpl *template.Template

func init() {
	tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"add": func(a ...int) int {
			s := 0
			for _, x := range a {
				s += x
			}
			return s
		},
		"sub":    func(a, b int) int { return a - b },
		"mul":    func(a, b int) int { return a * b },
		"half":   func(a int) int { return a / 2 },
		"inc":    func(a int) int { return a + 1 },
		"fill":   func(c string) string { return StyleOf(c).Fill },
		"ink":    func(c string) string { return StyleOf(c).Ink },
		"letter": func(c string) string { return StyleOf(c).Letter },
		"styles": func() []Style { return Styles },
		"policyForm": func(p *FuncPage) map[string]any {
			return map[string]any{"Hidden": map[string]string{"addr": p.Addr}, "Policy": p.Policy, "Policies": p.Policies,
				"Compare": true, "CompareWith": p.Compare}
		},
		"svg": func(p *GridPage) (template.HTML, error) { return execHTML("gridsvg", layout(p)) },
		"drawInst": func(in Inst) (template.HTML, error) {
			return execHTML("draw", instDrawing(&in))
		},
		"drawSlot":   func(s *Slot) (template.HTML, error) { return execHTML("draw", slotDrawing(s)) },
		"drawDetour": func(d *Detour) (template.HTML, error) { return execHTML("draw", detourDrawing(d)) },
	}).ParseFS(tmplFS, "tmpl/*.tmpl"))
}

// execHTML runs a sub-template into a string for inclusion: its output was
// escaped by html/template already.
func execHTML(name string, data any) (template.HTML, error) {
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, name, data); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // escaped by the template
}

func exec(w io.Writer, name string, data any, xmlDecl bool) error {
	cw := &cleanWriter{w: w}
	if xmlDecl {
		if _, err := io.WriteString(cw, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"); err != nil {
			return err
		}
	}
	if err := tmpl.ExecuteTemplate(cw, name, data); err != nil {
		return err
	}
	if _, err := io.WriteString(cw, "\n"); err != nil {
		return err
	}
	return cw.flush()
}

// GridSVG writes the page's grids as one SVG document.
func GridSVG(w io.Writer, p *GridPage) error { return exec(w, "gridsvg", layout(p), true) }

// GridHTML writes the page's grids as one HTML page.
func GridHTML(w io.Writer, p *GridPage) error { return exec(w, "opcodes", p, false) }

// ExplainHTML writes `kboost explain` as an HTML page.
func ExplainHTML(w io.Writer, p *ExplainPage) error { return exec(w, "explain", p, false) }

// SimHTML writes `kboost sim` as an HTML page.
func SimHTML(w io.Writer, p *SimPage) error { return exec(w, "sim", p, false) }

// InstSVG writes the instruction's fields and, when it has one, its slot as
// one SVG document.
func InstSVG(w io.Writer, p *ExplainPage) error {
	ds := []*drawing{instDrawing(&p.Inst)}
	if p.Slot != nil && p.Slot.Refused == "" && len(p.Slot.Bytes) > 0 {
		ds = append(ds, slotDrawing(p.Slot))
	}
	st := stack{Title: p.Title}
	for _, d := range ds {
		st.Parts = append(st.Parts, stackPart{Y: st.H, D: d})
		st.H += d.H + 10
		st.W = max(st.W, d.W)
	}
	return exec(w, "stack", &st, true)
}

type stack struct {
	Title string
	W, H  int
	Parts []stackPart
}

type stackPart struct {
	Y int
	D *drawing
}

// AuditHTML writes the audit report.
func AuditHTML(w io.Writer, b *ReportBuilder, sum *AuditSummary) error {
	p, data, err := b.page(sum)
	if err != nil {
		return err
	}
	p.Data = template.JS(data) //nolint:gosec // json.Marshal escapes <, > and &
	return exec(w, "audit", p, false)
}
