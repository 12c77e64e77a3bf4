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
back, and so are, from /proc/kcore, the probe's instruction slot (the copied
instruction, then int3 or a jmp back) and, for an [OPTIMIZED] probe, its
detour buffer (the kernel's optprobe template, the copied instructions, the
jmp back), each next to kboost's prediction. Points are SYMBOL, SYMBOL+OFF
(decimal or 0x hex), SYMBOL%return, or a raw kernel address 0xADDR (also
kernel:0xADDR), which the kernel resolves to symbol+offset with kallsyms, and
so does kboost.`,
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
	// unless --force. The caller closes the returned Live.
	predict := func(specs []loader.Spec) (*loader.Live, []loader.Expectation, error) {
		if place != "exact" && place != "cheapest" {
			return nil, nil, usagef("--place %q: want exact or cheapest", place)
		}
		lv, err := loader.OpenLive(vmlinux, config)
		if err != nil {
			return nil, nil, err
		}
		xs, err := expectAll(s, lv, specs, place == "cheapest", jsonOut, force)
		if err != nil {
			lv.Close()
			return nil, nil, err
		}
		return lv, xs, nil
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
			lv, xs, err := predict(specs)
			if err != nil {
				return err
			}
			defer lv.Close()
			t, err := loader.OpenTracefs()
			if err != nil {
				return err
			}
			out := []probeAddJSON{}
			for i, sp := range specs {
				before := lv.SlotSnapshot()
				n, err := t.Add(sp)
				if err != nil {
					return err
				}
				if err := t.Enable(n.Group, n.Event, true); err != nil {
					return err
				}
				time.Sleep(200 * time.Millisecond) // the optimizer runs a few jiffies later
				le := findListEntry(xs[i].Addr)
				rb := lv.Readback(&xs[i], le, before)
				rec := addRecord{Event: n.Group + "/" + n.Event, Point: n.Point(), Predicted: xs[i], Kernel: le, Readback: rb}
				rec.Agree = agreement(&xs[i], le, &rb)
				out = append(out, probeAdd(lv, &rec))
				if !jsonOut {
					fmt.Fprintf(s.Out, "added %s/%s at %s: kernel %s\n", n.Group, n.Event, n.Point(), fmtListEntry(le))
					printReadback(s.Out, &rb)
					printAgreement(s.Out, rec.Agree)
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
				Event, Point string
				Hits         uint64
				List         *loader.ListEntry
			}
			var rows []row
			for _, e := range evs {
				h, _ := t.Hits(e.Group, e.Event)
				r := row{Event: e.Group + "/" + e.Event, Point: e.Point, Hits: h}
				// kprobe_events shows a raw address hashed ("0x%p"): the
				// default event name carries the real one.
				addr := uint64(0)
				if strings.HasPrefix(e.Point, "0x") {
					if addr = loader.EventAddr(e.Event); addr != 0 {
						r.Point = fmt.Sprintf("%#x", addr)
					}
				}
				for i := range entries {
					if addr != 0 && entries[i].Addr == addr || addr == 0 && pointsEqual(entries[i].Point, e.Point) {
						r.List = &entries[i]
					}
				}
				rows = append(rows, r)
			}
			if jsonOut {
				js := []probeRowJSON{}
				for _, r := range rows {
					js = append(js, probeRowJSON{Event: r.Event, Point: r.Point, Hits: r.Hits, List: probeList(r.List)})
				}
				return json.NewEncoder(s.Out).Encode(js)
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
			return removeEvents(s.Out, args, loader.GroupPrefix, t.Remove)
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
			lv, _, err := predict(specs)
			if err != nil {
				return err
			}
			lv.Close()
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
					js := []probeCountJSON{}
					for _, c := range cs {
						js = append(js, probeCountJSON{Point: c.Spec.Point(), Hits: c.Hits})
					}
					_ = json.NewEncoder(s.Out).Encode(js)
					return
				}
				var parts []string
				for _, c := range cs {
					parts = append(parts, fmt.Sprintf("%s=%d", c.Spec.Point(), c.Hits))
				}
				fmt.Fprintf(s.Out, "%s %s\n", time.Now().Format("15:04:05"), strings.Join(parts, " "))
			}
			err = loader.Watch(ctx, specs, opt)
			if ctx.Err() != nil { // Ctrl-C is how a watch ends: the probes are removed
				return interrupted("probe watch")
			}
			return err
		},
	}
	watch.Flags().BoolVar(&useTracefs, "tracefs", false, "use tracefs kprobe_events instead of the perf PMU (leaks if killed: kboost probe sweep)")
	durationVar(watch.Flags(), &interval, "interval", time.Second, 10*time.Millisecond, time.Hour, false, "time between hit-count lines (10ms to 1h)")
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
	point := x.Point
	if x.Resolved != "" {
		point += " (" + x.Resolved + ")"
	}
	fmt.Fprintf(w, "%s: predicted %s at %#x %s (%s) bytes %x\n", point, x.Decision.Verdict, x.Addr, strings.Join(flags, ""), strings.Join(x.Rules, ", "), x.Bytes)
}

// addRecord is one `probe add --json` record.
type addRecord struct {
	Event     string             `json:"event"`
	Point     string             `json:"point"`
	Predicted loader.Expectation `json:"predicted"`
	Kernel    *loader.ListEntry  `json:"kernel"`
	Readback  loader.Readback    `json:"readback"`
	// Agree is per field: listed (the kernel has the probe), addr, ftrace,
	// optimized, slot, optslot (the last two when they apply).
	Agree map[string]bool `json:"agree"`
}

// expectAll predicts every spec on lv (moving it first with --place
// cheapest), prints the predictions unless jsonOut, and fails on predicted
// refusals unless force.
func expectAll(s Streams, lv *loader.Live, specs []loader.Spec, cheapest, jsonOut, force bool) ([]loader.Expectation, error) {
	var xs []loader.Expectation
	var refused []string
	for i, sp := range specs {
		if cheapest {
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
		switch {
		case x.TracefsInert:
			refused = append(refused, fmt.Sprintf("%s: no kernel symbol holds it: the kernel would register no kprobe (perf: %s; kprobe_events: an event with no probe behind it) (%s)", sp.Point(), x.Errno, strings.Join(x.Rules, ", ")))
		case x.Errno != "":
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

// agreement compares the prediction with the kernel's list entry and what
// was read back from kcore.
func agreement(x *loader.Expectation, le *loader.ListEntry, rb *loader.Readback) map[string]bool {
	m := map[string]bool{"listed": le != nil}
	if le == nil {
		return m
	}
	m["addr"] = le.Addr == x.Addr
	m["ftrace"] = le.Has("FTRACE") == x.Ftrace
	m["optimized"] = le.Has("OPTIMIZED") == x.Optimized
	if rb.SlotAgree != nil {
		m["slot"] = *rb.SlotAgree
	}
	if rb.OptSlotAgree != nil {
		m["optslot"] = *rb.OptSlotAgree
	}
	return m
}

func printReadback(w io.Writer, rb *loader.Readback) {
	if rb.SlotAgree != nil {
		fmt.Fprintf(w, "  slot    @%#x kernel %s\n", rb.SlotAddr, rb.Slot)
		fmt.Fprintf(w, "          predicted %s\n", rb.PredictedSlot)
	}
	if rb.OptSlotAgree != nil {
		fmt.Fprintf(w, "  detour  @%#x kernel %s\n", rb.Detour, rb.OptSlot)
		fmt.Fprintf(w, "          predicted %s (.. = the kernel's optimized_kprobe pointer)\n", rb.PredictedOptSlot)
	}
	for _, n := range rb.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func printAgreement(w io.Writer, agree map[string]bool) {
	var bad []string
	for _, f := range []string{"listed", "addr", "ftrace", "optimized", "slot", "optslot"} {
		if ok, in := agree[f]; in && !ok {
			bad = append(bad, f)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(w, "  DISAGREE on %s\n", strings.Join(bad, ", "))
		return
	}
	fmt.Fprintln(w, "  agrees with the prediction")
}

// removeEvents removes each GROUP/EVENT argument (EVENT alone is in group
// def) with remove and says so, stopping at the first error.
func removeEvents(w io.Writer, args []string, def string, remove func(group, event string) error) error {
	for _, a := range args {
		g, e, ok := strings.Cut(a, "/")
		if !ok {
			g, e = def, a
		}
		if err := remove(g, e); err != nil {
			return err
		}
		fmt.Fprintf(w, "removed %s/%s\n", g, e)
	}
	return nil
}
