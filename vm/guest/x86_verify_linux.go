//go:build linux

package guest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"golang.org/x/sys/unix"
)

func init() {
	Register("kboost-verify", stepVerify)
}

// x86Optimizer waits for x86's optimizer until every probe listed
// [OPTIMIZED] has its jmp (E9) to the detour buffer in place of the int3, at
// most VerifyArgs.OptimizeWaitMS (Max is set from it).
var x86Optimizer = &OptimizerWait{Poll: 20 * time.Millisecond, Len: 1, Align: 1,
	Jumped: func(b []byte) bool { return b[0] == 0xE9 },
	Note: func(round, _, pending int, max time.Duration) string {
		return fmt.Sprintf("round %d: %d probes listed [OPTIMIZED] without the jmp in place after %v", round, pending, max)
	}}

func readSlotPages(k *loader.Kcore) SlotPages {
	sp, _ := k.ReadSlotPages(loader.InsnPageSymbol)
	return sp
}

func stepVerify(e *Env, raw json.RawMessage) error {
	var args VerifyArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("kboost-verify arguments: %w", err)
		}
	}
	t0 := time.Now()
	rep := VerifyReport{TimingMS: map[string]int64{}}
	mark := func(name string, since time.Time) { rep.TimingMS[name] = time.Since(since).Milliseconds() }
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		rep.Release = unix.ByteSliceToString(u.Release[:])
	}

	// The live kernel's own view: kallsyms, kcore, config.
	_ = os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0)
	syms, err := kimage.LoadSymbols("/proc/kallsyms")
	if err != nil {
		return err
	}
	f, err := kimage.Open(args.Vmlinux)
	if err != nil {
		return fmt.Errorf("kernel image: %w", err)
	}
	defer f.Close()
	if slide := f.SetSymbols(syms); slide != 0 {
		return fmt.Errorf("kallsyms and the vmlinux differ by %#x: boot with nokaslr", slide)
	}
	var cfg *kimage.KConfig
	if args.Config != "" {
		cfg, err = kimage.LoadKConfig(args.Config)
	} else {
		cfg, _, err = kimage.FindRunningConfig()
	}
	if err != nil {
		return fmt.Errorf("kernel config: %w", err)
	}
	policy := args.Policy
	if policy == "" && f.Arch != nil {
		// The booted kernel's version picks the policy.
		if p, note := boost.ForKernel(rep.Release, f.Arch.Mode); p != nil {
			policy = p.Name
			rep.Notes = append(rep.Notes, note)
		}
	}
	pred, err := NewPredictor(f, cfg, policy)
	if err != nil {
		return err
	}
	rep.Policy = pred.Policy.Name
	rep.Notes = append(rep.Notes, pred.Notes...)
	kc, err := loader.OpenKcore()
	if err != nil {
		return err
	}
	defer kc.Close()
	if b, err := os.ReadFile("/proc/sys/debug/kprobes-optimization"); err == nil {
		rep.Optimization = strings.TrimSpace(string(b)) == "1"
	}
	// The optprobe template, for the detour buffers of optimized probes.
	tmpl, tmplErr := loader.ReadOptTemplate(kc, syms)
	if tmplErr != nil {
		rep.Notes = append(rep.Notes, "optprobe template: "+tmplErr.Error())
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("optprobe template at %#x: %d bytes (clac +%d, val +%d, call +%d), detour slots of %d bytes, SMAP %v",
			tmpl.Entry, len(tmpl.Bytes), tmpl.Clac, tmpl.Val, tmpl.Call, tmpl.SlotSize(), tmpl.SMAP))
	}
	var optPages []uint64
	funcs, err := pred.SelectFuncs(&args)
	if err != nil {
		return err
	}
	nb := args.NonBoundary
	if nb == 0 {
		nb = 2
	}
	// __init code is freed after boot: kcore shows whatever reuses the memory
	// there, so those functions are predicted from the vmlinux (the kernel
	// refuses them before decoding anything).
	var initStart, initEnd uint64
	if a, ok := f.Symbols.ByName("_sinittext"); ok {
		if b, ok := f.Symbols.ByName("_einittext"); ok {
			initStart, initEnd = a.Addr, b.Addr
		}
	}
	initFuncs := 0
	var planned []Planned
	for _, s := range funcs {
		read := kc.Read
		if s.Addr >= initStart && s.Addr < initEnd {
			read = func(addr uint64, n int) ([]byte, error) { return f.ReadAt(addr, n) }
			initFuncs++
		}
		code, err := read(s.Addr, int(s.Size))
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v (skipped)", s.Name, err))
			continue
		}
		if img, err := f.ReadAt(s.Addr, int(s.Size)); err == nil && !bytes.Equal(img, code) {
			rep.KcoreDiffers++
		}
		pl, err := pred.PredictFunc(s, code, nb, rep.Optimization)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v (skipped)", s.Name, err))
			continue
		}
		rep.Functions = append(rep.Functions, s.Name)
		planned = append(planned, ThinBoundaries(pl, args.Boundaries)...)
	}
	if args.Boundaries > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("at most %d instruction boundaries probed per function, spread over it from the first", args.Boundaries))
	}
	if initFuncs > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d __init functions (freed after boot) predicted from the vmlinux bytes", initFuncs))
	}
	mark("predict", t0)
	e.Logf("kboost-verify: %d functions, %d probes predicted in %v", len(rep.Functions), len(planned), time.Since(t0).Round(time.Millisecond))

	dir, err := tracingDir()
	if err != nil {
		return err
	}
	events, err := openEvents(dir)
	if err != nil {
		return err
	}
	defer events.Close()
	register := func(pl *Planned) bool { return events.Register(&pl.Rec) }

	// Non-boundaries first, never enabled: one that is accepted is removed at once.
	t1 := time.Now()
	for i := range planned {
		pl := &planned[i]
		if pl.Rec.Boundary {
			continue
		}
		pl.Rec.Round = 0
		if register(pl) {
			if l := ParseKprobesList(readOr(kprobesList)); len(l) > 0 {
				pl.Rec.Kernel.Addr = l[0].Addr
				pl.Rec.Kernel.Ftrace = l[0].Has("FTRACE")
			}
			if err := clearEvents(dir); err != nil {
				return err
			}
		}
	}
	mark("non_boundary", t1)

	wait := time.Duration(args.OptimizeWaitMS) * time.Millisecond
	if wait == 0 {
		wait = 3 * time.Second
	}
	rounds := PlanRounds(planned, args.Spacing)
	t2 := time.Now()
	var pages []uint64 // slot pages known so far
	phase := map[string]time.Duration{}
	lap := time.Now()
	tick := func(name string) { phase[name] += time.Since(lap); lap = time.Now() }
	for r, idx := range rounds {
		if args.MaxRounds > 0 && r >= args.MaxRounds {
			rep.Notes = append(rep.Notes, fmt.Sprintf("stopped after %d of %d rounds (max_rounds)", r, len(rounds)))
			break
		}
		rep.Rounds = r + 1
		lap = time.Now()
		before := SlotPages{}
		for _, a := range pages {
			if b, err := kc.Read(a, 4096); err == nil {
				before[a] = b
			}
		}
		var ok []*Planned
		for _, i := range idx {
			pl := &planned[i]
			pl.Rec.Round = r + 1
			if register(pl) {
				ok = append(ok, pl)
			}
		}
		tick("register")
		// Known slot pages first; /proc/kallsyms (slow: seconds under TCG) is read
		// again only when a slot is not found on them (a new page).
		after := SlotPages{}
		for _, a := range pages {
			if b, err := kc.Read(a, 4096); err == nil {
				after[a] = b
			}
		}
		tick("slots")
		byAddr := map[uint64]*ListEntry{}
		list := ParseKprobesList(readOr(kprobesList))
		for i := range list {
			byAddr[list[i].Addr] = &list[i]
		}
		var needSlot []*Planned
		for _, pl := range ok {
			le := byAddr[pl.Decision.Addr]
			if le == nil {
				le = byAddr[pl.Addr]
			}
			if le == nil {
				pl.Rec.Note = "accepted but not in kprobes/list"
				continue
			}
			pl.Rec.Kernel.Addr = le.Addr
			pl.Rec.Kernel.Ftrace = le.Has("FTRACE")
			if !pl.Rec.Kernel.Ftrace {
				needSlot = append(needSlot, pl)
			}
		}
		pred.MatchSlots(needSlot, before, after)
		lost := 0
		for _, pl := range needSlot {
			if pl.Rec.Kernel.Slot == "" || pl.Rec.Kernel.Slot != pl.Rec.Predicted.Slot {
				lost++
			}
		}
		if lost > 0 {
			tick("match")
			after = readSlotPages(kc)
			pages = pages[:0]
			for a := range after {
				pages = append(pages, a)
			}
			for _, pl := range needSlot {
				pl.Rec.Kernel.Slot, pl.Rec.Kernel.SlotAddr, pl.Rec.Predicted.Slot, pl.Rec.Predicted.SlotAddr, pl.Rec.Note = "", 0, "", 0, ""
			}
			pred.MatchSlots(needSlot, before, after)
			tick("slots")
		}
		tick("match")
		if len(ok) > 0 {
			setEnabled(dir, true, r+1, &rep.Notes)
			tick("enable")
			recs := make([]*VerifyRecord, len(ok))
			for k, pl := range ok {
				recs[k] = &pl.Rec
			}
			w := *x86Optimizer
			w.Max = wait
			if note := w.await(r+1, recs, byAddr, kc.Read); note != "" {
				rep.Notes = append(rep.Notes, note)
			}
			tick("optimize")
			// The detour buffers, while the probes are optimized.
			for _, pl := range ok {
				if !pl.Rec.Kernel.Optimized && !pl.Rec.Predicted.Optimized {
					continue
				}
				if tmplErr != nil {
					pl.Rec.Note = "optslot: " + tmplErr.Error()
					continue
				}
				if !pl.Rec.Kernel.Optimized {
					continue
				}
				n := tmpl.SlotSize()
				if len(pl.OptBytes) > 0 {
					n = len(tmpl.Bytes) + len(pl.OptBytes) + 5
				}
				d, np, err := loader.ReadDetour(kc, pl.Rec.Kernel.Addr, n, tmpl, optPages)
				optPages = np
				if d.Bytes != nil {
					pl.Rec.Kernel.OptSlot, pl.Rec.Kernel.OptAddr = hex.EncodeToString(d.Bytes), d.Addr
				}
				if err != nil {
					pl.Rec.Note = "optslot: " + err.Error()
					pl.Rec.Kernel.OptSlot = "" // not a detour slot: nothing to compare with
					continue
				}
				if pl.Rec.Predicted.Optimized {
					img, err := pred.DetourImage(tmpl, pl, d.Addr)
					if err != nil {
						pl.Rec.Note = "optslot: " + err.Error()
					}
					pl.Rec.Predicted.OptSlot, pl.Rec.Predicted.OptAddr = img, d.Addr
				}
			}
			tick("detour")
			setEnabled(dir, false, r+1, &rep.Notes)
			tick("disable")
		}
		if err := clearEvents(dir); err != nil {
			return err
		}
		tick("clear")
		e.Logf("kboost-verify: round %d/%d: %d probes, %d accepted, %v", r+1, len(rounds), len(idx), len(ok), time.Since(t2).Round(time.Millisecond))
	}
	for k, d := range phase {
		rep.TimingMS["round_"+k] = d.Milliseconds()
	}
	mark("rounds", t2)
	if l := bytes.TrimSpace(readOr(kprobesList)); len(l) > 0 {
		rep.Leftover = string(l)
	}
	for i := range planned {
		rep.Records = append(rep.Records, planned[i].Rec)
	}
	mark("total", t0)
	return e.PutJSON("kboost-verify.json", rep)
}
