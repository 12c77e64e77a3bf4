package render

import "io"

// IndexPage is the explorer's start page: a file's functions.
type IndexPage struct {
	Title    string
	File     string
	Arch     string
	Policy   string
	Policies []string
	Query    string
	Funcs    []Link
	Matches  int
	Links    []Link
}

// ListRow is one instruction boundary of a function listing.
type ListRow struct {
	Off, Addr, Bytes, Asm string
	Class, Letter         string
	Rule, RuleText        string
	Class2, Letter2       string // compared policy
	Rule2                 string
	Differs               bool
	Href                  string
}

// FuncPage is a function listing in the explorer.
type FuncPage struct {
	Title    string
	File     string
	Func     string
	Addr     string
	Policy   string
	Compare  string
	Policies []string
	Tags     []string
	Rows     []ListRow
	Links    []Link
	Styles   []Style
}

// IndexHTML writes the explorer's start page.
func IndexHTML(w io.Writer, p *IndexPage) error { return exec(w, "index", p, false) }

// FuncHTML writes a function listing.
func FuncHTML(w io.Writer, p *FuncPage) error { return exec(w, "func", p, false) }

// ErrorHTML writes an error page.
func ErrorHTML(w io.Writer, title, msg string) error {
	return exec(w, "error", struct{ Title, Msg string }{title, msg}, false)
}
