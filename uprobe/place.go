package uprobe

import (
	"fmt"
	"strings"

	"github.com/kboost/kboost/decode"
)

// pathCost ranks paths for Cheapest: lower is cheaper; refused sites and
// sites with a hazard are never chosen.
func pathCost(s *Site) int {
	if s.Path == PathRefused || len(s.Hazards) > 0 {
		return 1 << 30
	}
	return int(s.Path)
}

// Cheapest moves a probe at offset off of the audited function to the
// cheapest point that runs exactly as often: the cheapest site (optimized,
// else emulated, else single-stepped; never one with a hazard) from off to the
// end of its basic block (the first branch, call or return, included), where
// no relative branch of the function lands after off. Jump tables are not
// known and assumed not to land inside the block.
func Cheapest(fa *FuncAudit, off uint64) (Site, string, error) {
	i := -1
	for k := range fa.Sites {
		if fa.Sites[k].Off == off {
			i = k
		}
	}
	if i < 0 {
		return Site{}, "", fmt.Errorf("uprobe: %s+%#x is not an instruction boundary", fa.Func.Name, off)
	}
	targets := map[uint64]bool{}
	for k := range fa.insts {
		if in := &fa.insts[k]; in.Op != nil && in.Branch.Relative() {
			targets[in.Target] = true
		}
	}
	best := i
	for k := i; k < len(fa.Sites); k++ {
		if k > i && targets[fa.Func.Addr+fa.Sites[k].Off] {
			break // a branch lands here: it may run more often
		}
		if pathCost(&fa.Sites[k]) < pathCost(&fa.Sites[best]) {
			best = k
		}
		if in := &fa.insts[k]; in.Op == nil || in.Branch != decode.BranchNone {
			break
		}
	}
	s := fa.Sites[best]
	if best == i {
		return s, "the requested point is already the cheapest in its basic block", nil
	}
	why := fmt.Sprintf("cheaper (%s, was %s)", s.Path, fa.Sites[i].Path)
	if from := &fa.Sites[i]; from.Path == PathRefused || len(from.Hazards) > 0 {
		why = fmt.Sprintf("%s without the requested point's %s", s.Path, strings.Join(append(append([]string(nil), from.Hazards...), from.Errno), " "))
	}
	return s, fmt.Sprintf("+%#x (%s) runs exactly as often as +%#x in the same basic block: %s", s.Off, s.Asm, off, strings.TrimSpace(why)), nil
}
