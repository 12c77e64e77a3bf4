package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/demo"
	"github.com/kboost/kboost/internal/memhint"
	"github.com/kboost/kboost/internal/recordio"
	"github.com/kboost/kboost/internal/shard"
	"github.com/kboost/kboost/kimage"
	"github.com/spf13/cobra"
)

type auditOpts struct {
	funcs      []string
	symsPath   string
	policy     string
	configPath string
	jsonOut    bool
	summary    bool
	preempt    ynFlag
	post       bool
	returns    string
	cpuCaps    string
	cpu        string
	cpuFlags   string
	cpuFeats   string
	shard      string
	format     string
}

func newAuditCmd(s Streams) *cobra.Command {
	var o auditOpts
	cmd := &cobra.Command{
		Use:   "audit [FILE]",
		Short: "Verdict for every instruction boundary of a binary's functions",
		Long: `Audit every instruction boundary of the chosen functions (all by default) under
a kernel policy: reject (with the kernel's errno), ftrace, emulate, singlestep or
boost, whether an optprobe may cover it, and the rules behind each answer.

FILE is an ELF (vmlinux, .ko, executable), a Debian kernel .deb or a vmlinuz.
Without FILE kboost audits its embedded demo program (kernel-style code).`,
		Example: `  kboost audit
  kboost audit vmlinux --symbols System.map --func vfs_read
  kboost audit vmlinux --symbols System.map --func vfs_read+0x1a --json
  kboost audit linux-image-6.1.0-NN-amd64_*.deb --symbols kallsyms --summary`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAudit(s, o, args)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&o.funcs, "func", nil, "function NAME, glob (\"vfs_*\"), NAME+OFF or hex address; repeatable")
	fl.StringVar(&o.symsPath, "symbols", "", "System.map or /proc/kallsyms-format file (for a stripped FILE)")
	fl.StringVar(&o.policy, "policy", "", policyUsage)
	fl.StringVar(&o.configPath, "config", "", "kernel .config or config.gz (default: the one in FILE, else the policy's defaults)")
	fl.BoolVar(&o.jsonOut, "json", false, "one JSON object per instruction boundary")
	fl.BoolVar(&o.summary, "summary", false, "only counts per verdict and per rule")
	ynVar(fl, &o.preempt, "preemption", preemptionUsage)
	fl.BoolVar(&o.post, "post-handler", false, "the probe has a post_handler (never boosted nor optimized)")
	fl.StringVar(&o.returns, "returns", "thunk", "return thunks at run time: 'thunk' (bytes as in the file: the CPU needs the\nretbleed/SRSO return thunk) or 'ret' (apply_returns() patched each\n`jmp __x86_return_thunk` to `ret; int3`: CPUs without that mitigation)")
	fl.StringVar(&o.shard, "shard", "", "audit only part K of N (K/N, counting from 0): the functions whose name hashes to K;\nthe N outputs together are the whole audit (see 'kboost merge')")
	addFormatFlag(fl, &o.format, "text or html (one self-contained report: counts, heat maps, searchable functions, listings)", "text", "html")
	fl.StringVar(&o.cpuCaps, "cpu-caps", "none", "arm64 Image: the cpucaps (arch/arm64/tools/cpucaps names, comma-separated, e.g.\nWORKAROUND_DEVICE_LOAD_ACQUIRE,HAS_LSE_ATOMICS, or the descriptions the kernel logs,\ne.g. 'ARM erratum 832075', or a dmesg FILE whose \"CPU features: detected:\" lines name them)\nwhose CPU alternatives the kernel applied at boot; 'none' applies only\nALWAYS_BOOT/ALWAYS_SYSTEM, which every CPU has")
	fl.StringVar(&o.cpuFeats, "cpu-features", "", "arm64 Image: a kernel log FILE (dmesg) of the machine; its \"CPU features: detected:\" lines name\nthe cpucaps whose alternatives the kernel applied (as --cpu-caps FILE); a note for other kernels")
	fl.StringVar(&o.cpu, "cpu", "", "x86-64 kernel: the machine it boots on, whose boot-time text patching the audit applies\n(ftrace NOPs, paravirt calls, alternatives, UP LOCK prefixes, return thunks): qemu64\n(QEMU's default CPU under TCG, one CPU, as 'kboost vm verify' boots: its /proc/cpuinfo\nflags, as --cpu-flags); a note for other kernels")
	fl.StringVar(&o.cpuFlags, "cpu-flags", "", "x86-64 kernel: the CPU it boots on as /proc/cpuinfo names it, for the same boot-time\npatching as --cpu: a FILE holding /proc/cpuinfo (its flags and bugs lines; a copy from the\nmachine, or /proc/cpuinfo itself) or a LIST of flag names separated by commas or spaces\n(fpu,sse2,smap); names the kernel's cpufeatures.h does not know are a note; a note for other kernels")
	return cmd
}

func runAudit(s Streams, o auditOpts, args []string) error {
	// Set-up (symbols, requests, site tables: ~30 MB for a kernel) allocates
	// what the audit keeps to its end: collecting garbage meanwhile finds
	// none and only slows it (three cycles, with allocation assists, in the
	// serial part of a whole-kernel audit). The collector runs again, as
	// configured (GOGC), once the audit starts.
	gcPercent := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(gcPercent)
	if err := checkFormat(o.format, o.jsonOut || o.summary, "text", "html"); err != nil {
		return err
	}
	sh, err := parseShard(o.shard)
	if err != nil {
		return err
	}
	file := ""
	if len(args) > 0 {
		file = args[0]
	}
	as, err := prepareAudit(o, file, o.policy, sh)
	if err != nil {
		return err
	}
	defer as.f.Close()
	f, pol, env, notes, reqs, patch := as.f, as.pol, as.env, as.notes, as.reqs, as.patch
	w := recordio.NewWriter(s.Out, 1<<16)
	defer w.Flush()
	var rep *auditReport
	if o.format == "html" {
		rep = newAuditReport(f, pol.Name, strings.Join(env.Config.Flags(), " "), notes, len(reqs))
	}
	if !o.jsonOut && rep == nil {
		fmt.Fprintf(w, "# %s: %s, policy %s, config: %s\n", f.Path, f.Arch.Name, pol.Name, strings.Join(env.Config.Flags(), " "))
		for _, n := range notes {
			fmt.Fprintf(w, "# note: %s\n", n)
		}
	}
	// Ctrl-C stops the workers at their next function; what was audited is
	// written (and summarised with --summary), then the exit status is 130.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	prog := newProgress(s.Err, "audit")
	var (
		mu   sync.Mutex
		sums []*summary
		done atomic.Int64
	)
	newHandler := func() audit.Handler {
		sum := newSummary()
		mu.Lock()
		sums = append(sums, sum)
		mu.Unlock()
		fm := decode.NewFormatter(0)
		var buf []byte
		return func(res *audit.Result) ([]byte, error) {
			if ctx.Err() != nil {
				return nil, ErrInterrupted
			}
			done.Add(1)
			if res.Err != nil {
				sum.errors++
				if len(reqs) == 1 {
					return nil, res.Err
				}
				if rep != nil {
					return rep.errRecord(nil, res.Req.Symbol, res.Err), nil
				}
				if o.jsonOut && !o.summary {
					b := appendRecordHead(nil, f.Arch.Mode, pol)
					b = append(b, `,"func":`...)
					b = strconv.AppendQuote(b, res.Req.Symbol)
					b = append(b, `,"error":`...)
					b = strconv.AppendQuote(b, res.Err.Error())
					return append(b, "}\n"...), nil
				}
				if !o.summary {
					return []byte(fmt.Sprintf("# error: %v\n", res.Err)), nil
				}
				return nil, nil
			}
			a := res.Audit
			sum.funcs++
			if res.Req.Point {
				d, err := a.At(res.Req.Off)
				if errors.Is(err, boost.ErrOffset) { // names the point already
					return nil, &UsageError{Msg: err.Error() + "; give an offset inside it"}
				}
				if err != nil {
					return nil, fmt.Errorf("%s: %w", res.Req.Symbol, err)
				}
				sum.add(&d)
				if rep != nil {
					return rep.record(buf[:0], a, fm, entryAt(a, res.Req.Off), &d), nil
				}
				if o.summary {
					return nil, nil
				}
				return formatPoint(nil, a, res.Req.Off, entryAt(a, res.Req.Off), &d, fm, o.jsonOut), nil
			}
			for i := range a.Entries {
				sum.add(&a.Entries[i].Decision)
			}
			if rep != nil {
				buf = rep.record(buf[:0], a, fm, nil, nil)
				return buf, nil
			}
			if o.summary {
				return nil, nil
			}
			buf = formatFunc(buf[:0], a, fm, o.jsonOut)
			return buf, nil
		}
	}
	// Printed output waits in memory until the chunks before it are written:
	// smaller chunks when every boundary is printed (a whole kernel's text
	// or JSON is about a gigabyte).
	maxChunk := 16
	if o.summary || rep != nil {
		maxChunk = 0
	} else if os.Getenv("GOGC") == "" {
		// The printing workers allocate little (their buffers are reused)
		// but keep ~35 MB live for a kernel: collecting at 50% growth
		// instead of 100% costs a few more cycles and keeps the peak
		// ~20 MB lower.
		gcPercent = 50
	}
	debug.SetGCPercent(gcPercent)
	err = audit.Run(f, pol, env, reqs, patch, maxChunk, newHandler, func(b []byte) error {
		prog.update(uint64(done.Load()), uint64(len(reqs)))
		if rep != nil {
			return rep.write(b)
		}
		_, err := w.Write(b)
		return err
	})
	prog.finish()
	stopped := errors.Is(err, ErrInterrupted)
	if err != nil && !stopped {
		return err
	}
	if o.summary || rep != nil {
		total := newSummary()
		total.arch, total.policy = f.Arch.Name, pol.Name
		for _, x := range sums {
			total.merge(x)
		}
		if rep != nil {
			if err := rep.finish(w, total); err != nil {
				return err
			}
			return w.Flush()
		}
		total.write(w, o.jsonOut, time.Since(start), notes)
	}
	if stopped {
		if err := w.Flush(); err != nil {
			return err
		}
		return interrupted(fmt.Sprintf("audit: %d of %d functions audited", done.Load(), len(reqs)))
	}
	return w.Flush()
}

// auditSetup is a file made ready to audit: its policy (with the note on
// how it was chosen), environment, boot-time patcher and the functions.
type auditSetup struct {
	f     *kimage.File
	pol   *boost.Policy
	env   *boost.Env
	notes []string
	reqs  []audit.Request
	patch *kimage.Patcher
}

// prepareAudit opens file (the embedded demo when empty) and sets it up for
// an audit under policy (chosen by the kernel's version when empty) with
// o's configuration, functions and patching. The caller closes f.
func prepareAudit(o auditOpts, file, policy string, sh shard.Shard) (_ *auditSetup, err error) {
	for _, in := range [][2]string{{"--symbols", o.symsPath}, {"--config", o.configPath}} {
		if in[1] != "" {
			if err := inputFile(in[0], in[1]); err != nil {
				return nil, err
			}
		}
	}
	var f *kimage.File
	if file == "" {
		f, err = kimage.OpenBytes(demo.ELF)
		if err == nil {
			f.Path = demo.Name
		}
	} else {
		f, err = openImage(file, o.symsPath)
	}
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	if file == "" && o.symsPath != "" {
		if f.Symbols, err = kimage.LoadSymbols(o.symsPath); err != nil {
			return nil, err
		}
	}
	pol, polNote, err := pickFilePolicy(policy, f)
	if err != nil {
		return nil, err
	}
	if policy == "" {
		if p, n, ok := spanPolicy(f, o.funcs); ok {
			pol, polNote = p, n
		}
	}
	var cfg *kimage.KConfig
	if o.configPath != "" {
		if cfg, err = kimage.LoadKConfig(o.configPath); err != nil {
			return nil, err
		}
	}
	for _, sel := range o.funcs {
		if !strings.ContainsAny(sel, "*?[") {
			if _, err := kimage.ParsePoint(sel); err != nil {
				return nil, usagef("--func %q: %v", sel, err)
			}
		} else if _, err := path.Match(sel, ""); err != nil {
			return nil, usagef("--func %q: bad glob (%v)", sel, err)
		}
	}
	// Choosing the functions, reading the code and building the site tables are
	// independent: do them at the same time.
	var (
		reqs     []audit.Request
		archNote string
		selErr   error
		selDone  = make(chan struct{})
	)
	go func() {
		defer close(selDone)
		if reqs, selErr = audit.Select(f, o.funcs); selErr == nil {
			reqs, archNote = keepPolicyArch(f, pol, reqs)
			reqs = audit.InShard(reqs, sh)
			prefetchCode(f, reqs)
		}
	}()
	env, notes := audit.Env(f, pol, cfg)
	if polNote != "" {
		notes = append([]string{polNote}, notes...)
	}
	<-selDone
	if archNote != "" {
		notes = append(notes, archNote)
	}
	o.preempt.apply(&env.Config.Preemption)
	env.Config.PostHandler = o.post
	if selErr != nil {
		// a selector that names nothing in the file is the caller's mistake
		if len(o.funcs) > 0 && (errors.Is(selErr, kimage.ErrNoSymbol) || errors.Is(selErr, audit.ErrNoFunctions)) {
			return nil, &UsageError{Msg: selErr.Error() + " (names come from the file's symbols or --symbols; globs such as 'vfs_*' match several)"}
		}
		return nil, selErr
	}
	var patch *kimage.Patcher
	returns := o.returns
	cpu, cpuNotes, err := x86CPUOption(o, f)
	if err != nil {
		return nil, err
	}
	notes = append(notes, cpuNotes...)
	if cpu != nil {
		p, n, err := kimage.NewX86BootPatcher(f, *cpu)
		if err != nil {
			return nil, err
		}
		patch, returns = p, ""
		notes = append(notes, n)
	}
	featNotes, err := a64CPUFeaturesOption(&o, f)
	if err != nil {
		return nil, err
	}
	notes = append(notes, featNotes...)
	switch returns {
	case "":
	case "thunk":
		if _, ok := f.Section(".return_sites"); ok {
			notes = append(notes, "return thunks kept as in the file (--returns thunk); on a CPU without retbleed/SRSO mitigation the kernel patches them to ret at boot: --returns ret")
		}
		// Kernels whose ftrace records sit after an entry NOP that
		// ftrace_init_nop rewrites at boot (arm64): audit the booted bytes.
		if p, err := kimage.NewFtraceInitPatcher(f); err == nil {
			patch = p
			n := fmt.Sprintf("boot patching: the first patchable-entry NOP of the %d functions with an ftrace record is `mov x9, x30`, as ftrace_init_nop writes it", kimage.CountPatchedWords(p))
			if ops := kimage.FtraceOpsLiteral(p); ops != 0 {
				n += fmt.Sprintf(", and the two NOPs before each such function hold &ftrace_nop_ops (%#x)", ops)
			}
			notes = append(notes, n)
			caps := o.cpuCaps
			if fileExists(caps) { // a kernel log: its "CPU features: detected:" lines
				b, err := os.ReadFile(caps)
				if err != nil {
					return nil, err
				}
				caps = string(b)
			}
			if n, err := audit.SetCPUCaps(p, f, caps); err == nil {
				notes = append(notes, n)
			} else if !strings.EqualFold(strings.TrimSpace(o.cpuCaps), "none") {
				return nil, err
			} else {
				notes = append(notes, "CPU alternatives not applied (bytes as in the file): "+err.Error())
			}
		}
	case "ret":
		if patch, err = kimage.NewReturnPatcher(f); errors.Is(err, kimage.ErrNoReturnSites) {
			notes = append(notes, "--returns ret: "+err.Error()+" (the option does not apply)")
		} else if err != nil {
			return nil, err
		}
	default:
		return nil, usagef("--returns %q: want thunk or ret", o.returns)
	}
	if !strings.EqualFold(strings.TrimSpace(o.cpuCaps), "none") && kimage.CountAlternatives(patch) == 0 {
		return nil, usagef("--cpu-caps: %s has no arm64 CPU alternatives to apply (an arm64 Image with --symbols kallsyms, and --returns thunk)", f.Path)
	}
	return &auditSetup{f: f, pol: pol, env: env, notes: notes, reqs: reqs, patch: patch}, nil
}

// prefetchCode reads the sections holding the requested functions (kimage
// reads a section on first use, and maps a mapped file's pages on first
// touch: one page fault each) so that the workers start on loaded code.
func prefetchCode(f *kimage.File, reqs []audit.Request) {
	var last kimage.Section
	for _, r := range reqs {
		if last.Size != 0 && last.Contains(r.Sym.Addr) {
			continue
		}
		if sec, ok := f.SectionAt(r.Sym.Addr); ok {
			if b, err := sec.Data(); err == nil {
				memhint.PrefaultRead(b)
			}
			last = sec
		}
	}
}

// pickPolicy finds --policy NAME for code of arch; "" is the arch's default
// (boost.DefaultPolicy).
func pickPolicy(name string, arch *decode.Arch) (*boost.Policy, error) {
	if name == "" {
		if p := boost.DefaultPolicy(arch); p != nil {
			return p, nil
		}
		return nil, usagef("no policy models %s code (see 'kboost policies')", arch.Name)
	}
	pol, err := boost.Lookup(name)
	if err != nil {
		return nil, &UsageError{err.Error()}
	}
	if !pol.Supports(arch.Mode) {
		return nil, usagef("policy %s does not model %s code (see 'kboost policies')", pol.Name, arch.Name)
	}
	return pol, nil
}

func entryAt(a *boost.FuncAudit, off uint64) *boost.Entry {
	i := sort.Search(len(a.Entries), func(i int) bool { return a.Entries[i].Off >= off })
	if i < len(a.Entries) && a.Entries[i].Off == off {
		return &a.Entries[i]
	}
	return nil
}

func ruleIDs(rs []boost.Reason) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.Rule
	}
	return ids
}

func appendJSONStrings(buf []byte, ss []string) []byte {
	buf = append(buf, '[')
	for i, s := range ss {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendQuote(buf, s)
	}
	return append(buf, ']')
}

// appendRecord renders one boundary (or requested point) as a JSON line or a text line.
func appendRecord(buf []byte, a *boost.FuncAudit, off uint64, e *boost.Entry, d *boost.Decision, fm *decode.Formatter, jsonOut bool) []byte {
	addr := a.Func.Addr + off
	n, raw, text := 0, []byte(nil), "(not an instruction boundary)"
	if e != nil {
		n = e.Len
		raw = e.Inst.Bytes()
		if e.DecodeOK {
			text = fm.Format(&e.Inst)
		} else {
			text = "(bad)"
		}
	}
	errno := ""
	if d.Verdict == boost.Reject {
		errno = d.Errno.String()
	}
	var details []string
	for _, r := range d.Reasons {
		details = append(details, r.Text)
	}
	if jsonOut {
		buf = appendRecordHead(buf, a.Mode, a.Policy)
		buf = append(buf, `,"addr":"0x`...)
		buf = strconv.AppendUint(buf, addr, 16)
		buf = append(buf, `","func":`...)
		buf = strconv.AppendQuote(buf, a.Func.Name)
		buf = append(buf, `,"off":`...)
		buf = strconv.AppendUint(buf, off, 10)
		buf = append(buf, `,"len":`...)
		buf = strconv.AppendInt(buf, int64(n), 10)
		buf = append(buf, `,"bytes":"`...)
		buf = appendHexBytes(buf, raw)
		buf = append(buf, `","asm":`...)
		buf = strconv.AppendQuote(buf, text)
		buf = append(buf, `,"verdict":"`...)
		buf = append(buf, d.Verdict.String()...)
		buf = append(buf, '"')
		if errno != "" {
			buf = append(buf, `,"errno":"`...)
			buf = append(buf, errno...)
			buf = append(buf, '"')
		}
		buf = append(buf, `,"reasons":`...)
		buf = appendJSONStrings(buf, ruleIDs(d.Reasons))
		buf = append(buf, `,"details":`...)
		buf = appendJSONStrings(buf, details)
		buf = append(buf, `,"optimizable":`...)
		buf = strconv.AppendBool(buf, d.Optimizable)
		return append(buf, "}\n"...)
	}
	v := d.Verdict.String()
	if errno != "" {
		v += " " + errno
	}
	if d.Optimizable {
		v += " +opt"
	}
	// The rules that decided, in order (e.g. why a single-step was not boosted),
	// then the deciding rule's text.
	why := ""
	if n := len(d.Reasons); n > 0 {
		why = strings.Join(ruleIDs(d.Reasons), " > ")
		if t := d.Reasons[n-1].Text; t != "" {
			why += ": " + t
		}
		if n > 1 && d.Reasons[0].Rule == audit.RuleA64Alternative {
			why += " [" + d.Reasons[0].Text + "]" // the bytes depend on the CPU
		}
	}
	return fmt.Appendf(buf, "  +%-5s %-30s %-34s %-18s %s\n", "0x"+strconv.FormatUint(off, 16), string(appendHexBytes(nil, raw)), text, v, why)
}

// appendRecordHead opens an audit JSON record: its arch and policy.
func appendRecordHead(buf []byte, m decode.Mode, pol *boost.Policy) []byte {
	buf = append(buf, `{"arch":"`...)
	buf = append(buf, archName(m)...)
	buf = append(buf, `","policy":"`...)
	buf = append(buf, pol.Name...)
	return append(buf, '"')
}

// archName is the CLI's name of the arch of mode m.
func archName(m decode.Mode) string {
	for _, a := range decode.Arches {
		if a.Mode == m {
			return a.Name
		}
	}
	return m.String()
}

func formatFunc(buf []byte, a *boost.FuncAudit, fm *decode.Formatter, jsonOut bool) []byte {
	if !jsonOut {
		var tags []string
		if a.FtraceOff >= 0 {
			tags = append(tags, fmt.Sprintf("ftrace site +%#x (%s)", a.FtraceOff, a.FtraceFrom))
		}
		if a.Notrace && a.NotraceKnown {
			tags = append(tags, "notrace")
		}
		if a.Endbr {
			tags = append(tags, "endbr")
		}
		if a.DecodeFailOff >= 0 {
			tags = append(tags, fmt.Sprintf("decode fails at +%#x", a.DecodeFailOff))
		}
		buf = fmt.Appendf(buf, "\n%s  %#x  size %#x  %s\n", a.Func.Name, a.Func.Addr, a.Func.Size, strings.Join(tags, ", "))
	}
	for i := range a.Entries {
		e := &a.Entries[i]
		buf = appendRecord(buf, a, e.Off, e, &e.Decision, fm, jsonOut)
	}
	return buf
}

func formatPoint(buf []byte, a *boost.FuncAudit, off uint64, e *boost.Entry, d *boost.Decision, fm *decode.Formatter, jsonOut bool) []byte {
	if !jsonOut {
		buf = fmt.Appendf(buf, "%s+%#x  %#x\n", a.Func.Name, off, a.Func.Addr+off)
	}
	return appendRecord(buf, a, off, e, d, fm, jsonOut)
}

// summary counts verdicts and rules over an audit.
type summary struct {
	arch, policy                       string
	funcs, points, optimizable, errors int
	verdicts                           map[string]int
	errnos                             map[string]int
	rules                              map[string]int
	fast                               []ruleCount
	// byVerdict and byErrno count by value on the hot path; flush names them.
	byVerdict [256]int
	byErrno   map[boost.Errno]int
}

func newSummary() *summary {
	return &summary{verdicts: map[string]int{}, errnos: map[string]int{}, rules: map[string]int{}, byErrno: map[boost.Errno]int{}}
}

func (s *summary) add(d *boost.Decision) {
	s.points++
	s.byVerdict[d.Verdict]++
	if d.Verdict == boost.Reject {
		s.byErrno[d.Errno]++
	}
	if d.Optimizable {
		s.optimizable++
	}
	for _, r := range d.Reasons {
		s.countRule(r.Rule)
	}
}

// countRule counts a rule id. Rule ids are the strings of boost's rule table,
// so a short list compared by string data pointer finds them without hashing;
// rules[] gets the counts in merge.
func (s *summary) countRule(id string) {
	p := unsafe.StringData(id)
	for i := range s.fast {
		if s.fast[i].p == p && len(s.fast[i].id) == len(id) {
			s.fast[i].n++
			return
		}
	}
	if len(s.fast) < 64 {
		s.fast = append(s.fast, ruleCount{p: p, id: id, n: 1})
		return
	}
	s.rules[id]++
}

type ruleCount struct {
	p  *byte
	id string
	n  int
}

// flush moves the fast counts into rules.
func (s *summary) flush() {
	for _, rc := range s.fast {
		s.rules[rc.id] += rc.n
	}
	s.fast = nil
	for v, n := range s.byVerdict {
		if n > 0 {
			s.verdicts[boost.Verdict(v).String()] += n
		}
	}
	s.byVerdict = [256]int{}
	for e, n := range s.byErrno {
		s.errnos[e.String()] += n
	}
	clear(s.byErrno)
}

func (s *summary) merge(x *summary) {
	x.flush()
	s.funcs += x.funcs
	s.points += x.points
	s.optimizable += x.optimizable
	s.errors += x.errors
	for _, p := range [][2]map[string]int{{s.verdicts, x.verdicts}, {s.errnos, x.errnos}, {s.rules, x.rules}} {
		for k, v := range p[1] {
			p[0][k] += v
		}
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func (s *summary) write(w io.Writer, jsonOut bool, elapsed time.Duration, notes []string) {
	if jsonOut {
		var b []byte
		b = fmt.Appendf(b, `{"arch":%q,"policy":%q,"functions":%d,"boundaries":%d,"optimizable":%d,"errors":%d,"seconds":%.3f`, s.arch, s.policy, s.funcs, s.points, s.optimizable, s.errors, elapsed.Seconds())
		for _, part := range []struct {
			name string
			m    map[string]int
		}{{"verdicts", s.verdicts}, {"errnos", s.errnos}, {"rules", s.rules}} {
			b = fmt.Appendf(b, `,%q:{`, part.name)
			for i, k := range sortedKeys(part.m) {
				if i > 0 {
					b = append(b, ',')
				}
				b = fmt.Appendf(b, "%q:%d", k, part.m[k])
			}
			b = append(b, '}')
		}
		b = append(b, `,"notes":`...)
		b = appendJSONStrings(b, notes)
		b = append(b, "}\n"...)
		w.Write(b)
		return
	}
	fmt.Fprintf(w, "functions %d, instruction boundaries %d, optimizable %d, errors %d (%.2fs)\n", s.funcs, s.points, s.optimizable, s.errors, elapsed.Seconds())
	fmt.Fprintln(w, "\nverdict")
	for _, k := range sortedKeys(s.verdicts) {
		fmt.Fprintf(w, "  %-12s %9d  %5.1f%%\n", k, s.verdicts[k], 100*float64(s.verdicts[k])/float64(max(s.points, 1)))
	}
	if len(s.errnos) > 0 {
		fmt.Fprintln(w, "\nerrno (rejected)")
		for _, k := range sortedKeys(s.errnos) {
			fmt.Fprintf(w, "  %-12s %9d\n", k, s.errnos[k])
		}
	}
	fmt.Fprintln(w, "\nrule (boundaries it applied to)")
	for _, k := range sortedKeys(s.rules) {
		fmt.Fprintf(w, "  %-40s %9d\n", k, s.rules[k])
	}
}
