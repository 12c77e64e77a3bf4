//go:build linux

package loader

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kboost/kboost/kimage"
)

// SlotPageAddrs lists the pages kallsyms names name ("kprobe_insn_page" or
// "kprobe_optinsn_page", module __builtin__kprobes). Pages appear when the
// kernel first needs them, so the list is read afresh each time.
func SlotPageAddrs(name string) ([]uint64, error) {
	f, err := os.Open("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []uint64
	sc := bufio.NewScanner(f)
	mod := []byte("[" + SlotPageModule + "]")
	for sc.Scan() {
		l := sc.Bytes()
		if !bytes.Contains(l, mod) {
			continue
		}
		fs := strings.Fields(string(l))
		if len(fs) >= 3 && fs[2] == name {
			if a, err := strconv.ParseUint(fs[0], 16, 64); err == nil && a != 0 {
				out = append(out, a)
			}
		}
	}
	return out, sc.Err()
}

// ReadPages reads whole pages at the given addresses from kcore (pages that
// cannot be read are left out).
func (k *Kcore) ReadPages(addrs []uint64) SlotPages {
	sp := SlotPages{}
	for _, a := range addrs {
		if b, err := k.Read(a, 4096); err == nil {
			sp[a] = b
		}
	}
	return sp
}

// ReadSlotPages reads every page kallsyms currently names name.
func (k *Kcore) ReadSlotPages(name string) (SlotPages, error) {
	addrs, err := SlotPageAddrs(name)
	if err != nil {
		return nil, err
	}
	return k.ReadPages(addrs), nil
}

// CPUHasFlag reports whether the boot CPU's /proc/cpuinfo flags include flag
// (the kernel clears flags it does not use, e.g. smap without CONFIG_X86_SMAP).
func CPUHasFlag(flag string) bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, f := range strings.Fields(v) {
			if f == flag {
				return true
			}
		}
		return false // the first CPU is the boot CPU
	}
	return false
}

// ReadOptTemplate reads the kernel's optprobe template from kcore at the
// addresses kallsyms gives its symbols (optprobe_template_entry, _clac, _val,
// _call, _end; optimized_callback), and the CPU's SMAP flag.
func ReadOptTemplate(kc *Kcore, syms *kimage.SymTab) (*OptTemplate, error) {
	addr := map[string]uint64{}
	for _, n := range []string{"optprobe_template_entry", "optprobe_template_clac", "optprobe_template_val", "optprobe_template_call", "optprobe_template_end", "optimized_callback"} {
		s, ok := syms.ByName(n)
		if !ok {
			return nil, fmt.Errorf("loader: %s not in kallsyms (a kernel without CONFIG_OPTPROBES or CONFIG_KALLSYMS_ALL)", n)
		}
		addr[n] = s.Addr
	}
	e := addr["optprobe_template_entry"]
	n := int(addr["optprobe_template_end"] - e)
	t := &OptTemplate{Entry: e, Clac: int(addr["optprobe_template_clac"] - e), Val: int(addr["optprobe_template_val"] - e),
		Call: int(addr["optprobe_template_call"] - e), Callback: addr["optimized_callback"], SMAP: CPUHasFlag("smap")}
	if n <= 0 || n > 512 {
		return nil, fmt.Errorf("loader: implausible optprobe template size %d", n)
	}
	b, err := kc.Read(e, n)
	if err != nil {
		return nil, err
	}
	t.Bytes = b
	return t, t.Check()
}

// Detour is an optimized probe's detour buffer as the kernel has it.
type Detour struct {
	Addr  uint64 // from the jmp at the probed address
	Bytes []byte
	// Page is the kprobe_optinsn_page holding it (0: on no such page) and
	// Index the detour slot on that page.
	Page  uint64
	Index int
}

// ReadDetour reads the detour buffer of the optimized probe at addr: the jmp
// there names it; n bytes are read. pages are the known kprobe_optinsn_page
// addresses; kallsyms is read again when the detour is on none of them.
func ReadDetour(kc *Kcore, addr uint64, n int, t *OptTemplate, pages []uint64) (Detour, []uint64, error) {
	var d Detour
	b, err := kc.Read(addr, 5)
	if err != nil {
		return d, pages, err
	}
	target, ok := DetourTarget(addr, b)
	if !ok {
		return d, pages, fmt.Errorf("loader: no jmp to a detour buffer at %#x (%x)", addr, b)
	}
	d.Addr = target
	if d.Bytes, err = kc.Read(target, n); err != nil {
		return d, pages, err
	}
	find := func() bool {
		for _, p := range pages {
			if target >= p && target < p+4096 {
				d.Page = p
				return true
			}
		}
		return false
	}
	if !find() {
		if np, err := SlotPageAddrs(OptinsnPageSymbol); err == nil {
			pages = np
			find()
		}
	}
	if d.Page == 0 {
		return d, pages, fmt.Errorf("loader: the jmp at %#x goes to %#x, on no %s", addr, target, OptinsnPageSymbol)
	}
	off := int(target - d.Page)
	if off%t.SlotSize() != 0 {
		return d, pages, fmt.Errorf("loader: detour %#x is %d bytes into its page, not at a %d-byte slot", target, off, t.SlotSize())
	}
	d.Index = off / t.SlotSize()
	return d, pages, nil
}

// SlotSnapshot reads the kprobe_insn_page pages before probes are added (see
// Readback).
func (lv *Live) SlotSnapshot() SlotPages {
	sp, _ := lv.Kcore.ReadSlotPages(InsnPageSymbol)
	return sp
}

// Readback reads what the kernel made of the probe x predicted, now that it is
// in place with list entry le: its instruction slot on a kprobe_insn_page
// (before: SlotSnapshot taken before it was added) and, when it is listed
// [OPTIMIZED], its detour buffer on a kprobe_optinsn_page; each next to
// kboost's prediction for the same address.
func (lv *Live) Readback(x *Expectation, le *ListEntry, before SlotPages) Readback {
	var rb Readback
	if le == nil || x.Errno != "" || le.Has("FTRACE") {
		return rb
	}
	if x.Decision.SlotLen > 0 {
		addrs, err := SlotPageAddrs(InsnPageSymbol)
		if err != nil {
			rb.Notes = append(rb.Notes, err.Error())
		}
		sm := &SlotMatch{Decision: &x.Decision, Inst: x.Bytes}
		lv.Pred.MatchSlots([]*SlotMatch{sm}, before, lv.Kcore.ReadPages(addrs))
		rb.SlotAddr = sm.SlotAddr
		rb.Slot, rb.PredictedSlot = hex.EncodeToString(sm.Kernel), hex.EncodeToString(sm.Predicted)
		ok := sm.Kernel != nil && rb.Slot == rb.PredictedSlot
		rb.SlotAgree = &ok
		if sm.Note != "" {
			rb.Notes = append(rb.Notes, "slot: "+sm.Note)
		}
	}
	if !le.Has("OPTIMIZED") && !x.Optimized {
		return rb
	}
	ok := false
	rb.OptSlotAgree = &ok
	if lv.template == nil {
		t, err := ReadOptTemplate(lv.Kcore, lv.Pred.File.Symbols)
		if err != nil {
			rb.Notes = append(rb.Notes, "optslot: "+err.Error())
			return rb
		}
		lv.template = t
	}
	t := lv.template
	// [OPTIMIZED] is listed when the optimizer is queued; the jmp follows.
	deadline := time.Now().Add(3 * time.Second)
	for {
		if b, err := lv.Kcore.Read(le.Addr, 1); err == nil && b[0] == 0xE9 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	n := t.SlotSize()
	if len(x.OptBytes) > 0 {
		n = len(t.Bytes) + len(x.OptBytes) + 5
	}
	d, pages, err := ReadDetour(lv.Kcore, le.Addr, n, t, lv.optPages)
	lv.optPages = pages
	if err != nil {
		rb.Notes = append(rb.Notes, "optslot: "+err.Error())
		return rb
	}
	rb.Detour, rb.OptSlot = d.Addr, hex.EncodeToString(d.Bytes)
	if !x.Optimized || len(x.OptBytes) == 0 {
		rb.Notes = append(rb.Notes, "optslot: the kernel optimized a probe kboost did not predict optimized")
		return rb
	}
	img, known, err := lv.Pred.DetourImage(t, x.Addr, x.OptBytes, d.Addr)
	if err != nil {
		rb.Notes = append(rb.Notes, "optslot: "+err.Error())
		return rb
	}
	rb.PredictedOptSlot = MaskedHex(img, known)
	ok = MaskedEqual(rb.PredictedOptSlot, rb.OptSlot)
	return rb
}
