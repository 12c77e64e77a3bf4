//go:build linux

package loader

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// Blacklist is debugfs' kprobes/blacklist file.
const Blacklist = "/sys/kernel/debug/kprobes/blacklist"

// Live is the running kernel as kboost reads it.
type Live struct {
	Pred         *Predictor
	Kcore        *Kcore
	Optimization bool   // debug.kprobes-optimization is 1
	ConfigFrom   string // where the configuration came from
	Source       string // "kcore" or the vmlinux path

	template *OptTemplate // read on first use (Readback)
	optPages []uint64     // kprobe_optinsn_page addresses seen so far
}

// OpenLive reads the running kernel: kallsyms, config (cfgPath, else
// /proc/config.gz or /boot/config-$(uname -r)), the debugfs blacklist and, for
// the kernel's tables, the vmlinux at vmlinux (nokaslr boots only) or else its
// memory through /proc/kcore (text, rodata and data; the init sections are
// freed, so ftrace sites come from the patched bytes at function entry).
func OpenLive(vmlinux, cfgPath string) (*Live, error) {
	if err := CheckKprobes(); err != nil {
		return nil, err
	}
	if err := CheckRoot(); err != nil {
		return nil, err
	}
	_ = os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0)
	syms, err := kimage.LoadSymbols("/proc/kallsyms")
	if err != nil {
		return nil, err
	}
	kc, err := OpenKcore()
	if err != nil {
		return nil, err
	}
	lv := &Live{Kcore: kc}
	var f *kimage.File
	if vmlinux != "" {
		if f, err = kimage.Open(vmlinux); err != nil {
			kc.Close()
			return nil, err
		}
		if slide := f.SetSymbols(syms); slide != 0 {
			kc.Close()
			return nil, fmt.Errorf("loader: %s is %#x away from the running kernel (KASLR): boot with nokaslr or omit the vmlinux", vmlinux, slide)
		}
		lv.Source = vmlinux
	} else {
		if f, err = kcoreFile(kc, syms); err != nil {
			kc.Close()
			return nil, err
		}
		lv.Source = "kcore"
	}
	var cfg *kimage.KConfig
	if cfgPath != "" {
		cfg, err = kimage.LoadKConfig(cfgPath)
		lv.ConfigFrom = cfgPath
	} else {
		cfg, lv.ConfigFrom, err = kimage.FindRunningConfig()
	}
	if err != nil {
		kc.Close()
		return nil, err
	}
	// The running kernel's release picks the policy (the nearest older modelled
	// version when it is not modelled).
	policy, polNote := "linux-6.1", ""
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil && f.Arch != nil {
		if p, note := boost.ForKernel(strings.TrimSpace(string(rel)), f.Arch.Mode); p != nil {
			policy, polNote = p.Name, note
		}
	}
	pred, err := NewPredictor(f, cfg, policy)
	if err != nil {
		kc.Close()
		return nil, err
	}
	if polNote != "" {
		pred.Notes = append(pred.Notes, polNote)
	}
	if vmlinux == "" {
		pred.Env.InferNotrace = true
		pred.Notes = append(pred.Notes, "no vmlinux: ftrace sites and notrace inferred from the patched nop at each function entry")
	}
	if err := addDebugfsBlacklist(pred.Env); err != nil {
		pred.Notes = append(pred.Notes, err.Error())
	}
	lv.Pred = pred
	if b, err := os.ReadFile("/proc/sys/debug/kprobes-optimization"); err == nil {
		lv.Optimization = strings.TrimSpace(string(b)) == "1"
	}
	return lv, nil
}

// Close releases /proc/kcore.
func (lv *Live) Close() error { return lv.Kcore.Close() }

// Expect predicts one probe on the running kernel.
func (lv *Live) Expect(s Spec) (Expectation, error) {
	x, err := lv.Pred.Expect(s, lv.Kcore.Read, lv.Optimization)
	if w := lv.busy(s); w != "" {
		x.Warnings = append(x.Warnings, w)
	}
	return x, err
}

// busy reports kprobes already in the function: under them /proc/kcore shows
// int3 or the optprobe jmp, not the instruction, so a prediction from kcore
// may be wrong there (give --vmlinux for the original bytes).
func (lv *Live) busy(spec Spec) string {
	s, _, ok := lv.Pred.Resolve(spec)
	if !ok {
		return ""
	}
	l, err := ReadKprobesList()
	if err != nil {
		return ""
	}
	n := 0
	for _, e := range l {
		if e.Addr >= s.Addr && e.Addr < s.Addr+s.Size {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d kprobe(s) already in %s: /proc/kcore shows their int3/jmp, not the instructions", n, s.Name)
}

// Place moves s to the cheapest point that runs exactly as often (Cheapest).
// A raw address stays an address.
func (lv *Live) Place(s Spec) (Spec, Placement, error) {
	if w := lv.busy(s); w != "" {
		return s, Placement{}, fmt.Errorf("loader: cannot place: %s", w)
	}
	sym, off, ok := lv.Pred.Resolve(s)
	if !ok {
		return s, Placement{}, fmt.Errorf("loader: cannot place %s: %w", s.Point(), kimage.ErrNoSymbol)
	}
	fa, err := lv.Pred.auditAt(sym, lv.Kcore.Read)
	if err != nil {
		return s, Placement{}, err
	}
	p, err := Cheapest(fa, off, lv.Optimization && !s.Return)
	if err != nil {
		return s, p, err
	}
	if s.Addr != 0 {
		s.Addr = sym.Addr + p.To
	} else {
		s.Offset = p.To
	}
	return s, p, nil
}

// kcoreFile wraps the kernel's text, rodata and data (up to the freed init
// sections) from /proc/kcore as an ELF for package kimage.
func kcoreFile(kc *Kcore, syms *kimage.SymTab) (*kimage.File, error) {
	addr := func(name string) (uint64, error) {
		s, ok := syms.ByName(name)
		if !ok {
			return 0, fmt.Errorf("loader: %s not in /proc/kallsyms (kernel without CONFIG_KALLSYMS_ALL?): give --vmlinux", name)
		}
		return s.Addr, nil
	}
	var secs []MemSection
	for _, r := range []struct{ name, start, end string }{
		{".text", "_stext", "_etext"},
		{".rodata", "__start_rodata", "__init_begin"},
	} {
		a, err := addr(r.start)
		if err != nil {
			return nil, err
		}
		e, err := addr(r.end)
		if err != nil {
			return nil, err
		}
		if e <= a || e-a > 1<<30 {
			return nil, fmt.Errorf("loader: implausible range %s..%s", r.start, r.end)
		}
		b := make([]byte, e-a)
		const chunk = 1 << 20
		for o := uint64(0); o < e-a; o += chunk {
			n := min(chunk, e-a-o)
			if d, err := kc.Read(a+o, int(n)); err == nil {
				copy(b[o:], d)
			}
		}
		secs = append(secs, MemSection{Name: r.name, Addr: a, Data: b, Exec: r.name == ".text"})
	}
	f, err := kimage.OpenBytes(MemoryELF(secs))
	if err != nil {
		return nil, err
	}
	f.Path = "/proc/kcore"
	f.SetSymbols(syms)
	return f, nil
}

// addDebugfsBlacklist adds the kernel's own blacklist (every NOKPROBE_SYMBOL
// function and blacklisted section) to the environment's sites.
func addDebugfsBlacklist(env *boost.Env) error {
	b, err := os.ReadFile(Blacklist)
	if err != nil {
		return fmt.Errorf("blacklist: %w (mount debugfs for the kernel's full blacklist)", err)
	}
	ss, ok := env.Sites.(*boost.StaticSites)
	if !ok || ss == nil {
		ss = &boost.StaticSites{}
		env.Sites = ss
	}
	for _, r := range ParseBlacklist(b) {
		ss.Blacklist = append(ss.Blacklist, boost.BlacklistRange{Span: boost.Span{Start: r.Start, End: r.End}, Kind: boost.BlacklistSymbol, Symbol: r.Symbol})
	}
	ss.BlacklistKnown = true
	sort.Slice(ss.Blacklist, func(i, j int) bool { return ss.Blacklist[i].Start < ss.Blacklist[j].Start })
	return nil
}
