// Package browser drives a headless Chromium (Debian's chromium package)
// through chromedp for kboost's picture tests and the report benchmark: it
// starts a fresh browser with a private profile, loads pages, and collects
// every console error and uncaught exception a page raises.
package browser
