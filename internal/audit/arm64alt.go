package audit

import (
	"fmt"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// RuleA64Alternative is the reason id of a boundary inside an arm64 CPU
// alternative site: its bytes depend on the CPU the kernel boots on.
const RuleA64Alternative = "arm64.alternative"

// a64Alt is the alternatives part of an arm64 Patcher.
type a64Alt struct {
	tab  *kimage.A64Alternatives
	caps kimage.A64CapSet
}

// SetCPUCaps makes p apply f's CPU alternatives (arch/arm64/kernel/alternative.c)
// as the kernel does on a system with the cpucaps of list ("none", or
// comma-separated names from arch/arm64/tools/cpucaps; ALWAYS_BOOT and
// ALWAYS_SYSTEM are always in). It returns a note describing what is applied.
func (p *Patcher) SetCPUCaps(f *kimage.File, list string) (note string, err error) {
	tab, err := kimage.ARM64Alternatives(f)
	if err != nil {
		return "", err
	}
	caps, err := tab.Caps.ParseCaps(list)
	if err != nil {
		return "", err
	}
	p.alt = &a64Alt{tab: tab, caps: caps}
	var names []string
	for _, c := range caps.Caps() {
		names = append(names, tab.Caps.Name(c))
	}
	return fmt.Sprintf("CPU alternatives: %d sites from %s; applied as on a CPU with the cpucaps %s (numbered by %s), callbacks other than alt_cb_patch_nops and kvm_update_va_mask (VHE) not modelled; every boundary in a site carries %s", len(tab.Alts), tab.From, strings.Join(names, ","), tab.Caps.From, RuleA64Alternative), nil
}

// CountAlternatives is the number of alternative sites p knows (0 without SetCPUCaps).
func CountAlternatives(p *Patcher) int {
	if p == nil || p.alt == nil {
		return 0
	}
	return len(p.alt.tab.Alts)
}

// applyAlternatives patches b (the bytes at addr) and returns the sites met.
func (p *Patcher) applyAlternatives(addr uint64, b []byte) []kimage.A64AltSite {
	if p.alt == nil {
		return nil
	}
	return p.alt.tab.Apply(addr, b, &p.alt.caps)
}

func countApplied(sites []kimage.A64AltSite) int {
	n := 0
	for _, s := range sites {
		if s.Status == kimage.AltApplied || s.Status == kimage.AltNops {
			n++
		}
	}
	return n
}

// markAlternatives puts a reason naming the cpucap first on every boundary
// inside an alternative site.
func (p *Patcher) markAlternatives(a *boost.FuncAudit, sites []kimage.A64AltSite) {
	for _, s := range sites {
		start, end := s.Alt.Orig, s.Alt.Orig+uint64(s.Alt.OrigLen)
		text := fmt.Sprintf("arm64 alternative: cpucap %s, %s", p.alt.tab.Caps.Name(s.Alt.Cap), s.Status)
		switch {
		case s.Alt.Callback && s.Status == kimage.AltNotApplied:
			text += fmt.Sprintf(" (callback %s; bytes as in the file)", p.alt.tab.Callback(s.Alt))
		case s.Alt.Callback:
			text += fmt.Sprintf(" (callback %s)", p.alt.tab.Callback(s.Alt))
		case s.Status == kimage.AltNotApplied:
			text += " (bytes as in the file; a CPU with it runs the replacement)"
		case s.Status == kimage.AltApplied:
			text += " (the replacement, as patched at boot)"
		}
		for i := range a.Entries {
			e := &a.Entries[i]
			at := a.Func.Addr + e.Off
			if at < start || at >= end {
				continue
			}
			rs := make([]boost.Reason, 0, len(e.Decision.Reasons)+1)
			rs = append(rs, boost.Reason{Rule: RuleA64Alternative, Text: text})
			e.Decision.Reasons = append(rs, e.Decision.Reasons...)
		}
	}
}
