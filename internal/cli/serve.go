package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/demo"
	"github.com/kboost/kboost/internal/render"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"github.com/spf13/cobra"
)

func newServeCmd(s Streams) *cobra.Command {
	var listen, symsPath, policy string
	cmd := &cobra.Command{
		Use:   "serve [FILE]",
		Short: "A local explorer: browse a binary's functions, click an instruction for its explanation, slot and simulation",
		Long: `Serve an explorer of FILE (an ELF, a Debian kernel .deb, a vmlinuz; without
FILE the embedded demo program) on 127.0.0.1 at a free port, printed on
startup: the functions, each function's listing under a policy (or two,
compared), and for each instruction the pictures of 'kboost explain' and
'kboost sim' (run on the CPU or under qemu-user when clicked), and the opcode
maps. It serves loopback only: --listen takes a loopback address
(127.0.0.1:8080, [::1]:0, localhost:0). Ctrl-C shuts it down.`,
		Example: "  kboost serve\n  kboost serve vmlinux --symbols System.map\n  kboost serve --listen 127.0.0.1:8080 linux-image-6.1.0-NN-amd64_*.deb --symbols kallsyms",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLoopback(listen); err != nil {
				return err
			}
			ex, err := openExplorer(args, symsPath, policy)
			if err != nil {
				return err
			}
			defer ex.f.Close()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("serve: %w (is the port in use? --listen 127.0.0.1:0 picks a free one)", err)
			}
			if err := ex.serve(ctx, ln, s.Out); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return interrupted("serve")
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", "127.0.0.1:0", "loopback address to listen on (port 0: a free port)")
	fl.StringVar(&symsPath, "symbols", "", "System.map or /proc/kallsyms-format file (for a stripped FILE)")
	fl.StringVar(&policy, "policy", "", "the policy listings start with; "+policyUsage)
	return cmd
}

// checkLoopback refuses to serve to other hosts: the explorer has no
// authentication and shows a binary's contents.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: want HOST:PORT, e.g. 127.0.0.1:8080 (%v)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return usagef("--listen %q: kboost serve binds to loopback only (127.0.0.1, ::1, localhost); to reach it from elsewhere, forward a port (ssh -L)", addr)
	}
	return nil
}

// explorer serves one binary.
type explorer struct {
	f        *kimage.File
	arch     *decode.Arch
	policy   *boost.Policy
	policies []string
	funcs    []kimage.Symbol
	patch    *kimage.Patcher
	mu       sync.Mutex
	envs     map[string]*boost.Env
	simMu    sync.Mutex // one simulation at a time: each starts a sandbox
	tmplOnce sync.Once
	tmpl     *loader.OptTemplate // the kernel's optprobe template, when the file has it
}

func openExplorer(args []string, symsPath, policy string) (*explorer, error) {
	var f *kimage.File
	var err error
	if len(args) == 0 {
		if f, err = kimage.OpenBytes(demo.ELF); err == nil {
			f.Path = demo.Name
			if symsPath != "" {
				f.Symbols, err = kimage.LoadSymbols(symsPath)
			}
		}
	} else {
		f, err = openImage(args[0], symsPath)
	}
	if err != nil {
		return nil, err
	}
	ex, err := newExplorer(f, policy)
	if err != nil {
		f.Close()
	}
	return ex, err
}

func newExplorer(f *kimage.File, policy string) (*explorer, error) {
	pol, err := pickPolicy(policy, f.Arch)
	if err != nil {
		return nil, err
	}
	ex := &explorer{f: f, arch: f.Arch, policy: pol, envs: map[string]*boost.Env{}}
	for _, p := range boost.Policies() {
		if p.Supports(f.Arch.Mode) {
			ex.policies = append(ex.policies, p.Name)
		}
	}
	reqs, err := audit.Select(f, nil)
	if err != nil {
		return nil, err
	}
	for _, r := range reqs {
		ex.funcs = append(ex.funcs, r.Sym)
	}
	if p, err := kimage.NewFtraceInitPatcher(f); err == nil {
		ex.patch = p
	}
	return ex, nil
}

func (ex *explorer) serve(ctx context.Context, ln net.Listener, out io.Writer) error {
	srv := &http.Server{Handler: ex.handler(), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "kboost serve: %s (%s, %d functions) at http://%s/ ; Ctrl-C stops\n", render.Clean(ex.f.Path), ex.arch.Name, len(ex.funcs), ln.Addr())
	if w, ok := out.(interface{ Sync() error }); ok {
		w.Sync()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	fmt.Fprintln(out, "kboost serve: interrupted; shut down")
	return err
}

func (ex *explorer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", ex.index)
	mux.HandleFunc("/func", ex.funcPage)
	mux.HandleFunc("/insn", ex.insnPage)
	mux.HandleFunc("/sim", ex.simPage)
	mux.HandleFunc("/opcodes", ex.opcodesPage)
	return securityHeaders(mux)
}

// securityHeaders: the pages need no other origin, and their only scripts are
// their own inline ones.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; form-action 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (ex *explorer) fail(w http.ResponseWriter, code int, err error) {
	w.WriteHeader(code)
	render.ErrorHTML(w, "kboost serve: error", err.Error())
}

func (ex *explorer) pol(r *http.Request, key string) (*boost.Policy, error) {
	name := r.URL.Query().Get(key)
	if name == "" {
		if key != "policy" {
			return nil, nil
		}
		return ex.policy, nil
	}
	return pickPolicy(name, ex.arch)
}

func (ex *explorer) env(pol *boost.Policy) *boost.Env {
	ex.mu.Lock()
	defer ex.mu.Unlock()
	if e := ex.envs[pol.Name]; e != nil {
		return e
	}
	e, _ := audit.Env(ex.f, pol, nil)
	ex.envs[pol.Name] = e
	return e
}

func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	return v.Encode()
}

func (ex *explorer) index(w http.ResponseWriter, r *http.Request) {
	pol, err := ex.pol(r, "policy")
	if err != nil {
		ex.fail(w, http.StatusBadRequest, err)
		return
	}
	query := r.URL.Query().Get("q")
	p := &render.IndexPage{Title: "kboost explorer: " + filepath.Base(ex.f.Path), File: ex.f.Path, Arch: ex.arch.Name, Policy: pol.Name, Policies: ex.policies, Query: query,
		Links: []render.Link{{Text: "opcode map (" + pol.Name + ")", Href: "/opcodes?" + q("policy", pol.Name)}}}
	lq := strings.ToLower(query)
	for _, fn := range ex.funcs {
		if lq != "" && !strings.Contains(strings.ToLower(fn.Name), lq) {
			continue
		}
		p.Matches++
		if len(p.Funcs) < 500 {
			p.Funcs = append(p.Funcs, render.Link{Text: fn.Name, Href: "/func?" + q("addr", fmt.Sprintf("%#x", fn.Addr), "policy", pol.Name)})
		}
	}
	render.IndexHTML(w, p)
}

// auditFunc audits the function at addr under pol and calls fn with it
// (valid during the call).
func (ex *explorer) auditFunc(addr string, pol *boost.Policy, fn func(a *boost.FuncAudit)) error {
	if _, err := strconv.ParseUint(strings.TrimPrefix(addr, "0x"), 16, 64); err != nil || !strings.HasPrefix(addr, "0x") {
		return fmt.Errorf("addr %q: want a hex address such as 0xffffffff81000000", addr)
	}
	reqs, err := audit.Select(ex.f, []string{addr})
	if err != nil {
		return err
	}
	if len(reqs) != 1 {
		return fmt.Errorf("%s: no function", addr)
	}
	reqs[0].Point = false
	var ferr error
	err = audit.Run(ex.f, pol, ex.env(pol), reqs, ex.patch, 1, func() audit.Handler {
		return func(res *audit.Result) ([]byte, error) {
			if res.Err != nil {
				ferr = res.Err
				return nil, nil
			}
			fn(res.Audit)
			return nil, nil
		}
	}, func([]byte) error { return nil })
	if err == nil {
		err = ferr
	}
	return err
}

type listEntry struct {
	off      uint64
	raw      []byte
	asm      string
	decision boost.Decision
}

func (ex *explorer) listing(addr string, pol *boost.Policy) (name string, faddr uint64, tags []string, es []listEntry, err error) {
	fm := decode.NewFormatter(0)
	err = ex.auditFunc(addr, pol, func(a *boost.FuncAudit) {
		name, faddr = a.Func.Name, a.Func.Addr
		if a.FtraceOff >= 0 {
			tags = append(tags, fmt.Sprintf("ftrace site +%#x", a.FtraceOff))
		}
		if a.Notrace && a.NotraceKnown {
			tags = append(tags, "notrace")
		}
		for i := range a.Entries {
			e := &a.Entries[i]
			t := "(bad)"
			if e.DecodeOK {
				t = fm.Format(&e.Inst)
			}
			d := e.Decision
			d.Reasons = append([]boost.Reason(nil), d.Reasons...)
			es = append(es, listEntry{off: e.Off, raw: append([]byte(nil), e.Inst.Bytes()...), asm: t, decision: d})
		}
	})
	return
}

func lastRule(d *boost.Decision) (id, text string) {
	if n := len(d.Reasons); n > 0 {
		return d.Reasons[n-1].Rule, d.Reasons[n-1].Text
	}
	return "", ""
}

func (ex *explorer) funcPage(w http.ResponseWriter, r *http.Request) {
	pol, err := ex.pol(r, "policy")
	if err != nil {
		ex.fail(w, http.StatusBadRequest, err)
		return
	}
	pol2, err := ex.pol(r, "compare")
	if err != nil {
		ex.fail(w, http.StatusBadRequest, err)
		return
	}
	addr := r.URL.Query().Get("addr")
	name, faddr, tags, es, err := ex.listing(addr, pol)
	if err != nil {
		ex.fail(w, http.StatusNotFound, err)
		return
	}
	var es2 []listEntry
	if pol2 != nil {
		if _, _, _, es2, err = ex.listing(addr, pol2); err != nil {
			ex.fail(w, http.StatusNotFound, err)
			return
		}
	}
	p := &render.FuncPage{Title: "kboost explorer: " + name, File: ex.f.Path, Func: name, Addr: fmt.Sprintf("%#x", faddr), Policy: pol.Name,
		Policies: ex.policies, Tags: tags, Styles: render.Styles,
		Links: []render.Link{{Text: "all functions", Href: "/?" + q("policy", pol.Name)}}}
	if pol2 != nil {
		p.Compare = pol2.Name
	}
	for i, e := range es {
		id, text := lastRule(&e.decision)
		row := render.ListRow{Off: fmt.Sprintf("+%#x", e.off), Addr: fmt.Sprintf("%#x", faddr+e.off), Bytes: string(appendHexBytes(nil, e.raw)), Asm: e.asm,
			Class: e.decision.Verdict.String(), Letter: boost.VerdictLetter(e.decision.Verdict), Rule: strings.Join(ruleIDs(e.decision.Reasons), " > "), RuleText: text,
			Href: "/insn?" + q("addr", fmt.Sprintf("%#x", faddr), "off", strconv.FormatUint(e.off, 10), "policy", pol.Name)}
		_ = id
		if i < len(es2) && es2[i].off == e.off {
			d2 := &es2[i].decision
			row.Class2, row.Letter2, row.Rule2 = d2.Verdict.String(), boost.VerdictLetter(d2.Verdict), strings.Join(ruleIDs(d2.Reasons), " > ")
			row.Differs = d2.Verdict != e.decision.Verdict || d2.Errno != e.decision.Errno
		}
		p.Rows = append(p.Rows, row)
	}
	bw := bufio.NewWriter(w)
	render.FuncHTML(bw, p)
	bw.Flush()
}

// insnAt finds the boundary at off of the function at addr; rest is the
// listing from it on.
func (ex *explorer) insnAt(r *http.Request, pol *boost.Policy) (name string, faddr uint64, rest []listEntry, err error) {
	addr := r.URL.Query().Get("addr")
	off, perr := strconv.ParseUint(r.URL.Query().Get("off"), 10, 64)
	if perr != nil {
		return "", 0, nil, fmt.Errorf("off %q: want a decimal offset", r.URL.Query().Get("off"))
	}
	name, faddr, _, es, err := ex.listing(addr, pol)
	if err != nil {
		return "", 0, nil, err
	}
	i := sort.Search(len(es), func(i int) bool { return es[i].off >= off })
	if i == len(es) || es[i].off != off {
		return "", 0, nil, fmt.Errorf("%s+%#x is not an instruction boundary", name, off)
	}
	return name, faddr, es[i:], nil
}

// detour draws the optprobe of an optimizable boundary (rest[0]), from the
// audit's OptLen and the bytes of the instructions it covers; nil otherwise.
func (ex *explorer) detour(pol *boost.Policy, env *boost.Env, faddr uint64, rest []listEntry) *render.Detour {
	d := &rest[0].decision
	if !d.Optimizable || d.OptLen < 5 {
		return nil
	}
	var orig []byte
	for i := 0; i < len(rest) && len(orig) < d.OptLen; i++ {
		orig = append(orig, rest[i].raw...)
	}
	if len(orig) != d.OptLen {
		return nil
	}
	ex.tmplOnce.Do(func() { ex.tmpl = optTemplate(ex.f) })
	return detourPicture(ex.arch, pol, env, ex.tmpl, faddr+rest[0].off, orig, ex.slotAddr()+0x1000)
}

// insnRequest reads the policy and the instruction of an /insn or /sim
// request; ok is false when it answered with an error page.
func (ex *explorer) insnRequest(w http.ResponseWriter, r *http.Request) (pol *boost.Policy, name string, faddr uint64, rest []listEntry, ok bool) {
	pol, err := ex.pol(r, "policy")
	if err != nil {
		ex.fail(w, http.StatusBadRequest, err)
		return nil, "", 0, nil, false
	}
	name, faddr, rest, err = ex.insnAt(r, pol)
	if err != nil {
		ex.fail(w, http.StatusNotFound, err)
		return nil, "", 0, nil, false
	}
	return pol, name, faddr, rest, true
}

func (ex *explorer) insnPage(w http.ResponseWriter, r *http.Request) {
	pol, name, faddr, rest, ok := ex.insnRequest(w, r)
	if !ok {
		return
	}
	e := &rest[0]
	at := faddr + e.off
	var in decode.Inst
	derr := decode.DecodeInto(&in, e.raw, ex.arch.Mode, at)
	env := pol.DefaultEnv()
	env.Mode = ex.arch.Mode
	env.SlotAddr = ex.slotAddr()
	steps, d := pol.Explain(&in, env)
	p := explainPicture(ex.arch, pol, env, &in, derr, steps, &d)
	p.Title = fmt.Sprintf("%s+%#x: %s", name, e.off, asmOf(&in, derr))
	// the audit's verdict at this boundary includes what only the function
	// and the file tell (ftrace site, blacklist, notrace): show it first
	p.Verdict, p.Errno = e.decision.Verdict.String(), ""
	if e.decision.Verdict == boost.Reject {
		p.Errno = e.decision.Errno.String()
	}
	if v := e.decision.Verdict; v != boost.Boost && v != boost.SingleStep {
		p.Slot = nil // the audit's verdict runs no slot here
	}
	for _, rs := range e.decision.Reasons {
		if !containsRule(steps, rs.Rule) {
			p.Rules = append(p.Rules, render.Rule{ID: rs.Rule, Outcome: "audit", Text: rs.Text})
		}
	}
	p.Detour = ex.detour(pol, env, faddr, rest)
	back := "/func?" + q("addr", fmt.Sprintf("%#x", faddr), "policy", pol.Name)
	p.Links = []render.Link{{Text: "back to " + name, Href: back},
		{Text: "simulate this hit", Href: "/sim?" + q("addr", fmt.Sprintf("%#x", faddr), "off", strconv.FormatUint(e.off, 10), "policy", pol.Name)}}
	bw := bufio.NewWriter(w)
	render.ExplainHTML(bw, p)
	bw.Flush()
}

func containsRule(steps []boost.Step, id string) bool {
	for _, s := range steps {
		if s.Rule == id {
			return true
		}
	}
	return false
}

func (ex *explorer) simPage(w http.ResponseWriter, r *http.Request) {
	pol, name, faddr, rest, ok := ex.insnRequest(w, r)
	if !ok {
		return
	}
	e := &rest[0]
	ex.simMu.Lock()
	defer ex.simMu.Unlock()
	rep, err := ex.simulate(pol, e.raw, faddr+e.off)
	if err != nil {
		ex.fail(w, http.StatusInternalServerError, fmt.Errorf("simulating %s+%#x: %w", name, e.off, err))
		return
	}
	p := simPicture(rep)
	p.Title = fmt.Sprintf("%s+%#x: simulated hit", name, e.off)
	env := pol.DefaultEnv()
	env.Mode, env.SlotAddr = ex.arch.Mode, ex.slotAddr()
	if p.Detour = ex.detour(pol, env, faddr, rest); p.Detour != nil {
		p.HitSteps = append(p.HitSteps, fmt.Sprintf("(the steps above are the int3 hit, which is what is simulated.) Once the kprobe optimizer has replaced the int3 with a jmp, a hit takes the detour buffer instead: jmp %s, the template saves the registers and calls the handler, the %d copied bytes run there, and a jmp returns to %s (see \"Optimized probe\" above)", p.Detour.Buffer, p.Detour.OptLen, p.Detour.Resume))
	}
	p.Links = []render.Link{{Text: "back to " + name, Href: "/func?" + q("addr", fmt.Sprintf("%#x", faddr), "policy", pol.Name)}}
	bw := bufio.NewWriter(w)
	render.SimHTML(bw, p)
	bw.Flush()
}

// simulate runs `kboost sim` on the instruction: at its address when the slot
// can reach it, on the CPU (x86) or under qemu-user (ARM).
func (ex *explorer) simulate(pol *boost.Policy, code []byte, at uint64) (*kernelsim.SimReport, error) {
	return kernelsim.Simulate(context.Background(), ex.arch, code, pol, &kernelsim.SimOptions{
		Addr: kernelsim.SimAddr(ex.arch, at), SlotAddr: ex.slotAddr(), Trials: 2, Show: 2, Seed: 1})
}

// slotAddr is where slots are modelled: the module area, as `kboost sim`
// places them.
func (ex *explorer) slotAddr() uint64 {
	return ex.arch.SlotAddr
}

func (ex *explorer) opcodesPage(w http.ResponseWriter, r *http.Request) {
	var pols []*boost.Policy
	pol, err := ex.pol(r, "policy")
	if err == nil {
		pols = append(pols, pol)
		var p2 *boost.Policy
		if p2, err = ex.pol(r, "compare"); p2 != nil {
			pols = append(pols, p2)
		}
	}
	if err != nil {
		ex.fail(w, http.StatusBadRequest, err)
		return
	}
	p, err := gridPage(ex.arch, pols, r.URL.Query().Get("map"))
	if err != nil {
		ex.fail(w, http.StatusBadRequest, err)
		return
	}
	p.Links = []render.Link{{Text: "all functions", Href: "/?" + q("policy", pol.Name)}}
	bw := bufio.NewWriter(w)
	render.GridHTML(bw, p)
	bw.Flush()
}
