package audit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/kboost/kboost/internal/shard"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/memhint"
	"github.com/kboost/kboost/kimage"
)

// ErrNoFunctions is returned when the selection matches no function.
var ErrNoFunctions = errors.New("no function matches")

// Request is one function (or one point in it) to audit.
type Request struct {
	Sym    kimage.Symbol
	Point  bool   // only the offset Off, not the whole function
	Off    uint64 // with Point
	Symbol string // as the user wrote it
}

// InShard keeps the requests of the shard's functions (by the name's
// stable hash: a function's boundaries all go to one shard).
func InShard(reqs []Request, s shard.Shard) []Request {
	if s.N <= 1 {
		return reqs
	}
	out := reqs[:0]
	for _, r := range reqs {
		if s.HasName(r.Sym.Name) {
			out = append(out, r)
		}
	}
	return out
}

// Select resolves selectors (exact names, glob patterns, NAME+OFF, hex addresses)
// to requests; no selector means every function with code in an executable
// section.
func Select(f *kimage.File, selectors []string) ([]Request, error) {
	if f.Symbols.Len() == 0 {
		return nil, fmt.Errorf("%s has no symbols: give --symbols System.map or a /proc/kallsyms copy taken as root (for a Debian kernel, 'kboost kernel fetch linux-image-amd64' boots it once to get one)", f.Path)
	}
	var reqs []Request
	if len(selectors) == 0 {
		var sec kimage.Section // symbols come in address order: mostly the last one's section
		audited := func(s *kimage.Symbol) bool {
			if s.Module != "" || s.Size == 0 || s.Size > MaxFuncSize || IsMarker(s.Name) {
				return false
			}
			if !sec.Contains(s.Addr) || sec.NoBits {
				var ok bool
				if sec, ok = f.SectionAt(s.Addr); !ok {
					return false
				}
			}
			return sec.Exec
		}
		// Counted first: a request is ~100 bytes, and a kernel has ~100k
		// symbols of which about half are audited functions.
		n := 0
		for s := range f.Symbols.Funcs() {
			if audited(&s) {
				n++
			}
		}
		reqs = make([]Request, 0, n)
		memhint.Prefault(reqs)
		for s := range f.Symbols.Funcs() {
			if audited(&s) {
				reqs = append(reqs, Request{Sym: s, Symbol: s.Name})
			}
		}
		if len(reqs) == 0 {
			return nil, fmt.Errorf("%s: %w (the symbol table has no sized functions in executable sections)", f.Path, ErrNoFunctions)
		}
		return reqs, nil
	}
	for _, sel := range selectors {
		if strings.ContainsAny(sel, "*?[") {
			n := 0
			for s := range f.Symbols.Funcs() {
				if ok, _ := path.Match(sel, s.Name); ok && s.Size > 0 {
					reqs = append(reqs, Request{Sym: s, Symbol: s.Name})
					n++
				}
			}
			if n == 0 {
				return nil, fmt.Errorf("--func %q: %w", sel, ErrNoFunctions)
			}
			continue
		}
		p, err := kimage.ParsePoint(sel)
		if err != nil {
			return nil, err
		}
		addr, sym, off, err := f.Symbols.Resolve(p)
		if err != nil {
			return nil, err
		}
		_ = addr
		reqs = append(reqs, Request{Sym: sym, Point: p.IsAddr || strings.Contains(sel, "+"), Off: off, Symbol: sel})
	}
	return reqs, nil
}

// MaxFuncSize bounds the functions an audit of "all functions" takes: a symbol
// whose inferred size (distance to the next symbol) is larger covers alignment
// padding, not one function (Debian 6.1's largest function is 13 KiB; the gap
// after srso_alias_safe_ret is 1 MiB of int3). Naming it with --func audits it.
const MaxFuncSize = 256 << 10

// IsMarker reports whether a text symbol is a linker or section marker
// (__start_X, __stop_X, __entry_text_end, _etext, ...) rather than a function:
// its inferred size runs to the next symbol and may cover megabytes of other
// code. An audit of "all functions" skips them; naming one explicitly still works.
func IsMarker(name string) bool {
	switch name {
	case "_text", "_stext", "_etext", "_sinittext", "_einittext", "_end", "_edata", "_sdata", "__init_begin", "__init_end", "_sdata_start":
		return true
	}
	for _, p := range []string{"__start_", "__stop_", "__end_", "__bss_", "__per_cpu_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return strings.HasPrefix(name, "__") && (strings.HasSuffix(name, "_start") || strings.HasSuffix(name, "_end") || strings.HasSuffix(name, "_begin"))
}

// Env builds the policy environment for f: configuration (explicit, else the
// file's own, else the policy defaults), special-site tables and ftrace
// locations. notes describe what is unknown.
func Env(f *kimage.File, pol *boost.Policy, cfg *kimage.KConfig) (env *boost.Env, notes []string) {
	env = pol.DefaultEnv()
	if cfg == nil {
		cfg = f.Config
	}
	if cfg != nil {
		env.Config = boost.ConfigFromFunc(cfg.Value)
	} else {
		notes = append(notes, "no kernel config given or found in the file: using the "+pol.Name+" defaults (give --config)")
	}
	env.Mode = f.Arch.Mode
	if !pol.Supports(env.Mode) && len(pol.Modes) > 0 {
		// An EM_ARM file holds ARM and Thumb code: the functions audited
		// are those in the policy's instruction set.
		env.Mode = pol.Modes[0]
	}
	sites := &boost.StaticSites{}
	// The ftrace locations are read while the other tables are.
	type mcount struct {
		locs []uint64
		ok   bool
	}
	mc := make(chan mcount, 1)
	go func() {
		locs, ok := mcountLocs(f)
		mc <- mcount{locs, ok}
	}()
	tabs, err := kimage.KernelTablesCached(f)
	if err != nil {
		notes = append(notes, "kernel tables: "+err.Error())
	}
	if tabs != nil {
		sites.ExTableAddrs = addrTable(&tabs.ExTable)
		sites.Bugs = addrTable(&tabs.Bug)
		sites.JumpLabels = addrTable(&tabs.JumpLabel)
		// static_call_text_reserved (addr_conflict) reserves CALL_INSN_SIZE
		// bytes from each site, whatever the site holds now (a tail site
		// patched to `ret; int3 x4` included).
		sites.StaticCalls = widthTable(&tabs.StaticCall, 5)
		sites.Entry = rangeTable(&tabs.EntryText)
		sites.Init = rangeTable(&tabs.InitText)
		if tabs.Refused != nil {
			sites.Blacklist, sites.BlacklistKnown = refusedRanges(f, tabs)
		} else if tabs.KprobeBlacklist.Known() || tabs.KprobesText.Known() || tabs.NoinstrText.Known() {
			sites.BlacklistKnown = true
			addRanges := func(t *kimage.Table, k boost.BlacklistKind) {
				for _, r := range t.Ranges.Ranges() {
					name := ""
					if s, _, ok := f.Symbols.Lookup(r.Start); ok {
						name = s.Name
					}
					sites.Blacklist = append(sites.Blacklist, boost.BlacklistRange{Span: boost.Span{Start: r.Start, End: r.End}, Kind: k, Symbol: name})
				}
			}
			addRanges(&tabs.KprobeBlacklist, boost.BlacklistSymbol)
			addRanges(&tabs.KprobesText, boost.BlacklistKprobes)
			addRanges(&tabs.NoinstrText, boost.BlacklistNoinstr)
			addRanges(&tabs.IRQEntryText, boost.BlacklistIRQEntry)
			addRanges(&tabs.SoftIRQEntryText, boost.BlacklistIRQEntry)
			sort.Slice(sites.Blacklist, func(i, j int) bool { return sites.Blacklist[i].Start < sites.Blacklist[j].Start })
		}
		var missing []string
		for _, t := range tabs.All() {
			if !t.Known() {
				missing = append(missing, t.Name)
			}
		}
		switch {
		case len(missing) == 0:
		case !isKernel(f):
			notes = append(notes, "not a kernel image: kernel site tables (exception table, BUG, jump labels, blacklist...) do not apply")
		default:
			notes = append(notes, "unknown (table not found; a stripped vmlinux needs --symbols from kallsyms with KALLSYMS_ALL): "+strings.Join(missing, ", "))
		}
	}
	m := <-mc
	switch {
	case tabs != nil && tabs.Ftrace.Name != "" && (tabs.Ftrace.Known() || !m.ok):
		// The architecture's reader locates the ftrace records itself
		// (arm64): in an Image, __mcount_loc holds the functions' addresses
		// only in the addends of its relocations (the raw words read by
		// mcountLocs are not them, even where kallsyms names the bounds), and
		// a record is ftrace_call_adjust of its entry.
		if tabs.Ftrace.Known() {
			sites.FtraceLocs = boost.NewAddrTable(tabs.Ftrace.Addrs.Addrs())
		} else {
			// No table: a function is notrace when its entry lacks the
			// patchable-entry NOPs.
			env.InferNotrace = true
			notes = append(notes, "no ftrace table ("+tabs.Ftrace.Note+"): ftrace sites and notrace are inferred from the bytes at function entry")
		}
		if tabs.CoreText.Known() {
			// core_kernel_text after boot: init text is freed.
			sites.TextRanges = rangeTable(&tabs.CoreText)
		}
	case m.ok:
		sites.FtraceLocs = boost.NewAddrTable(m.locs)
	default:
		notes = append(notes, "no __mcount_loc table: ftrace sites are recognised from the bytes at function entry")
	}
	env.Sites = sites
	if s, ok := f.Symbols.ByName("__fentry__"); ok {
		env.FentryAddr = s.Addr
	}
	if sites.FtraceLocs == nil {
		// No table: judge a base function by its entry bytes, as the audit
		// does for the function itself.
		env.BaseTraced = func(base string) (traced, known bool) {
			s, ok := f.Symbols.ByName(base)
			if !ok {
				return false, true
			}
			if s.Size == 0 {
				return false, false
			}
			b, err := f.ReadAt(s.Addr, int(min(s.Size, 16)))
			if err != nil {
				return false, false
			}
			_, traced = boost.FtraceEntrySite(b, s.Addr, env.FentryAddr)
			return traced, true
		}
	}
	if sites.FtraceLocs != nil {
		ftrace := sites.FtraceLocs
		env.BaseTraced = func(base string) (traced, known bool) {
			s, ok := f.Symbols.ByName(base)
			if !ok {
				// kprobe_lookup_name() fails: within_notrace_func() says notrace.
				return false, true
			}
			if s.Size == 0 {
				return false, false
			}
			return ftrace.Overlaps(boost.Span{Start: s.Addr, End: s.Addr + s.Size})
		}
	}
	if s, ok := f.Symbols.ByName("__indirect_thunk_start"); ok {
		if e, ok := f.Symbols.ByName("__indirect_thunk_end"); ok {
			env.ThunkStart, env.ThunkEnd = s.Addr, e.Addr
		}
	}
	return env, notes
}

// refusedKinds names the blacklist kind of each table an architecture lists
// in Tables.Refused; the others are BlacklistOther.
func refusedKinds(t *kimage.Tables) map[*kimage.Table]boost.BlacklistKind {
	return map[*kimage.Table]boost.BlacklistKind{
		&t.KprobeBlacklist: boost.BlacklistSymbol, &t.KprobesText: boost.BlacklistKprobes,
		&t.NoinstrText: boost.BlacklistNoinstr, &t.EntryText: boost.BlacklistEntry,
		&t.IRQEntryText: boost.BlacklistIRQEntry, &t.SoftIRQEntryText: boost.BlacklistIRQEntry,
	}
}

// refusedRanges is the kprobe blacklist of an architecture that lists it in
// Tables.Refused (arm64), sorted; known is false when one of its tables is
// missing.
func refusedRanges(f *kimage.File, tabs *kimage.Tables) (bl []boost.BlacklistRange, known bool) {
	kinds := refusedKinds(tabs)
	known = true
	for _, t := range tabs.Refused {
		if !t.Known() {
			known = false
			continue
		}
		k, ok := kinds[t]
		if !ok {
			k = boost.BlacklistOther
		}
		for _, r := range t.Ranges.Ranges() {
			name := r.Name
			if s, _, ok := f.Symbols.Lookup(r.Start); ok {
				name = s.Name
			}
			bl = append(bl, boost.BlacklistRange{Span: boost.Span{Start: r.Start, End: r.End}, Kind: k, Symbol: name})
		}
	}
	sort.Slice(bl, func(i, j int) bool { return bl[i].Start < bl[j].Start })
	return bl, known
}

// isKernel reports whether f looks like a Linux kernel image or module.
func isKernel(f *kimage.File) bool {
	if f.Kind != kimage.KindELF || f.KernelVersion != "" {
		return true
	}
	for _, name := range []string{"__ex_table", "__ksymtab", ".modinfo", "__bug_table", ".altinstructions"} {
		if _, ok := f.Section(name); ok {
			return true
		}
	}
	for _, name := range []string{"_stext", "startup_64", "linux_banner"} {
		if _, ok := f.Symbols.ByName(name); ok {
			return true
		}
	}
	return false
}

func addrTable(t *kimage.Table) *boost.SiteTable {
	if !t.Known() {
		return nil
	}
	return boost.NewAddrTable(t.Addrs.Addrs())
}

// widthTable is the table's addresses as spans of n bytes.
func widthTable(t *kimage.Table, n uint64) *boost.SiteTable {
	if !t.Known() {
		return nil
	}
	var spans []boost.Span
	for _, a := range t.Addrs.Addrs() {
		spans = append(spans, boost.Span{Start: a, End: a + n})
	}
	return boost.NewSiteTable(spans)
}

func rangeTable(t *kimage.Table) *boost.SiteTable {
	if !t.Known() {
		return nil
	}
	var spans []boost.Span
	for _, r := range t.Ranges.Ranges() {
		spans = append(spans, boost.Span{Start: r.Start, End: r.End})
	}
	return boost.NewSiteTable(spans)
}

// mcountLocs reads the ftrace call-site table (__mcount_loc: one pointer per
// site) from its section or from __start_mcount_loc/__stop_mcount_loc.
func mcountLocs(f *kimage.File) ([]uint64, bool) {
	var data []byte
	if sec, ok := f.Section("__mcount_loc"); ok {
		d, err := sec.Data()
		if err != nil {
			return nil, false
		}
		data = d
	} else {
		s, ok1 := f.Symbols.ByName("__start_mcount_loc")
		e, ok2 := f.Symbols.ByName("__stop_mcount_loc")
		if !ok1 || !ok2 || e.Addr < s.Addr {
			return nil, false
		}
		d, err := f.ReadAt(s.Addr, int(e.Addr-s.Addr))
		if err != nil {
			return nil, false
		}
		data = d
	}
	ptr := f.Arch.PtrSize
	locs := make([]uint64, 0, len(data)/ptr)
	memhint.Prefault(locs)
	for i := 0; i+ptr <= len(data); i += ptr {
		if ptr == 8 {
			locs = append(locs, binary.LittleEndian.Uint64(data[i:]))
		} else {
			locs = append(locs, uint64(binary.LittleEndian.Uint32(data[i:])))
		}
	}
	if !slices.IsSorted(locs) {
		slices.Sort(locs)
	}
	return locs, true
}

// Result is the audit of one request.
type Result struct {
	Req   Request
	Audit *boost.FuncAudit // valid only during the Handler call
	Err   error
}

// Handler processes results in one worker goroutine and returns the bytes to
// write for it (written in request order). Each worker has its own Handler; the
// bytes are copied before the next call, so a Handler may reuse its buffer.
type Handler func(res *Result) ([]byte, error)

// Run audits every request with the policy on all CPUs. Each worker gets its own
// Handler from newHandler (so formatters and counters need no locks) and reuses
// one boost.Auditor; write receives each request's output in request order.
// maxChunk bounds how many consecutive requests a worker takes at once (0:
// 64); a caller that prints every boundary passes a smaller one, since a
// chunk's output waits in memory until the chunks before it are written.
// write must not keep the slice it is given after it returns: it is reused.
func Run(f *kimage.File, pol *boost.Policy, env *boost.Env, reqs []Request, patch *kimage.Patcher, maxChunk int, newHandler func() Handler, write func([]byte) error) error {
	workers := runtime.GOMAXPROCS(0)
	// Requests go to the workers in chunks of consecutive functions: a kernel
	// has ~50k of them, and a channel hand-off per function would cost more
	// than auditing a small one.
	if maxChunk <= 0 {
		maxChunk = 64
	}
	chunk := len(reqs) / (workers * 64)
	chunk = max(1, min(chunk, maxChunk))
	type chunkOut struct {
		out []byte
		err error
	}
	// Output buffers go back to the workers once written: a whole kernel's
	// JSON is about a gigabyte, and growing a fresh buffer for each chunk
	// allocated several times that.
	free := make(chan []byte, workers*2)
	newWorker := func() func(int, *chunkOut) {
		h := newHandler()
		au := pol.NewAuditor(env)
		var res Result // one per worker: a Handler's pointer would move it to the heap each time
		return func(i int, j *chunkOut) {
			select {
			case j.out = <-free:
			default:
			}
			for _, r := range reqs[i*chunk : min((i+1)*chunk, len(reqs))] {
				res = Result{Req: r}
				res.Audit, res.Err = auditOne(f, au, r, patch)
				out, err := h(&res)
				j.out = append(j.out, out...)
				if err != nil {
					j.err = err
					break
				}
			}
		}
	}
	return ordered((len(reqs)+chunk-1)/chunk, workers, workers*2, newWorker, func(j *chunkOut) error {
		var err error
		if len(j.out) > 0 {
			err = write(j.out)
		}
		select {
		case free <- j.out[:0]:
		default:
		}
		j.out = nil
		if err == nil {
			err = j.err
		}
		return err
	})
}

// File audits every function of f (Select with no selector) under pol in
// the environment Env builds from the file, one at a time in address order,
// and hands each result to each, stopping at the first error each returns.
// It returns Env's notes. Run is the parallel form, with selection and boot
// patching (kimage.Patcher) left to the caller.
func File(f *kimage.File, pol *boost.Policy, each func(*Result) error) (notes []string, err error) {
	reqs, err := Select(f, nil)
	if err != nil {
		return nil, err
	}
	env, notes := Env(f, pol, nil)
	au := pol.NewAuditor(env)
	for _, r := range reqs {
		res := Result{Req: r}
		res.Audit, res.Err = auditOne(f, au, r, nil)
		if err := each(&res); err != nil {
			return notes, err
		}
	}
	return notes, nil
}

func auditOne(f *kimage.File, au *boost.Auditor, r Request, patch *kimage.Patcher) (*boost.FuncAudit, error) {
	size := r.Sym.Size
	if size == 0 {
		return nil, fmt.Errorf("%s: size unknown (give a symbol table with sizes)", r.Sym.Name)
	}
	b, err := f.ReadAt(r.Sym.Addr, int(size))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Sym.Name, err)
	}
	var alts []kimage.A64AltSite
	if patch != nil {
		b = append([]byte(nil), b...)
		alts = patch.PatchSites(r.Sym.Addr, b)
	}
	a, err := au.Audit(boost.Func{Name: r.Sym.Name, Addr: r.Sym.Addr, Size: size, Bytes: b})
	if err == nil && len(alts) > 0 {
		markAlternatives(patch.Alternatives(), a, alts)
	}
	return a, err
}
