package render

// Grid is one opcode map or encoding space.
type Grid struct {
	Title     string
	Note      string
	RowLabels []string
	RowNames  []string // optional, drawn right of the row
	ColLabels []string
	// ColGroups, when set, label groups of len(ColLabels)/len(ColGroups)
	// columns above ColLabels.
	ColGroups []string
	Cells     [][]Cell // [row][col]
}

// Cell is one grid cell.
type Cell struct {
	Key     string // stable id (data-key), e.g. "one:48" or "a64:3:17"
	Class   string // a Styles class: the colour
	Letter  string // what the cell shows (readable without colour)
	Title   string // hover text: opcode, mnemonic, verdict, rule id and text
	Verdict string // data-verdict (the JSON's verdict; "" for prefix/invalid)
	// Diff view: the second policy's class and letter; Differs marks the cell.
	Class2, Letter2 string
	Differs         bool
}

// GridPage is a page of grids under one policy, or a comparison of two.
type GridPage struct {
	Title    string
	Subtitle string
	Policy   string
	Policy2  string // set for a --diff page
	Grids    []Grid
	Extra    []Table // tables under the grids (group rows, class counts)
	Links    []Link
}

// Table is a small table of text.
type Table struct {
	Title string
	Head  []string
	Rows  [][]string
}

const (
	cellW   = 30
	cellH   = 26
	labelW  = 40
	headH   = 34
	titleH  = 24
	nameW   = 210
	gridGap = 26
)

// svgGrid is a Grid with its geometry.
type svgGrid struct {
	*Grid
	Y, W, H    int
	CellW      int
	CellH      int
	X0, Y0     int // origin of cell (0,0)
	Diff       bool
	GroupW     int
	Names      bool
	NameX      int
	ColLabelY  int
	ColGroupY  int
	TitleY     int
	TitleX     int
	LegendRows []svgLegend
}

type svgLegend struct {
	X, Y int
	S    Style
}

type svgDoc struct {
	W, H   int
	Grids  []svgGrid
	Legend []svgLegend
	LegY   int
	NoteY  int
	Diff   bool
	Title  string
	P1, P2 string
}

func layout(p *GridPage) *svgDoc {
	d := &svgDoc{Diff: p.Policy2 != "", Title: p.Title, P1: p.Policy, P2: p.Policy2}
	y := 0
	cw := cellW
	if d.Diff {
		cw = 40
	}
	for i := range p.Grids {
		g := &p.Grids[i]
		cols := len(g.ColLabels)
		sg := svgGrid{Grid: g, Y: y, CellW: cw, CellH: cellH, Diff: d.Diff, Names: len(g.RowNames) > 0}
		lw := labelW
		for _, l := range g.RowLabels {
			lw = max(lw, 8*len(l)+10)
		}
		sg.TitleY = y + 17
		sg.TitleX = 2
		top := y + titleH
		if len(g.ColGroups) > 0 {
			sg.ColGroupY = top + 12
			sg.GroupW = cols / len(g.ColGroups) * cw
			top += 16
		}
		sg.ColLabelY = top + 13
		sg.X0, sg.Y0 = lw, top+18
		sg.W = lw + cols*cw
		if sg.Names {
			sg.NameX = sg.W + 8
			sg.W += nameW
		}
		sg.H = sg.Y0 - y + len(g.Cells)*cellH
		y += sg.H + gridGap
		d.W = max(d.W, sg.W)
		d.Grids = append(d.Grids, sg)
	}
	d.LegY = y
	x := 0
	const legW = 270 // the longest label is ~32 characters of 11px text
	for _, s := range Styles {
		if x+legW > max(d.W, 2*legW) {
			x = 0
			y += 22
		}
		d.Legend = append(d.Legend, svgLegend{X: x, Y: y, S: s})
		x += legW
	}
	d.H = y + 26
	if d.Diff {
		d.NoteY = y + 34
		d.H += 22
	}
	d.W = max(d.W, 2*legW) + 4
	return d
}

// CellX and CellY place a cell.
func (g svgGrid) CellX(c int) int { return g.X0 + c*g.CellW }
func (g svgGrid) CellY(r int) int { return g.Y0 + r*g.CellH }
