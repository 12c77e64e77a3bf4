// Command pageload opens HTML files in headless Chromium and prints, for
// each, its size, the time from navigation to the end of the load event, and
// the time until the page's script marked it ready (body data-ready), for
// scripts/bench-report.sh.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/internal/browser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pageload FILE.html...")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := browser.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pageload:", err)
		os.Exit(1)
	}
	status := 0
	for _, p := range os.Args[1:] {
		abs, err := filepath.Abs(p)
		if err == nil {
			var st os.FileInfo
			if st, err = os.Stat(abs); err == nil {
				var load time.Duration
				if load, err = b.Load("file://"+abs, 2*time.Minute); err == nil {
					var ready float64
					// performance.now() when the script finished: the script
					// sets data-ready as its last step, before the load event
					ready, err = browser.Eval[float64](b, `document.body.dataset.ready === "1" ? performance.getEntriesByType("navigation")[0].domContentLoadedEventEnd : -1`)
					fmt.Printf("%s: %.1f MB, load event end %.2f s, script done by %.2f s, console errors %d\n",
						p, float64(st.Size())/1e6, load.Seconds(), ready/1000, len(b.Errors()))
				}
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "pageload: %s: %v\n", p, err)
			status = 1
		}
	}
	b.Close() // before os.Exit, which runs no deferred call
	os.Exit(status)
}
