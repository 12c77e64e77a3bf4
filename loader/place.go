package loader

import (
	"fmt"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// Cost ranks what a probe hit costs, cheapest first.
type Cost int

// Costs, cheapest first. Refused points have no cost and are never chosen.
const (
	CostFtrace     Cost = iota // ftrace call, no trap
	CostOptimized              // jmp to a detour buffer, no trap
	CostBoost                  // int3, then the slot jumps back
	CostEmulate                // int3, emulated in the handler
	CostSingleStep             // int3, slot, a second int3
	CostRefused
)

var costNames = [...]string{"ftrace", "optimized", "boost", "emulate", "singlestep", "refused"}

func (c Cost) String() string {
	if int(c) < len(costNames) {
		return costNames[c]
	}
	return fmt.Sprintf("Cost(%d)", int(c))
}

// CostOf ranks a decision (optimization: the optimizer is on and the probe
// has no post handler).
func CostOf(d *boost.Decision, optimization bool) Cost {
	switch {
	case d.Verdict == boost.Reject:
		return CostRefused
	case d.Verdict == boost.Ftrace:
		return CostFtrace
	case optimization && d.Optimizable:
		return CostOptimized
	case d.Verdict == boost.Boost:
		return CostBoost
	case d.Verdict == boost.Emulate:
		return CostEmulate
	}
	return CostSingleStep
}

// Placement is where Cheapest moved a request, and why.
type Placement struct {
	From, To uint64 // offsets in the function
	Cost     Cost
	Reason   string
}

// Cheapest moves a probe request at offset off of the audited function to the
// cheapest point that runs exactly as often: for the function entry, the ftrace
// site when there is one; otherwise the cheapest instruction from off to the end
// of its basic block (the first branch, call, return or trap, included), where
// no relative branch of the function lands after off. Indirect branch targets
// (jump tables) are not known and are assumed not to land inside the block.
func Cheapest(fa *boost.FuncAudit, off uint64, optimization bool) (Placement, error) {
	i := -1
	for k := range fa.Entries {
		if fa.Entries[k].Off == off {
			i = k
			break
		}
	}
	if i < 0 {
		return Placement{}, fmt.Errorf("loader: %s+%#x is not an instruction boundary", fa.Func.Name, off)
	}
	entry := off == 0 || fa.Endbr && off == 4
	if entry && fa.FtraceOff >= 0 {
		return Placement{From: off, To: uint64(fa.FtraceOff), Cost: CostFtrace,
			Reason: "function entry: the ftrace site runs exactly as often and costs no trap"}, nil
	}
	// Relative branch targets inside the function (a block boundary each).
	targets := map[uint64]bool{}
	for k := range fa.Entries {
		e := &fa.Entries[k]
		if e.DecodeOK && e.Inst.Branch.Relative() {
			targets[e.Inst.Target] = true
		}
	}
	best := Placement{From: off, To: off, Cost: CostOf(&fa.Entries[i].Decision, optimization)}
	best.Reason = "the requested point is already the cheapest in its block"
	for k := i; k < len(fa.Entries); k++ {
		e := &fa.Entries[k]
		if !e.DecodeOK {
			break
		}
		if k > i && targets[fa.Func.Addr+e.Off] {
			break // a branch lands here: it may run more often
		}
		if c := CostOf(&e.Decision, optimization); c < best.Cost {
			best.To, best.Cost = e.Off, c
			mn := "?"
			if e.Inst.Op != nil {
				mn = e.Inst.Op.Mnemonic
			}
			best.Reason = fmt.Sprintf("+%#x (%s) runs exactly as often as +%#x in the same basic block and is cheaper (%s)",
				e.Off, mn, off, c)
		}
		if e.Inst.Branch != decode.BranchNone {
			break
		}
	}
	return best, nil
}
