package render

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// FuncRec is one audited function as the report stores it: per instruction
// boundary its length, verdict letter and deciding rule (and, for small
// reports, its disassembly).
type FuncRec struct {
	Name    string   `json:"n"`
	Addr    uint64   `json:"a"`
	Size    uint64   `json:"z"`
	Lens    []int    `json:"l"`
	Letters string   `json:"v"`
	Rules   []string `json:"r"`
	Asm     []string `json:"m,omitempty"`
	Err     string   `json:"e,omitempty"`
}

// Count is a named count.
type Count struct {
	Name string
	N    int
	Pct  string
}

// AuditSummary is the counts `audit --summary` prints.
type AuditSummary struct {
	Functions, Boundaries, Optimizable, Errors int
	Verdicts, Errnos, Rules                    []Count
}

// Heat is one subsystem (source directory or symbol prefix) of the heat map.
type Heat struct {
	Name       string
	Group      int // index in the page data's groups (-1: by symbol prefix)
	Funcs      int
	Boundaries int
	Cost       float64
	Fill, Ink  string
	Shares     string // "boost 40%, ..." for the hover text
}

// ReportBuilder collects functions for an audit report, in address order of
// arrival. Rule ids are numbered as they come.
type ReportBuilder struct {
	File, Arch, Policy, Config string
	Notes                      []string
	// AsmLimit: listings keep their disassembly while the report holds at
	// most this many boundaries (a whole kernel's text would be hundreds of
	// MB; its report keeps lengths, verdicts and rules).
	AsmLimit int
	RuleDesc func(id string) string
	// Group, when set, is the subsystem of a function by its address (its
	// source directory); ok false: the file does not say. Without it the
	// subsystem is the symbol prefix. GroupBy names the choice on the page,
	// GroupNote says why.
	Group     func(addr uint64) (name string, ok bool)
	GroupBy   string
	GroupNote string
	fgroup    []int // per function, its group's index (with Group)

	ruleIdx  map[string]int
	rules    []string
	funcs    [][]any
	total    int
	asmDrop  bool
	prefixes map[string]*prefixAcc
}

type prefixAcc struct {
	idx      int
	funcs, n int
	count    map[byte]int
	cost     float64
}

const ruleAlpha = "!#$%'()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// costStops is the heat map's colour scale, cheap to refused.
var costStops = [][3]float64{{0, 34, 78}, {65, 77, 107}, {124, 123, 120}, {188, 175, 111}, {253, 231, 55}}

// ruleChar is the one-or-two-byte code of rule number i in a listing: printable
// ASCII without the characters JSON or HTML would escape, then runes from U+0100.
func ruleChar(i int) string {
	if i < len(ruleAlpha) {
		return ruleAlpha[i : i+1]
	}
	return string(rune(0x100 + i - len(ruleAlpha)))
}

// Add adds one function.
func (b *ReportBuilder) Add(f *FuncRec) {
	if b.ruleIdx == nil {
		b.ruleIdx = map[string]int{"": 0}
		b.rules = []string{""}
		b.prefixes = map[string]*prefixAcc{}
	}
	// Names reach the page through JSON, which would keep control
	// characters as escapes: draw them as the other pictures do.
	f.Name, f.Err = Clean(f.Name), Clean(f.Err)
	for i, a := range f.Asm {
		f.Asm[i] = Clean(a)
	}
	var rc strings.Builder
	for _, r := range f.Rules {
		i, ok := b.ruleIdx[r]
		if !ok {
			i = len(b.rules)
			b.ruleIdx[r] = i
			b.rules = append(b.rules, r)
		}
		rc.WriteString(ruleChar(i))
	}
	var lens strings.Builder
	for _, l := range f.Lens {
		lens.WriteByte(byte('0' + min(max(l, 0), 78))) // '0'+1..'0'+15: "1".."?"
	}
	b.total += len(f.Letters)
	rec := []any{f.Name, fmt.Sprintf("%#x", f.Addr), f.Size, lens.String(), f.Letters, rc.String()}
	if f.Err != "" {
		rec = append(rec, nil, f.Err)
	} else if len(f.Asm) > 0 && b.total <= b.AsmLimit {
		rec = append(rec, append([]string(nil), f.Asm...)) // f is the caller's (ReadFuncRecs reuses it)
	} else if len(f.Asm) > 0 {
		b.asmDrop = true
	}
	b.funcs = append(b.funcs, rec)
	p := Prefix(f.Name)
	if b.Group != nil {
		var ok bool
		if p, ok = b.Group(f.Addr); !ok {
			p = NoGroup
		}
		p = Clean(p)
	}
	a := b.prefixes[p]
	if a == nil {
		a = &prefixAcc{idx: len(b.prefixes), count: map[byte]int{}}
		b.prefixes[p] = a
	}
	if b.Group != nil {
		b.fgroup = append(b.fgroup, a.idx)
	}
	a.funcs++
	for i := 0; i < len(f.Letters); i++ {
		c := f.Letters[i]
		a.count[c]++
		a.cost += VerdictCost[LetterClass(string(c))]
		a.n++
	}
}

// NoGroup is the subsystem of the functions the file's line tables do not
// cover (assembly, code built without -g).
const NoGroup = "(no line table)"

// Prefix is the subsystem a symbol belongs to: its first word (leading
// underscores and dots dropped, up to the next '_' or '.').
func Prefix(name string) string {
	s := strings.TrimLeft(name, "_.")
	if i := strings.IndexAny(s, "_."); i > 0 {
		s = s[:i]
	}
	if s == "" {
		return "(none)"
	}
	if len(s) > 24 {
		s = s[:24]
		for !utf8.ValidString(s) && len(s) > 0 {
			s = s[:len(s)-1]
		}
	}
	return s
}

// costColour maps a mean cost (1..3) onto a sequential colour-blind-safe
// scale (cividis-like: blue for cheap, yellow for refused-heavy).
func costColour(c float64) (fill, ink string) {
	stops := costStops
	t := min(max((c-1)/2, 0), 1) * float64(len(stops)-1)
	i := min(int(t), len(stops)-2)
	f := t - float64(i)
	var rgb [3]int
	for k := range rgb {
		rgb[k] = int(stops[i][k] + (stops[i+1][k]-stops[i][k])*f)
	}
	ink = "#FFFFFF"
	if t > 2.2 {
		ink = "#000000"
	}
	return fmt.Sprintf("#%02X%02X%02X", rgb[0], rgb[1], rgb[2]), ink
}

// AuditPage is the report's view model.
type AuditPage struct {
	Title    string
	File     string
	Arch     string
	Policy   string
	Config   string
	Notes    []string
	Summary  AuditSummary
	Heat     []Heat
	HeatMore int
	AsmDrop  bool
	Styles   []Style
	Data     any // template.JS of the function table
	Scale    []Heat
	// GroupBy is what a subsystem is ("source directory (DWARF line
	// tables)", "symbol prefix"), GroupNote why.
	GroupBy, GroupNote string
}

func (b *ReportBuilder) page(sum *AuditSummary) (*AuditPage, []byte, error) {
	p := &AuditPage{Title: "kboost audit: " + filepath.Base(b.File), File: b.File, Arch: b.Arch, Policy: b.Policy, Config: b.Config,
		Notes: b.Notes, Summary: *sum, AsmDrop: b.asmDrop, Styles: Styles}
	var hs []Heat
	for name, a := range b.prefixes {
		if a.n == 0 {
			continue
		}
		h := Heat{Name: name, Group: -1, Funcs: a.funcs, Boundaries: a.n, Cost: a.cost / float64(a.n)}
		if b.Group != nil {
			h.Group = a.idx
		}
		h.Fill, h.Ink = costColour(h.Cost)
		var sh []string
		for _, s := range Styles {
			if n := a.count[s.Letter[0]]; n > 0 {
				sh = append(sh, fmt.Sprintf("%s %.0f%%", s.Class, 100*float64(n)/float64(a.n)))
			}
		}
		h.Shares = strings.Join(sh, ", ")
		hs = append(hs, h)
	}
	sort.Slice(hs, func(i, j int) bool {
		if hs[i].Boundaries != hs[j].Boundaries {
			return hs[i].Boundaries > hs[j].Boundaries
		}
		return hs[i].Name < hs[j].Name
	})
	const maxTiles = 240
	if len(hs) > maxTiles {
		p.HeatMore = len(hs) - maxTiles
		hs = hs[:maxTiles]
	}
	p.Heat = hs
	for c := 1.0; c <= 3.01; c += 0.5 {
		h := Heat{Name: fmt.Sprintf("%.1f", c), Cost: c}
		h.Fill, h.Ink = costColour(c)
		p.Scale = append(p.Scale, h)
	}
	descs := make([]string, len(b.rules))
	if b.RuleDesc != nil {
		for i, r := range b.rules {
			descs[i] = b.RuleDesc(r)
		}
	}
	cost := map[string]float64{}
	for _, s := range Styles {
		cost[s.Letter] = VerdictCost[s.Class]
	}
	fills := map[string]string{}
	for _, s := range Styles {
		fills[s.Letter] = s.Class
	}
	d := map[string]any{"rules": b.rules, "descs": descs, "funcs": b.funcs, "cost": cost,
		"fills": fills, "stops": costStops, "alpha": ruleAlpha}
	p.GroupBy, p.GroupNote = b.GroupBy, b.GroupNote
	if p.GroupBy == "" {
		p.GroupBy = "symbol prefix"
	}
	if b.Group != nil {
		groups := make([]string, len(b.prefixes))
		for name, a := range b.prefixes {
			groups[a.idx] = name
		}
		d["groups"], d["fgroup"] = groups, b.fgroup
	}
	data, err := json.Marshal(d)
	return p, data, err
}
