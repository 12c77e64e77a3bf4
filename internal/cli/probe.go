package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/loader"
	"github.com/spf13/cobra"
)

func newProbeCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Put kprobes into the running kernel, with kboost's prediction next to the kernel's answer",
		Long: `Insert kprobes into the running Linux kernel (root). Before inserting, kboost
predicts each point from the live kernel itself (/proc/kallsyms, the bytes in
/proc/kcore, the config, the debugfs blacklist): verdict, errno, [FTRACE] and
[OPTIMIZED]. Requests the kernel would refuse are refused first, with the
kernel's reason. After inserting, the kprobes/list flags and hit counts are read
back. Points are SYMBOL, SYMBOL+OFF (decimal or 0x hex) or SYMBOL%return.`,
	}
	var vmlinux, config string
	var force, jsonOut bool
	var place string
	cmd.PersistentFlags().StringVar(&vmlinux, "vmlinux", "", "the running kernel's vmlinux (exact tables; nokaslr boots); default: its memory via /proc/kcore")
	cmd.PersistentFlags().StringVar(&config, "config", "", "the running kernel's .config (default /proc/config.gz or /boot/config-$(uname -r))")
	cmd.PersistentFlags().BoolVar(&force, "force", false, "ask the kernel even when kboost predicts a refusal")
	cmd.PersistentFlags().BoolVar(&jsonOut, "json", false, "JSON output")
	cmd.PersistentFlags().StringVar(&place, "place", "exact", "exact, or cheapest: move each point to the cheapest one that runs exactly as often (ftrace site, else an optimizable/boostable/emulated instruction later in the same basic block)")

	// predict opens the live kernel and predicts every point; refusals stop
	// unless --force.
	predict := func(specs []loader.Spec) ([]loader.Expectation, error) {
		if place != "exact" && place != "cheapest" {
			return nil, usagef("--place %q: want exact or cheapest", place)
		}
		lv, err := loader.OpenLive(vmlinux, config)
		if err != nil {
			return nil, err
		}
		defer lv.Close()
		var xs []loader.Expectation
		var refused []string
		for i, sp := range specs {
			if place == "cheapest" {
				moved, p, err := lv.Place(sp)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(s.Err, "%s: placed at %s (%s): %s\n", sp.Point(), moved.Point(), p.Cost, p.Reason)
				specs[i], sp = moved, moved
			}
			x, err := lv.Expect(sp)
			if err != nil {
				return nil, err
			}
			xs = append(xs, x)
			if x.Errno != "" {
				refused = append(refused, fmt.Sprintf("%s: the kernel would refuse it with %s (%s)", sp.Point(), x.Errno, strings.Join(x.Rules, ", ")))
			}
		}
		if !jsonOut {
			for _, x := range xs {
				printExpectation(s.Out, &x)
			}
		}
		if len(refused) > 0 && !force {
			return xs, errors.New(strings.Join(refused, "; ") + " (--force asks the kernel anyway)")
		}
		return xs, nil
	}
	parse := func(args []string) ([]loader.Spec, error) {
		var specs []loader.Spec
		for _, a := range args {
			sp, err := loader.ParseSpec(a)
			if err != nil {
				return nil, &UsageError{err.Error()}
			}
			specs = append(specs, sp)
		}
		return specs, nil
	}

	add := &cobra.Command{
		Use:   "add POINT...",
		Short: "Register probes in tracefs (group kboost), enable them and report prediction vs kernel",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := parse(args)
			if err != nil {
				return err
			}
			xs, err := predict(specs)
			if err != nil {
				return err
			}
			t, err := loader.OpenTracefs()
			if err != nil {
				return err
			}
			var out []map[string]any
			for i, sp := range specs {
				n, err := t.Add(sp)
				if err != nil {
					return err
				}
				if err := t.Enable(n.Group, n.Event, true); err != nil {
					return err
				}
				time.Sleep(200 * time.Millisecond) // the optimizer runs a few jiffies later
				le := findListEntry(xs[i].Addr)
				rec := map[string]any{"event": n.Group + "/" + n.Event, "point": n.Point(), "predicted": xs[i], "kernel": le}
				out = append(out, rec)
				if !jsonOut {
					fmt.Fprintf(s.Out, "added %s/%s at %s: kernel %s\n", n.Group, n.Event, n.Point(), fmtListEntry(le))
					checkAgree(s.Out, &xs[i], le)
				}
			}
			if jsonOut {
				return json.NewEncoder(s.Out).Encode(out)
			}
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List kboost tracefs probes, their flags and hits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := loader.OpenTracefs()
			if err != nil {
				return err
			}
			evs, err := t.Events()
			if err != nil {
				return err
			}
			entries, lerr := loader.ReadKprobesList()
			type row struct {
				Event string            `json:"event"`
				Point string            `json:"point"`
				Hits  uint64            `json:"hits"`
				List  *loader.ListEntry `json:"list,omitempty"`
			}
			var rows []row
			for _, e := range evs {
				h, _ := t.Hits(e.Group, e.Event)
				r := row{Event: e.Group + "/" + e.Event, Point: e.Point, Hits: h}
				for i := range entries {
					if pointsEqual(entries[i].Point, e.Point) {
						r.List = &entries[i]
					}
				}
				rows = append(rows, r)
			}
			if jsonOut {
				return json.NewEncoder(s.Out).Encode(rows)
			}
			for _, r := range rows {
				fmt.Fprintf(s.Out, "%-30s %-30s hits %-8d %s\n", r.Event, r.Point, r.Hits, fmtListEntry(r.List))
			}
			if lerr != nil {
				fmt.Fprintf(s.Err, "kboost: %v\n", lerr)
			}
			return nil
		},
	}
	rm := &cobra.Command{
		Use:   "rm EVENT...",
		Short: "Remove kboost tracefs probes (GROUP/EVENT or EVENT in group kboost)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := loader.OpenTracefs()
			if err != nil {
				return err
			}
			for _, a := range args {
				g, e, ok := strings.Cut(a, "/")
				if !ok {
					g, e = loader.GroupPrefix, a
				}
				if err := t.Remove(g, e); err != nil {
					return err
				}
				fmt.Fprintf(s.Out, "removed %s/%s\n", g, e)
			}
			return nil
		},
	}
	sweep := &cobra.Command{
		Use:   "sweep",
		Short: "Remove every probe in every kboost* tracefs group (leftovers of killed runs)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := loader.OpenTracefs()
			if err != nil {
				return err
			}
			evs, err := t.Sweep()
			for _, e := range evs {
				fmt.Fprintf(s.Out, "removed %s/%s (%s)\n", e.Group, e.Event, e.Point)
			}
			if err == nil && len(evs) == 0 {
				fmt.Fprintln(s.Out, "no kboost probes")
			}
			return err
		},
	}
	var useTracefs bool
	var interval time.Duration
	watch := &cobra.Command{
		Use:   "watch POINT...",
		Short: "Insert probes (perf PMU: removed even if kboost is killed) and stream hit counts until Ctrl-C",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs, err := parse(args)
			if err != nil {
				return err
			}
			if _, err := predict(specs); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			opt := loader.WatchOptions{Interval: interval}
			if useTracefs {
				opt.Target = loader.TargetTracefs
			}
			opt.OnReady = func(t loader.Target) {
				fmt.Fprintf(s.Out, "watching %d probes via %s; Ctrl-C stops and removes them\n", len(specs), t)
				if entries, err := loader.ReadKprobesList(); err == nil {
					for _, e := range entries {
						fmt.Fprintf(s.Out, "  %s\n", fmtListEntry(&e))
					}
				}
			}
			opt.OnTick = func(cs []loader.Count) {
				if jsonOut {
					_ = json.NewEncoder(s.Out).Encode(cs)
					return
				}
				var parts []string
				for _, c := range cs {
					parts = append(parts, fmt.Sprintf("%s=%d", c.Spec.Point(), c.Hits))
				}
				fmt.Fprintf(s.Out, "%s %s\n", time.Now().Format("15:04:05"), strings.Join(parts, " "))
			}
			return loader.Watch(ctx, specs, opt)
		},
	}
	watch.Flags().BoolVar(&useTracefs, "tracefs", false, "use tracefs kprobe_events instead of the perf PMU (leaks if killed: kboost probe sweep)")
	watch.Flags().DurationVar(&interval, "interval", time.Second, "time between hit-count lines")
	cmd.AddCommand(add, list, rm, sweep, watch)
	return cmd
}

func findListEntry(addr uint64) *loader.ListEntry {
	entries, err := loader.ReadKprobesList()
	if err != nil {
		return nil
	}
	for i := range entries {
		if entries[i].Addr == addr {
			return &entries[i]
		}
	}
	return nil
}

// pointsEqual compares "sym+16" (kprobe_events) with "sym+0x10" (kprobes/list).
func pointsEqual(list, ev string) bool {
	a, err1 := loader.ParseSpec(strings.Replace(list, "+0x0", "", 1))
	b, err2 := loader.ParseSpec(ev)
	return err1 == nil && err2 == nil && a.Symbol == b.Symbol && a.Offset == b.Offset
}

func fmtListEntry(e *loader.ListEntry) string {
	if e == nil {
		return "(not in kprobes/list)"
	}
	return fmt.Sprintf("%#x %s %s %v", e.Addr, e.Kind, e.Point, e.Flags)
}

func printExpectation(w io.Writer, x *loader.Expectation) {
	if x.Errno != "" {
		fmt.Fprintf(w, "%s: predicted refusal %s (%s)\n", x.Point, x.Errno, strings.Join(x.Rules, ", "))
		return
	}
	var flags []string
	if x.Ftrace {
		flags = append(flags, "[FTRACE]")
	}
	if x.Optimized {
		flags = append(flags, "[OPTIMIZED]")
	}
	fmt.Fprintf(w, "%s: predicted %s at %#x %s (%s) bytes %x\n", x.Point, x.Decision.Verdict, x.Addr, strings.Join(flags, ""), strings.Join(x.Rules, ", "), x.Bytes)
}

func checkAgree(w io.Writer, x *loader.Expectation, le *loader.ListEntry) {
	if le == nil {
		fmt.Fprintf(w, "  DISAGREE: predicted a probe at %#x, kprobes/list has none\n", x.Addr)
		return
	}
	if le.Has("FTRACE") != x.Ftrace || le.Has("OPTIMIZED") != x.Optimized {
		fmt.Fprintf(w, "  DISAGREE: predicted ftrace=%v optimized=%v, kernel %v\n", x.Ftrace, x.Optimized, le.Flags)
		return
	}
	fmt.Fprintln(w, "  agrees with the prediction")
}
