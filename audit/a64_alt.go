package audit

import (
	"fmt"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

// RuleA64Alternative is the reason id of a boundary inside an arm64 CPU
// alternative site: its bytes depend on the CPU the kernel boots on.
const RuleA64Alternative = "arm64.alternative"

// markAlternatives puts a reason naming the cpucap first on every boundary
// inside an alternative site.
func markAlternatives(tab *kimage.A64Alternatives, a *boost.FuncAudit, sites []kimage.A64AltSite) {
	for _, s := range sites {
		start, end := s.Alt.Orig, s.Alt.Orig+uint64(s.Alt.OrigLen)
		text := fmt.Sprintf("arm64 alternative: cpucap %s, %s", tab.Caps.Name(s.Alt.Cap), s.Status)
		switch {
		case s.Alt.Callback && s.Status == kimage.AltNotApplied:
			text += fmt.Sprintf(" (callback %s; bytes as in the file)", tab.Callback(s.Alt))
		case s.Alt.Callback:
			text += fmt.Sprintf(" (callback %s)", tab.Callback(s.Alt))
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

// SetCPUCaps makes p apply f's arm64 CPU alternatives for the cpucaps of list
// (kimage.Patcher.SetCPUCaps), the boundaries inside a site carrying
// RuleA64Alternative.
func SetCPUCaps(p *kimage.Patcher, f *kimage.File, list string) (note string, err error) {
	return p.SetCPUCaps(f, list, RuleA64Alternative)
}
