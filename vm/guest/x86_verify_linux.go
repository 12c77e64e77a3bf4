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

// stepVerify records what the kernel does with probes at the planned offsets
// of the chosen functions (X86Record; the host predicts them).
func stepVerify(e *Env, raw json.RawMessage) error {
	var args VerifyArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("kboost-verify arguments: %w", err)
		}
	}
	t0 := time.Now()
	rep := X86Record{VerifyReport: VerifyReport{TimingMS: map[string]int64{}}}
	mark := func(name string, since time.Time) { rep.TimingMS[name] = time.Since(since).Milliseconds() }
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		rep.Release = unix.ByteSliceToString(u.Release[:])
	}

	// The live kernel's own view: kallsyms, kcore.
	_ = os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0)
	ksb, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return err
	}
	e.Put(X86KallsymsFile, ksb)
	syms, err := kimage.ParseSymbolMap(bytes.NewReader(ksb))
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
	policy := args.Policy
	if policy == "" && f.Arch != nil {
		if p, _ := boost.ForKernel(rep.Release, f.Arch.Mode); p != nil {
			policy = p.Name
		}
	}
	planner, err := NewX86Planner(policy)
	if err != nil {
		return err
	}
	rep.Policy = planner.Policy.Name
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
		rep.TemplateErr = tmplErr.Error()
		rep.Notes = append(rep.Notes, "optprobe template: "+tmplErr.Error())
	} else {
		rep.Template = tmpl
		rep.Notes = append(rep.Notes, fmt.Sprintf("optprobe template at %#x: %d bytes (clac +%d, val +%d, call +%d), detour slots of %d bytes, SMAP %v",
			tmpl.Entry, len(tmpl.Bytes), tmpl.Clac, tmpl.Val, tmpl.Call, tmpl.SlotSize(), tmpl.SMAP))
	}
	var optPages []uint64
	funcs, err := SelectX86Funcs(f, &args)
	if err != nil {
		return err
	}
	nb := args.NonBoundary
	if nb == 0 {
		nb = 2
	}
	// __init code is freed after boot: kcore shows whatever reuses the memory
	// there, so those functions' bytes are the vmlinux's (the kernel refuses
	// them before decoding anything).
	var initStart, initEnd uint64
	if a, ok := f.Symbols.ByName("_sinittext"); ok {
		if b, ok := f.Symbols.ByName("_einittext"); ok {
			initStart, initEnd = a.Addr, b.Addr
		}
	}
	initFuncs := 0
	var planned []Planned
	byName := map[string]*x86Func{}
	for _, s := range funcs {
		read := kc.Read
		init := s.Addr >= initStart && s.Addr < initEnd
		if init {
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
		pl, lens, err := planner.Plan(s, code, nb)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v (skipped)", s.Name, err))
			continue
		}
		rep.Functions = append(rep.Functions, s.Name)
		rep.Funcs = append(rep.Funcs, KernelFunc{Name: s.Name, Addr: s.Addr, Size: s.Size, Init: init, Bytes: hex.EncodeToString(code)})
		byName[s.Name] = &x86Func{sym: s, code: code, lens: lens}
		planned = append(planned, ThinBoundaries(pl, args.Boundaries)...)
	}
	if args.Boundaries > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("at most %d instruction boundaries probed per function, spread over it from the first", args.Boundaries))
	}
	if initFuncs > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d __init functions (freed after boot): their bytes are the vmlinux's", initFuncs))
	}
	mark("plan", t0)
	e.Logf("kboost-verify: %d functions, %d probes planned in %v", len(rep.Functions), len(planned), time.Since(t0).Round(time.Millisecond))

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
	var pages []uint64 // the slot pages after the last round
	var slots X86Slots
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
		before := kc.ReadPages(pages)
		var ok []*Planned
		for _, i := range idx {
			pl := &planned[i]
			pl.Rec.Round = r + 1
			if register(pl) {
				ok = append(ok, pl)
			}
		}
		tick("register")
		// The slot pages as they are now, named by /proc/kallsyms (slow
		// under TCG: about a second): a page whose slots are all free is
		// given back, and its memory may come back as an optprobe's
		// detour page, whose copied instructions look like slots.
		after := readSlotPages(kc)
		pages = pages[:0]
		for a := range after {
			pages = append(pages, a)
		}
		tick("slots")
		byAddr := map[uint64]*ListEntry{}
		list := ParseKprobesList(readOr(kprobesList))
		for i := range list {
			byAddr[list[i].Addr] = &list[i]
		}
		claimSlots(&slots, matchListed(ok, list, byName), byName, before, after)
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
			// The detour buffers (a whole detour slot each), while the probes
			// are optimized.
			for _, pl := range ok {
				if !pl.Rec.Kernel.Optimized || tmplErr != nil {
					continue
				}
				d, np, err := loader.ReadDetour(kc, pl.Rec.Kernel.Addr, tmpl.SlotSize(), tmpl, optPages)
				optPages = np
				if err != nil {
					pl.Rec.Note = "optslot: " + err.Error()
					continue
				}
				pl.Rec.Kernel.OptSlot, pl.Rec.Kernel.OptAddr = hex.EncodeToString(d.Bytes), d.Addr
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
