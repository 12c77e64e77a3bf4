package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// ErrNoChromium: no chromium binary (apt-get install chromium; scripts/setup.sh).
var ErrNoChromium = errors.New("chromium not found (install Debian's chromium: scripts/setup.sh)")

// Browser is one headless Chromium with a fresh profile.
type Browser struct {
	Ctx    context.Context
	cancel []context.CancelFunc
	dir    string
	mu     sync.Mutex
	errs   []string
}

// Path finds the chromium binary.
func Path() (string, error) {
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", ErrNoChromium
}

// Start launches Chromium: headless, no sandbox (it runs as root here), no
// GPU, no network services of its own, a fresh --user-data-dir.
func Start(ctx context.Context) (*Browser, error) {
	path, err := Path()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kboost-chromium-")
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Headless, chromedp.DisableGPU, chromedp.NoSandbox, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1024),
	}
	b := &Browser{dir: dir}
	actx, c1 := chromedp.NewExecAllocator(ctx, opts...)
	bctx, c2 := chromedp.NewContext(actx)
	b.Ctx, b.cancel = bctx, []context.CancelFunc{c2, c1}
	// Start the browser (the first Run does), then read its console.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		b.Close()
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	msgs := chromedp.Console(bctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.errs = append(b.errs, m.String()+" ("+m.URL+")")
				b.mu.Unlock()
			}
		}
	}()
	return b, nil
}

// Close stops the browser, waiting for it to exit (up to 10 s), and removes
// its profile.
func (b *Browser) Close() {
	ctx, cancel := context.WithTimeout(b.Ctx, 10*time.Second)
	chromedp.Cancel(ctx)
	cancel()
	for _, c := range b.cancel {
		c()
	}
	// Chromium's helper processes may still write to the profile for a
	// moment after the browser has gone.
	for try := 0; try < 20; try++ {
		os.RemoveAll(b.dir)
		if _, err := os.Stat(b.dir); os.IsNotExist(err) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Errors returns and clears the console errors and exceptions seen so far.
func (b *Browser) Errors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.errs
	b.errs = nil
	return e
}

// Load navigates to url and waits for the document's load event; it returns
// the time from the start of navigation to the end of the load event (the
// Navigation Timing of the page itself).
func (b *Browser) Load(url string, timeout time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return 0, err
	}
	var ms float64
	var err error
	for try := 0; try < 5; try++ {
		// A poll that starts while the previous document goes away finds no
		// execution context: poll again in the new one.
		ms, err = chromedp.Run(ctx, chromedp.Poll[float64](`(function(){var n=performance.getEntriesByType("navigation")[0];return n&&n.loadEventEnd>0?n.loadEventEnd:0})()`, chromedp.WithPollingInterval(20*time.Millisecond)))
		if err == nil || !strings.Contains(err.Error(), "context") || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Duration(ms * float64(time.Millisecond)), err
}

// Eval evaluates a JavaScript expression and decodes its JSON value.
func Eval[T any](b *Browser, expr string) (T, error) {
	return chromedp.Run(b.Ctx, chromedp.Evaluate[T](expr))
}

// Click clicks the first element matching the CSS selector and waits for
// the selector wait to be visible (after a navigation the click caused).
func (b *Browser) Click(sel, wait string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(b.Ctx, timeout)
	defer cancel()
	return chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel)), chromedp.WaitVisible(chromedp.CSS(wait)))
}

// Screenshot captures the full page as PNG.
func (b *Browser) Screenshot(quality int) ([]byte, error) {
	return chromedp.Run(b.Ctx, chromedp.FullScreenshot(quality))
}
