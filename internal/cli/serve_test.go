package cli

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kboost/kboost/internal/demo"
	"github.com/kboost/kboost/kimage"
)

// parseXML fails unless doc is well-formed XML (every token read).
func parseXML(t *testing.T, doc string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not valid XML: %v", err)
		}
	}
}

var scriptBody = regexp.MustCompile(`(?s)(<script[^>]*>).*?(</script>)`)

// wellFormedHTML parses page as XML, script bodies left out (the templates
// write void elements self-closed and numeric entities so that they can be
// checked so): every element must be closed, in order, every attribute
// quoted.
func wellFormedHTML(t *testing.T, name, page string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(scriptBody.ReplaceAllString(page, "$1$2")))
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed: %v", name, err)
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 {
		t.Errorf("%s: %d elements left open", name, depth)
	}
}

func TestPictureHTMLWellFormed(t *testing.T) {
	for _, args := range [][]string{
		{"opcodes", "--format", "html"},
		{"opcodes", "--format", "html", "--diff", "linux-6.1,uprobes-x86"},
		{"opcodes", "--arch", "thumb", "--format", "html"},
		{"explain", "--format", "html", "--slot", "0xffffffffa0000000", "48", "8b", "05", "10", "00", "00", "00"},
		{"explain", "--arch", "arm64", "--format", "html", "--words", "d503233f"},
		{"audit", "--format", "html"},
	} {
		out, errs, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		wellFormedHTML(t, strings.Join(args, " "), out)
	}
}

func TestPictureSVGIsXML(t *testing.T) {
	for _, args := range [][]string{
		{"opcodes", "--format", "svg"},
		{"opcodes", "--format", "svg", "--diff", "linux-6.1,linux-6.12", "--map", "0f"},
		{"opcodes", "--arch", "arm64", "--format", "svg"},
		{"opcodes", "--arch", "thumb", "--format", "svg", "--diff", "linux-6.1-thumb,linux-6.1-thumb"},
		{"explain", "--format", "svg", "48", "8b", "05", "10", "00", "00", "00"},
		{"explain", "--arch", "arm64", "--format", "svg", "--slot", "0xffff800008000000", "0xaa0103e0"},
	} {
		out, errs, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		if !strings.HasPrefix(out, "<?xml") || !strings.Contains(out, "<svg") {
			t.Errorf("%v: not an SVG document: %.80q", args, out)
		}
		parseXML(t, out)
	}
}

func TestFormatUsage(t *testing.T) {
	for _, args := range [][]string{
		{"opcodes", "--format", "png"},
		{"opcodes", "--format", "svg", "--json"},
		{"opcodes", "--diff", "linux-6.1,linux-6.12"},
		{"opcodes", "--format", "html", "--diff", "linux-6.1"},
		{"explain", "--format", "pdf", "90"},
		{"audit", "--format", "svg"},
		{"audit", "--format", "html", "--summary"},
		{"serve", "--listen", "0.0.0.0:0"},
		{"serve", "--listen", "192.168.1.2:8080"},
		{"serve", "--listen", ":8080"},
		{"serve", "--listen", "example.com:80"},
	} {
		_, errs, code := run(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line", args, code, errs)
		}
	}
	for _, a := range []string{"127.0.0.1:0", "[::1]:0", "localhost:8080", "127.0.0.2:1"} {
		if err := checkLoopback(a); err != nil {
			t.Errorf("%s: %v", a, err)
		}
	}
}

// hostileSyms renames the demo's functions with names a hostile binary could
// carry.
var hostileNames = []string{
	`<script>alert(1)</script>`, `"><img src=x onerror=alert(2)>`, `'q'&amp;x`, "ctl\x01\x1b[31m\x7f",
	"bad\xff\xfeutf8", `</script><script>alert(3)</script>`, "javascript:alert(4)",
}

func hostileExplorer(t *testing.T) *explorer {
	t.Helper()
	f, err := kimage.OpenBytes(demo.ELF)
	if err != nil {
		t.Fatal(err)
	}
	var syms []kimage.Symbol
	i := 0
	for s := range f.Symbols.Funcs() {
		s.Name = hostileNames[i%len(hostileNames)] + fmt.Sprint(i)
		syms = append(syms, s)
		i++
	}
	if i == 0 {
		t.Fatal("demo has no functions")
	}
	f.Symbols = kimage.NewSymTab(syms)
	ex, err := newExplorer(f, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return ex
}

var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// TestServeEscapesHostileNames crawls the explorer of a binary whose symbol
// names are markup, quotes, control bytes and invalid UTF-8: every page is
// valid UTF-8 with no element or attribute of theirs, and every link works.
func TestServeEscapesHostileNames(t *testing.T) {
	ex := hostileExplorer(t)
	srv := httptest.NewServer(ex.handler())
	defer srv.Close()
	seen := map[string]bool{}
	queue := []string{"/", "/opcodes?policy=linux-6.12&compare=linux-6.1"}
	pages := 0
	for len(queue) > 0 && pages < 60 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] || strings.HasPrefix(u, "/sim") {
			continue // simulation: TestServeSim
		}
		seen[u] = true
		resp, err := http.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		pages++
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d: %.300s", u, resp.StatusCode, body)
			continue
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: CSP %q", u, csp)
		}
		s := string(body)
		wellFormedHTML(t, u, s)
		if !utf8.ValidString(s) {
			t.Errorf("%s: not valid UTF-8", u)
		}
		for _, bad := range []string{"<script>alert", "<img", "</script><script>", "\x01", "\x1b", "\x7f", `href="javascript:`} {
			if strings.Contains(s, bad) {
				t.Errorf("%s: contains %q", u, bad)
			}
		}
		if strings.Contains(s, "<script") {
			t.Errorf("%s: a script element in an explorer page", u)
		}
		for _, m := range hrefRE.FindAllStringSubmatch(s, -1) {
			h := strings.ReplaceAll(m[1], "&amp;", "&")
			if strings.HasPrefix(h, "/") {
				queue = append(queue, h)
			}
		}
	}
	var funcs, insns int
	for u := range seen {
		if strings.HasPrefix(u, "/func") {
			funcs++
		}
		if strings.HasPrefix(u, "/insn") {
			insns++
		}
	}
	if funcs < 3 || insns < 10 {
		t.Errorf("crawled %d function and %d instruction pages", funcs, insns)
	}
	// a hostile name shows as text
	resp, err := http.Get(srv.URL + "/?q=" + url.QueryEscape("<script>"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "&lt;script&gt;alert(1)&lt;/script&gt;0") {
		t.Errorf("search for <script>: the name is not shown escaped:\n%s", body)
	}
}

func TestServeBadRequests(t *testing.T) {
	ex := hostileExplorer(t)
	srv := httptest.NewServer(ex.handler())
	defer srv.Close()
	for _, u := range []string{"/func?addr=zz", "/func?addr=0x1", "/insn?addr=0x401000&off=x", "/?policy=nope", "/nothing"} {
		resp, err := http.Get(srv.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("%s: status %d, want 4xx", u, resp.StatusCode)
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// TestServeSIGINT runs `kboost serve` as the command runs it, fetches a page
// and sends SIGINT: it shuts down, returns 0, and the port is closed.
func TestServeSIGINT(t *testing.T) {
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errb strings.Builder
	go func() {
		code := Main([]string{"serve"}, strings.NewReader(""), pw, &errb)
		pw.Close()
		done <- code
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no start line; stderr %q", errb.String())
	}
	m := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/`).FindStringSubmatch(sc.Text())
	if m == nil {
		t.Fatalf("start line %q: no loopback URL", sc.Text())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	resp, err := http.Get("http://" + m[1] + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != ExitInterrupted {
			t.Errorf("exit %d after SIGINT, want 130: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10 s of SIGINT")
	}
	if _, err := http.Get("http://" + m[1] + "/"); err == nil {
		t.Error("still serving after shutdown")
	}
}
