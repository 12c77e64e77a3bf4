//go:build linux

package guest

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"golang.org/x/sys/unix"
)

func init() {
	Register(ARM64VerifyStep, func(e *Env, raw json.RawMessage) error { return stepVerifyFixed(e, raw, ARM64Probes) })
}

// insnPages reads the kprobe_insn_page addresses from /proc/kallsyms (slow
// under TCG: seconds).
func insnPages() []uint64 {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return nil
	}
	ents, _ := kimage.ParseSymbolLines(b)
	var out []uint64
	for _, e := range ents {
		if e.Name == loader.InsnPageSymbol && e.Module == loader.SlotPageModule {
			out = append(out, e.Addr)
		}
	}
	return out
}

// readSpan reads n bytes at addr in requests of at most MaxMemRead bytes.
func readSpan(mem MemReader, addr uint64, n int) ([]byte, error) {
	out := make([]byte, 0, n)
	for len(out) < n {
		b, err := mem.Read(addr+uint64(len(out)), min(n-len(out), MaxMemRead))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// readPages reads the slot pages at addrs (nothing when mem is nil); a page
// that cannot be read is left out, and the first error returned.
func readPages(mem MemReader, addrs []uint64) (map[uint64][]byte, error) {
	m := map[uint64][]byte{}
	if mem == nil {
		return m, nil
	}
	var first error
	for _, a := range addrs {
		if b, err := mem.Read(a, 4096); err == nil {
			m[a] = b
		} else if first == nil {
			first = err
		}
	}
	return m, first
}

// stepVerifyFixed records the kernel's kprobe decisions for every boundary of
// the chosen functions of a fixed-width instruction set; see ARM64VerifyArgs.
func stepVerifyFixed(e *Env, raw json.RawMessage, arch *ProbeArch) error {
	var args ARM64VerifyArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("%s arguments: %w", arch.Step, err)
		}
	}
	t0 := time.Now()
	rep := ARM64Report{Arch: arch.Name, ErrorLogs: map[string]string{}}
	rep.TimingMS = map[string]int64{}
	mark := func(name string, since time.Time) { rep.TimingMS[name] = time.Since(since).Milliseconds() }
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		rep.Release = unix.ByteSliceToString(u.Release[:])
	}

	// The kernel's own view: kallsyms, kcore, the ftrace and kprobe tables.
	_ = os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0)
	ksb, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return err
	}
	ents, err := kimage.ParseSymbolLines(ksb)
	if err != nil {
		return err
	}
	funcs, count := CoreFuncs(ents)
	textStart, ok1 := SymbolAddr(ents, "_stext")
	textEnd, ok2 := SymbolAddr(ents, "_etext")
	if !ok1 || !ok2 {
		return errors.New("kallsyms has no _stext/_etext")
	}
	initStart, _ := SymbolAddr(ents, "_sinittext")
	initEnd, _ := SymbolAddr(ents, "_einittext")
	sel, err := SelectCoreFuncs(funcs, count, &args, textStart, textEnd, initStart, initEnd)
	if err != nil {
		return err
	}
	mark("kallsyms", t0)
	dir, err := tracingDir()
	if err != nil {
		return err
	}
	traced := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(dir, "available_filter_functions")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 0 {
				traced[f[0]] = true
			}
		}
	} else {
		rep.Notes = append(rep.Notes, "available_filter_functions: "+err.Error())
	}
	blb, _ := os.ReadFile("/sys/kernel/debug/kprobes/blacklist")
	rep.Blacklist = string(blb)
	bl := loader.ParseBlacklist(blb)

	rep.TextStart, rep.TextEnd, rep.InitStart, rep.InitEnd = textStart, textEnd, initStart, initEnd
	for _, n := range arch.Symbols {
		if a, ok := SymbolAddr(ents, n); ok {
			if rep.Symbols == nil {
				rep.Symbols = map[string]uint64{}
			}
			rep.Symbols[n] = a
		}
	}

	var kc *loader.Kcore
	var slotMem MemReader // where the slot pages are read; nil: nowhere
	if !arch.NoKcore {
		if kc, err = loader.OpenKcore(); err != nil {
			return err
		}
		defer kc.Close()
		slotMem, rep.SlotsBy = kc, "kcore"
	} else if hm := e.HostMemory(0); hm != nil {
		var ttb uint64
		if arch.KernelTTB != nil {
			if ttb, err = arch.KernelTTB(); err != nil {
				return err
			}
		}
		slotMem, rep.SlotsBy = e.HostMemory(ttb), "host"
		rep.Notes = append(rep.Notes, "no /proc/kcore: function bytes and slot pages read by the host through QEMU")
	} else {
		rep.Notes = append(rep.Notes, "no /proc/kcore: function bytes from the host's kernel image, no slots read")
	}
	rep.SlotsRead = slotMem != nil
	misaligned := args.Misaligned
	if misaligned == 0 {
		misaligned = 2
	}
	type fnPlan struct {
		recs []*VerifyRecord
	}
	want := map[*VerifyRecord]uint64{} // the probed address: symbol + offset
	var plans []fnPlan
	for _, s := range sel {
		kf := KernelFunc{Name: s.Name, Addr: s.Addr, Size: s.Size, Traced: traced[s.Name], Init: s.Addr >= initStart && s.Addr < initEnd}
		for _, b := range bl {
			if b.Start < s.Addr+s.Size && s.Addr < b.End {
				kf.Blacklist = append(kf.Blacklist, b.Symbol)
			}
		}
		var code []byte
		if kc != nil {
			if code, err = kc.Read(s.Addr, int(s.Size)); err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %v (skipped)", s.Name, err))
				continue
			}
			kf.Bytes = hex.EncodeToString(code)
		} else if slotMem != nil {
			// The running kernel's bytes, through the host: the image's differ
			// where the kernel patched itself at boot.
			if code, err = readSpan(slotMem, s.Addr, int(s.Size)); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			kf.Bytes = hex.EncodeToString(code)
		}
		bounds, others := arch.ProbeOffsets(s.Size, misaligned)
		var fp fnPlan
		for _, off := range bounds {
			r := &VerifyRecord{Func: s.Name, Off: off, Boundary: true, Round: -1}
			if code != nil {
				r.Bytes = hex.EncodeToString(code[off : off+arch.Width])
			}
			fp.recs = append(fp.recs, r)
		}
		for _, off := range others {
			fp.recs = append(fp.recs, &VerifyRecord{Func: s.Name, Off: off, Round: -1})
		}
		for _, r := range fp.recs {
			want[r] = s.Addr + r.Off
		}
		rep.Functions = append(rep.Functions, s.Name)
		rep.Funcs = append(rep.Funcs, kf)
		plans = append(plans, fp)
	}
	mark("prepare", t0)
	e.Logf("%s: %d functions, %d with probes planned in %v", arch.Step, len(sel), len(plans), time.Since(t0).Round(time.Millisecond))

	events, err := openEvents(dir)
	if err != nil {
		return err
	}
	defer events.Close()
	events.ErrorLogs = rep.ErrorLogs
	register := events.Register

	roundSize := args.RoundSize
	if roundSize <= 0 {
		roundSize = 384
	}
	var pages []uint64
	var last map[uint64][]byte
	var m SlotMatcher
	m.Arch = arch
	t1 := time.Now()
	phase := map[string]time.Duration{}
	lap := time.Now()
	tick := func(name string) { phase[name] += time.Since(lap); lap = time.Now() }
	for i := 0; i < len(plans); {
		// A round: whole functions, at most roundSize probes (one function more
		// if the first is larger).
		var round []*VerifyRecord
		for len(round) == 0 || i < len(plans) && len(round)+len(plans[i].recs) <= roundSize {
			round = append(round, plans[i].recs...)
			i++
			if i == len(plans) {
				break
			}
		}
		rep.Rounds++
		lap = time.Now()
		// The pages as the previous round left them: read again from kcore;
		// through the host (slow), the previous round's reading stands
		// (removing probes only marks their slots free).
		before := last
		if before == nil || rep.SlotsBy != "host" {
			if before, err = readPages(slotMem, pages); err != nil && rep.SlotsBy == "host" {
				return err
			}
		}
		var ok []*VerifyRecord
		for _, r := range round {
			r.Round = rep.Rounds
			if register(r) {
				ok = append(ok, r)
			}
		}
		tick("register")
		list := ParseKprobesList(readOr(kprobesList))
		byAddr := map[uint64]*ListEntry{}
		for j := range list {
			byAddr[list[j].Addr] = &list[j]
		}
		tick("list")
		need := false
		for _, r := range ok {
			le := byAddr[want[r]]
			if le == nil {
				r.Note = "accepted but not in kprobes/list"
				continue
			}
			r.Kernel.Addr = le.Addr
			r.Kernel.Ftrace = le.Has("FTRACE")
			need = need || (r.Boundary && !r.Kernel.Ftrace)
		}
		if arch.Optimizer != nil && len(ok) > 0 {
			if setEnabled(dir, true, rep.Rounds, &rep.Notes) {
				var read func(addr uint64, n int) ([]byte, error)
				if kc != nil {
					read = kc.Read
				}
				if note := arch.Optimizer.await(rep.Rounds, ok, byAddr, read); note != "" {
					rep.Notes = append(rep.Notes, note)
				}
				setEnabled(dir, false, rep.Rounds, &rep.Notes)
			}
			tick("optimize")
		}
		if need && len(pages) == 0 && slotMem != nil {
			pages = insnPages()
			tick("kallsyms")
		}
		after, err := readPages(slotMem, pages)
		if err != nil && rep.SlotsBy == "host" {
			return err // through kcore, an unreadable page is left out
		}
		last = after
		tick("slots")
		if kc == nil {
			// No instruction bytes here: the host matches the slots once it
			// has the bytes (MatchRecordedSlots).
			if slotMem != nil {
				rs := RoundSlots{Round: rep.Rounds, Pages: map[uint64]string{}}
				for a, b := range after {
					rs.Pages[a] = hex.EncodeToString(b)
				}
				rep.RoundSlots = append(rep.RoundSlots, rs)
			}
			ok = nil
		}
		m.Reset(before, after)
		for _, r := range ok {
			if r.Kernel.Ftrace || r.Kernel.Addr == 0 {
				continue
			}
			inst, _ := hex.DecodeString(r.Bytes)
			if !r.Boundary && kc != nil {
				if b, err := kc.Read(r.Kernel.Addr&^(arch.Width-1), int(arch.Width)); err == nil {
					inst = b
				}
			}
			if a, b, found := m.Claim(inst); found {
				r.Kernel.Slot, r.Kernel.SlotAddr = hex.EncodeToString(b), a
			}
		}
		tick("match")
		if err := clearEvents(dir); err != nil {
			return err
		}
		tick("clear")
		if rep.Rounds%10 == 1 || i == len(plans) {
			e.Logf("%s: round %d: %d/%d functions, %d probes, %d accepted, %v", arch.Step, rep.Rounds, i, len(plans), len(round), len(ok), time.Since(t1).Round(time.Millisecond))
		}
	}
	for k, d := range phase {
		rep.TimingMS["round_"+k] = d.Milliseconds()
	}
	mark("rounds", t1)
	// The slot pages must be the same at the end: a page allocated and freed
	// in between would have hidden slots from the matcher.
	if len(pages) > 0 {
		end := insnPages()
		if fmt.Sprint(end) != fmt.Sprint(pages) {
			rep.Notes = append(rep.Notes, fmt.Sprintf("slot pages changed during the run: %#x, then %#x", pages, end))
		}
	}
	rep.SlotPages = pages
	if l := bytes.TrimSpace(readOr(kprobesList)); len(l) > 0 {
		rep.Leftover = string(l)
	}
	for _, fp := range plans {
		for _, r := range fp.recs {
			rep.Records = append(rep.Records, *r)
		}
	}
	// Predictions from the recorded bytes: the same code the host runs on a
	// cached record.
	var cfg *kimage.KConfig
	if c, _, err := kimage.FindRunningConfig(); err == nil {
		cfg = c
	} else {
		rep.Notes = append(rep.Notes, "kernel config: "+err.Error())
	}
	t2 := time.Now()
	if !arch.NoKcore {
		PredictFixedReport(&rep, arch, args.Policy, cfg, nil)
	} // else the host predicts, with the bytes of the kernel image
	mark("predict", t2)
	mark("total", t0)
	return e.PutJSON(arch.File, rep)
}
