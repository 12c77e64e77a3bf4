package render

// Style is how one verdict (or grid cell kind) is drawn.
type Style struct {
	Class  string // CSS class suffix and data-verdict value
	Letter string
	Fill   string
	Ink    string // text colour on Fill
	Label  string
}

// Styles are the verdicts and cell kinds, in legend order. Fills are the
// Okabe-Ito colours; Ink is chosen for contrast on each.
var Styles = []Style{
	{"boost", "B", "#009E73", "#000000", "boost (slot + jump back)"},
	{"singlestep", "S", "#E69F00", "#000000", "single-step (slot + second trap)"},
	{"emulate", "E", "#56B4E9", "#000000", "emulate (no slot run)"},
	{"ftrace", "F", "#0072B2", "#FFFFFF", "ftrace-based"},
	{"reject", "X", "#D55E00", "#FFFFFF", "refused"},
	{"group", "g", "#F0E442", "#000000", "depends on ModRM.reg"},
	{"prefix", "P", "#BBBBBB", "#000000", "prefix / escape"},
	{"invalid", ".", "#FFFFFF", "#555555", "invalid / unallocated"},
}

var styleByClass = func() map[string]*Style {
	m := map[string]*Style{}
	for i := range Styles {
		m[Styles[i].Class] = &Styles[i]
	}
	return m
}()

var styleByLetter = func() map[string]*Style {
	m := map[string]*Style{}
	for i := range Styles {
		m[Styles[i].Letter] = &Styles[i]
	}
	return m
}()

// StyleOf returns the style of a verdict name ("boost") or kind; unknown names
// draw as invalid.
func StyleOf(class string) *Style {
	if s := styleByClass[class]; s != nil {
		return s
	}
	return styleByClass["invalid"]
}

// LetterClass returns the class of a verdict letter (upper or lower case: a
// lower-case letter is a mixed cell drawn in its majority verdict's colour).
func LetterClass(letter string) string {
	if s := styleByLetter[letter]; s != nil {
		return s.Class
	}
	if len(letter) == 1 && letter[0] >= 'a' && letter[0] <= 'z' {
		if s := styleByLetter[string(letter[0]-'a'+'A')]; s != nil {
			return s.Class
		}
	}
	return "invalid"
}

// VerdictCost is the probe cost each verdict stands for in the audit heat map,
// in traps and copies per hit: ftrace and boost take one trap (or none),
// emulation one trap and the handler's work, single-step two traps; a refused
// point cannot be probed (drawn as the worst).
var VerdictCost = map[string]float64{"ftrace": 1, "boost": 1, "emulate": 1.5, "singlestep": 2, "reject": 3}
