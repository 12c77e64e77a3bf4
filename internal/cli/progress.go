package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progress prints a one-line progress indicator on a terminal, and nothing when
// the stream is not a terminal (piped or redirected).
type progress struct {
	w     io.Writer
	what  string
	on    bool
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, what string) *progress {
	p := &progress{w: w, what: what, start: time.Now()}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.on = true
	}
	return p
}

func (p *progress) update(done, total uint64) {
	if !p.on || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	fmt.Fprintf(p.w, "\r%s: %5.1f%% (%s)  ", p.what, pct, time.Since(p.start).Round(100*time.Millisecond))
}

func (p *progress) finish() {
	if p.on && !p.last.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
