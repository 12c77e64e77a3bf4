package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/uprobe"
	"github.com/spf13/cobra"
)

func newUprobeCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "uprobe",
		Short: "What the running kernel's uprobes do at each instruction of a user-space ELF file",
		Long: `Audit user-space probe points: for every instruction boundary of the chosen
functions, the file offset the kernel wants, the virtual address and what the
running kernel's uprobes do there (refused with an errno, emulated, single-
stepped out of line in the [uprobes] XOL page, or optimized: a NOP turned into
a call to [uprobes-trampoline], the 5-byte form on 6.18, the 10-byte one on
7.2), plus the hazards kboost sees and the kernel
does not: an offset inside an instruction (the kernel installs it; kboost
refuses it), an optimized site in a function that keeps data in the red zone,
a uretprobe on a Go binary. Targets are BIN, BIN:SYMBOL, BIN:SYMBOL+OFF,
BIN:SYMBOL%return, BIN:0xADDR (a virtual address as nm/readelf print it) or
BIN:usdt/PROVIDER/NAME (a USDT probe; add and watch raise its semaphore through
ref_ctr_offset).`,
	}
	var model, place string
	var jsonOut bool
	cmd.PersistentFlags().StringVar(&model, "policy", "", "uprobes model (uprobes-6.1, uprobes-6.12, uprobes-6.18, uprobes-7.2) or a boost x86 or arm64 policy for the instruction analysis; default: the running kernel's")
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "JSON output (one object per site)")
	cmd.PersistentFlags().StringVar(&place, "place", "exact", "exact, or cheapest: move a point to the cheapest site that runs exactly as often (optimized, else emulated, in the same basic block; never a site with a hazard)")
	// check decides one request, moved first with --place cheapest.
	check := func(b *uprobe.Binary, k *uprobe.Kernel, req uprobe.Request, what string) (uprobe.Site, error) {
		if place != "exact" && place != "cheapest" {
			return uprobe.Site{}, usagef("--place %q: want exact or cheapest", place)
		}
		site, fa, err := uprobe.Check(b, k, req)
		if err != nil || place == "exact" || fa == nil || !site.Boundary || req.Return {
			return site, err
		}
		moved, why, err := uprobe.Cheapest(fa, site.Off)
		if err != nil {
			return site, err
		}
		fmt.Fprintf(s.Err, "%s: placed at %s+%#x: %s\n", what, moved.Func, moved.Off, why)
		return moved, nil
	}

	kernel := func() (*uprobe.Kernel, string, error) {
		if model == "" {
			k, note := uprobe.Running()
			return k, note, nil
		}
		if k, err := uprobe.Lookup(model); err == nil {
			return k, "", nil
		}
		p, err := boost.Lookup(model)
		if err != nil {
			return nil, "", usagef("--policy %q: not a uprobes model (%s) nor a boost policy", model, uprobeModelNames())
		}
		k, note := uprobe.Running()
		return k.WithPolicy(p), note, nil
	}
	quietHeader := false // uprobe list --names: nothing but names on stdout
	open := func(target string) (*uprobe.Binary, *uprobe.Request, *uprobe.Kernel, error) {
		path, req, err := uprobe.ParseTarget(target)
		if err != nil {
			return nil, nil, nil, &UsageError{err.Error()}
		}
		k, note, err := kernel()
		if err != nil {
			return nil, nil, nil, err
		}
		if err := inputFile("", path); err != nil {
			return nil, nil, nil, err
		}
		b, err := uprobe.Open(path)
		if err != nil {
			return nil, nil, nil, err
		}
		if !jsonOut && !quietHeader {
			fmt.Fprintf(s.Out, "%s: %s%s, symbols from %s; model %s\n", b.Path, b.Kind, binFlags(b), b.SymFrom, k.Name)
		}
		if note != "" {
			fmt.Fprintf(s.Err, "kboost: note: %s\n", note)
		}
		return b, req, k, nil
	}

	audit := &cobra.Command{
		Use:   "audit BIN[:SYM[+OFF]|:SYM%return|:0xADDR]",
		Short: "Every instruction boundary of the chosen functions (all with BIN alone), or one point",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, req, k, err := open(args[0])
			if err != nil {
				return err
			}
			defer b.Close()
			enc := json.NewEncoder(s.Out)
			emit := func(site *uprobe.Site) error {
				if jsonOut {
					return enc.Encode(site)
				}
				printSite(s.Out, site)
				return nil
			}
			if req != nil && (req.Off != 0 || req.HasAddr || req.Return || req.USDT != "") {
				site, err := check(b, k, *req, args[0])
				if err != nil {
					return err
				}
				if err := emit(&site); err != nil {
					return err
				}
				if site.Path == uprobe.PathRefused || len(site.Hazards) > 0 {
					return fmt.Errorf("%s: %s (%s)", args[0], strings.TrimSpace(site.Path.String()+" "+site.Errno), strings.Join(site.Reasons, ", "))
				}
				return nil
			}
			funcs := b.Funcs
			if req != nil {
				f, ok := b.Func(req.Symbol)
				if !ok {
					_, _, err := uprobe.Check(b, k, *req)
					return err
				}
				funcs = []uprobe.Func{f}
			}
			if len(funcs) == 0 {
				return fmt.Errorf("%s has no function symbols (symbols from %s): give BIN:0xADDR", b.Path, b.SymFrom)
			}
			for _, f := range funcs {
				fa, err := uprobe.Audit(b, k, f)
				if err != nil {
					return err
				}
				if !jsonOut {
					rz := ""
					if fa.RedZone != nil {
						rz = fmt.Sprintf(" (keeps data in the red zone: +%#x %s)", fa.RedZone.Off, fa.RedZone.Asm)
					}
					fmt.Fprintf(s.Out, "%s @%#x size %#x%s:\n", f.Name, f.Addr, f.Size, rz)
				}
				for i := range fa.Sites {
					if err := emit(&fa.Sites[i]); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	var namesOnly bool
	list := &cobra.Command{
		Use:   "list BIN [PATTERN]",
		Short: "Functions and USDT (.note.stapsdt) probes as bpftrace names them (uprobe:BIN:SYM, usdt:BIN:PROVIDER:NAME), with the verdict at each probe site; PATTERN is a glob over those names or their last part",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var re *regexp.Regexp
			if len(args) == 2 {
				var err error
				if re, err = globRE(args[1]); err != nil {
					return usagef("pattern %q: %v (a glob: * ? [...], * also matching /)", args[1], err)
				}
			}
			quietHeader = namesOnly
			b, _, k, err := open(args[0])
			if err != nil {
				return err
			}
			defer b.Close()
			usdt, err := b.USDT()
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(b.Path)
			if err != nil {
				abs = b.Path
			}
			// match: the whole probe name, or its part after BIN (SYM, PROVIDER:NAME).
			match := func(name, last string) bool {
				return re == nil || re.MatchString(name) || re.MatchString(last)
			}
			enc := json.NewEncoder(s.Out)
			for _, f := range b.Funcs {
				if !match("uprobe:"+abs+":"+f.Name, f.Name) {
					continue
				}
				if namesOnly && !jsonOut {
					fmt.Fprintf(s.Out, "uprobe:%s:%s\n", abs, f.Name)
					continue
				}
				site, _, err := uprobe.Check(b, k, uprobe.Request{Symbol: f.Name})
				rec := listRecord{Arch: b.Arch.Name, Policy: k.Name, Kind: "function", Name: f.Name, Addr: uprobe.Hex(f.Addr), Size: f.Size}
				if err != nil {
					rec.Error = err.Error()
				} else {
					rec.FileOffset, rec.Path, rec.Errno, rec.Asm = site.FileOffset, site.Path.String(), site.Errno, site.Asm
				}
				if jsonOut {
					if err := enc.Encode(rec); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(s.Out, "uprobe:%s:%s\t%#x\tfile %#x\t%s\t%s\n", abs, f.Name, f.Addr, uint64(rec.FileOffset), strings.TrimSpace(rec.Path+" "+rec.Errno), rec.Asm)
			}
			for _, u := range usdt {
				if !match("usdt:"+abs+":"+u.Provider+":"+u.Name, u.Provider+":"+u.Name) {
					continue
				}
				if namesOnly && !jsonOut {
					fmt.Fprintf(s.Out, "usdt:%s:%s:%s\n", abs, u.Provider, u.Name)
					continue
				}
				rec := listRecord{Arch: b.Arch.Name, Policy: k.Name, Kind: "usdt", Provider: u.Provider, Name: u.Name, Addr: u.Addr, Semaphore: u.Semaphore, SemaphoreOffset: u.SemaphoreOffset, Args: u.Args}
				site, err := uprobe.USDTSite(b, k, u)
				if err != nil {
					rec.Error = err.Error()
				} else {
					rec.FileOffset, rec.Path, rec.Errno, rec.Asm, rec.Bytes, rec.Reasons, rec.Details = site.FileOffset, site.Path.String(), site.Errno, site.Asm, site.Bytes, site.Reasons, site.Details
				}
				if jsonOut {
					if err := enc.Encode(rec); err != nil {
						return err
					}
					continue
				}
				sema := ""
				if u.Semaphore != 0 {
					sema = fmt.Sprintf(" semaphore %#x (file %#x)", uint64(u.Semaphore), uint64(u.SemaphoreOffset))
				}
				fmt.Fprintf(s.Out, "usdt:%s:%s:%s\t%#x\tfile %#x\t%s (%s)%s\targs %q\n", abs, u.Provider, u.Name, uint64(u.Addr), uint64(rec.FileOffset), strings.TrimSpace(rec.Path+" "+rec.Errno), rec.Asm, sema, u.Args)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&namesOnly, "names", false, "print only the probe names, one a line (bpftrace -l's output)")
	var force, useTracefs bool
	var pid int
	var interval time.Duration
	// resolve audits each target and turns it into a probe; refusals and
	// hazards stop unless --force.
	resolve := func(targets []string) ([]uprobe.Probe, error) {
		var probes []uprobe.Probe
		var refused []string
		for _, a := range targets {
			path, req, err := uprobe.ParseTarget(a)
			if err != nil {
				return nil, &UsageError{err.Error()}
			}
			if req == nil {
				return nil, usagef("%q: give a point (BIN:SYMBOL, BIN:SYMBOL+OFF, BIN:SYMBOL%%return or BIN:0xADDR)", a)
			}
			k, note, err := kernel()
			if err != nil {
				return nil, err
			}
			if note != "" {
				fmt.Fprintf(s.Err, "kboost: note: %s\n", note)
			}
			abs, err := filepath.Abs(path)
			if err != nil {
				return nil, err
			}
			if r, err := filepath.EvalSymlinks(abs); err == nil {
				abs = r // the kernel probes the inode; /proc/PID/maps shows the real path
			}
			b, err := uprobe.Open(abs)
			if err != nil {
				return nil, err
			}
			site, err := check(b, k, *req, a)
			b.Close()
			if err != nil {
				return nil, err
			}
			if !jsonOut {
				printSite(s.Out, &site)
			}
			if site.Path == uprobe.PathRefused || len(site.Hazards) > 0 {
				refused = append(refused, fmt.Sprintf("%s: %s (%s)", a, strings.TrimSpace(site.Path.String()+" "+site.Errno), strings.Join(site.Reasons, ", ")))
			}
			probes = append(probes, uprobe.Probe{Path: abs, Offset: uint64(site.FileOffset), Return: req.Return, RefCtrOffset: uint64(site.RefCtrOffset), Pid: pid})
		}
		if len(refused) > 0 && !force {
			return probes, fmt.Errorf("%s (--force asks the kernel anyway)", strings.Join(refused, "; "))
		}
		return probes, nil
	}
	add := &cobra.Command{
		Use:   "add BIN:POINT...",
		Short: "Register uprobes in tracefs uprobe_events (group " + uprobe.UprobeGroup + "), enabled, until rm or sweep",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			probes, err := resolve(args)
			if err != nil {
				return err
			}
			for _, p := range probes {
				ev, err := uprobe.AddTracefs(p, p.EventName())
				if err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "added %s at %s:%#x\n", ev, p.Path, p.Offset)
			}
			return nil
		},
	}
	rm := &cobra.Command{
		Use:   "rm EVENT...",
		Short: "Remove kboost uprobe events (GROUP/EVENT, or EVENT in group " + uprobe.UprobeGroup + ")",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return removeEvents(s.Out, args, uprobe.UprobeGroup, uprobe.RemoveTracefs)
		},
	}
	sweep := &cobra.Command{
		Use:   "sweep",
		Short: "Remove every kboost uprobe event from uprobe_events (leftovers of killed --tracefs watchers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			evs, err := uprobe.SweepTracefs()
			for _, e := range evs {
				fmt.Fprintf(s.Out, "removed %s/%s (%s)\n", e.Group, e.Event, e.Point)
			}
			if err == nil && len(evs) == 0 {
				fmt.Fprintln(s.Out, "no kboost uprobes")
			}
			return err
		},
	}
	events := &cobra.Command{
		Use:   "events",
		Short: "List kboost uprobe events in uprobe_events with their hits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ps, err := uprobe.ListTracefs()
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(s.Out).Encode(ps)
			}
			for _, p := range ps {
				fmt.Fprintf(s.Out, "%-40s %-50s hits %d\n", p.Event, p.Point, p.Hits)
			}
			return nil
		},
	}
	watch := &cobra.Command{
		Use:   "watch BIN:POINT...",
		Short: "Insert uprobes (perf PMU: removed even if kboost is killed) and stream hit counts until Ctrl-C",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if pid < 0 {
				return usagef("--pid %d: want a process id (0: every process)", pid)
			}
			if pid > 0 && useTracefs {
				return usagef("--pid needs the perf PMU: drop --tracefs")
			}
			if interval < 10*time.Millisecond {
				return usagef("--interval %v: want at least 10ms", interval)
			}
			probes, err := resolve(args)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			readback := func() {
				if pid == 0 || jsonOut {
					return
				}
				for _, p := range probes {
					if rb, err := uprobe.ReadBack(pid, p.Path, p.Offset, 8); err == nil {
						fmt.Fprintf(s.Out, "  %s:%#x in %d @%#x: %s (int3 %v, call %v, [uprobes] %v, [uprobes-trampoline] %v)\n",
							p.Path, p.Offset, pid, uint64(rb.Addr), uprobe.SpacedHex(rb.Site), rb.Int3, rb.Call, rb.XOL, rb.Trampoline)
					}
				}
			}
			opt := uprobe.WatchOptions{Tracefs: useTracefs, Interval: interval}
			opt.OnReady = func(t string) {
				fmt.Fprintf(s.Out, "watching %d uprobes via %s; Ctrl-C stops and removes them\n", len(probes), t)
				readback()
			}
			opt.OnTick = func(cs []uprobe.Count) {
				if jsonOut {
					_ = json.NewEncoder(s.Out).Encode(cs)
					return
				}
				var parts []string
				for _, c := range cs {
					parts = append(parts, fmt.Sprintf("%s=%d", c.Point, c.Hits))
				}
				fmt.Fprintf(s.Out, "%s %s\n", time.Now().Format("15:04:05"), strings.Join(parts, " "))
			}
			err = uprobe.Watch(ctx, probes, opt)
			readback()
			if err == nil && ctx.Err() != nil { // Ctrl-C ends a watch: the probes are gone
				return interrupted("uprobe watch")
			}
			return err
		},
	}
	for _, c := range []*cobra.Command{add, watch} {
		c.Flags().BoolVar(&force, "force", false, "ask the kernel even when kboost refuses the point (mid-instruction, hazards)")
	}
	watch.Flags().BoolVar(&useTracefs, "tracefs", false, "use tracefs uprobe_events instead of the perf PMU (leaks if killed: kboost uprobe sweep)")
	watch.Flags().IntVar(&pid, "pid", 0, "probe only this process (perf PMU; its threads at the start, not the ones it creates later); 0: every process mapping the file")
	durationVar(watch.Flags(), &interval, "interval", time.Second, 10*time.Millisecond, time.Hour, false, "time between hit-count lines (10ms to 1h)")
	var scale float64
	var runs int
	bench := &cobra.Command{
		Use:   "bench [BIN:SYM[+OFF][%return] [-- COMMAND ARGS...]]",
		Short: "Measure the per-call cost of each uprobe path on the running kernel (built-in workload; the optimized row probes the NOP form the kernel's model optimizes) as ratios to the unprobed call; or the cost per hit of a probe at BIN:SYM in a command",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if scale <= 0 || scale > 100 {
				return usagef("--scale %v: want a factor in (0, 100]", scale)
			}
			if len(args) > 0 {
				return benchTarget(s, jsonOut, args, cmd.ArgsLenAtDash(), runs, open)
			}
			k, note, err := kernel()
			if err != nil {
				return err
			}
			if note != "" {
				fmt.Fprintf(s.Err, "kboost: note: %s\n", note)
			}
			dir, err := os.MkdirTemp("", "kboost-uprobe-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			rows, err := uprobe.Bench(dir, scale, runs, k)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(s.Out).Encode(rows)
			}
			rel, _ := uprobe.RunningRelease()
			fmt.Fprintf(s.Out, "uprobe cost per call on %s (model %s), median of %d runs:\n", rel, k.Name, runs)
			fmt.Fprintf(s.Out, "%-11s %-44s %-11s %10s %10s %12s %9s\n", "path", "probed code", "predicted", "calls", "hits", "ns/call", "ratio")
			for _, r := range rows {
				fmt.Fprintf(s.Out, "%-11s %-44s %-11s %10d %10d %12.1f %8.0fx\n", r.Path, r.Asm, r.Verdict, r.Calls, r.Hits, r.NsCall, r.Ratio)
			}
			return nil
		},
	}
	bench.Flags().Float64Var(&scale, "scale", 1, "scale the number of calls of every path")
	countVar(bench.Flags(), &runs, "runs", "", 3, 1, 50, "runs per path, 1 to 50 (the median is shown)")
	cmd.AddCommand(audit, list, add, rm, sweep, events, watch, bench)
	return cmd
}

// benchTarget is `uprobe bench BIN:SYM [-- COMMAND...]`: the command (BIN
// alone by default) unprobed, with the entry probe and, for SYM%return, with
// the uretprobe.
func benchTarget(s Streams, jsonOut bool, args []string, dash, runs int, open func(string) (*uprobe.Binary, *uprobe.Request, *uprobe.Kernel, error)) error {
	argv := args[1:]
	switch {
	case dash == 1:
	case dash < 0 && len(args) == 1:
	default:
		return usagef("want BIN:SYM, then -- and the command to run (default BIN alone)")
	}
	b, req, k, err := open(args[0])
	if err != nil {
		return err
	}
	defer b.Close()
	if req == nil {
		return usagef("%q: give a point (BIN:SYMBOL, BIN:SYMBOL+OFF, BIN:SYMBOL%%return or BIN:0xADDR)", args[0])
	}
	site, _, err := uprobe.Check(b, k, *req)
	if err != nil {
		return err
	}
	if site.Path == uprobe.PathRefused {
		return fmt.Errorf("%s: refused (%s: %s): nothing to measure", args[0], site.Errno, strings.Join(site.Details, "; "))
	}
	if len(argv) == 0 {
		argv = []string{b.Path}
	}
	rows, err := uprobe.BenchTarget(b.Path, site, req.Return, argv, runs)
	if err != nil {
		return err
	}
	if jsonOut {
		return json.NewEncoder(s.Out).Encode(rows)
	}
	fmt.Fprintf(s.Out, "%s (%s, file %#x): %s, median of %d runs of %s\n", args[0], site.Asm, uint64(site.FileOffset), site.Path, runs, strings.Join(argv, " "))
	fmt.Fprintf(s.Out, "%-7s %-11s %14s %10s %12s\n", "probe", "predicted", "cpu ns", "hits", "ns/hit")
	for _, r := range rows {
		fmt.Fprintf(s.Out, "%-7s %-11s %14.0f %10d %12.1f\n", r.Probe, r.Verdict, r.CPUNs, r.Hits, r.NsHit)
	}
	return nil
}

// globRE is a bpftrace-style glob as a regexp: * any run of characters
// (slashes too), ? one, [...] a class ([!...] negated).
func globRE(p string) (*regexp.Regexp, error) {
	var sb strings.Builder
	sb.WriteByte('^')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '*':
			sb.WriteString(".*")
		case '?':
			sb.WriteByte('.')
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				return nil, errors.New("unterminated [")
			}
			class := p[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			sb.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			sb.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	sb.WriteByte('$')
	return regexp.Compile(sb.String())
}

// listRecord is one `uprobe list --json` line.
type listRecord struct {
	Arch            string       `json:"arch"`
	Policy          string       `json:"policy"` // the uprobes model
	Kind            string       `json:"kind"`   // function or usdt
	Provider        string       `json:"provider,omitempty"`
	Name            string       `json:"name"`
	Addr            uprobe.Hex   `json:"addr"`
	FileOffset      uprobe.Hex   `json:"file_offset"`
	Size            uint64       `json:"size,omitempty"`
	Semaphore       uprobe.Hex   `json:"semaphore,omitempty"`
	SemaphoreOffset uprobe.Hex   `json:"semaphore_offset,omitempty"`
	Args            string       `json:"args,omitempty"`
	Path            string       `json:"path,omitempty"`
	Errno           string       `json:"errno,omitempty"`
	Asm             string       `json:"asm,omitempty"`
	Bytes           uprobe.Bytes `json:"bytes,omitempty"`
	Reasons         []string     `json:"reasons,omitempty"`
	Details         []string     `json:"details,omitempty"`
	Error           string       `json:"error,omitempty"`
}

func uprobeModelNames() string {
	var n []string
	for _, k := range uprobe.Kernels() {
		n = append(n, k.Name)
	}
	return strings.Join(n, ", ")
}

func binFlags(b *uprobe.Binary) string {
	var f []string
	if b.Static {
		f = append(f, "static")
	}
	if b.Go {
		f = append(f, "Go")
	}
	if len(f) == 0 {
		return ""
	}
	return " (" + strings.Join(f, ", ") + ")"
}

func printSite(w io.Writer, st *uprobe.Site) {
	v := st.Path.String()
	if st.Errno != "" {
		v += " " + st.Errno
	}
	fn := st.Func
	if fn == "" {
		fn = "?"
	}
	fmt.Fprintf(w, "  %#x file %#x %s+%#x\t%-24s %-28s %s (%s)\n", uint64(st.Addr), uint64(st.FileOffset), fn, st.Off,
		uprobe.SpacedHex(st.Bytes), st.Asm, v, strings.Join(st.Reasons, ", "))
	for i, h := range st.Reasons {
		if strings.HasPrefix(st.Details[i], "hazard") || h == uprobe.RuleMidInsn.ID {
			fmt.Fprintf(w, "      %s\n", st.Details[i])
		}
	}
}
