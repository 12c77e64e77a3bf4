package native

import (
	"fmt"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// DirectSlot builds the simplest out-of-line copy of c's code: the same
// bytes at the slot followed by "jmp rel32" back to the return address. It
// applies no fixups (RIP-relative operands, calls and branches are left as
// they are), which is what a slot model must improve on.
func DirectSlot(c *kernelsim.Case, l kernelsim.Layout) error {
	j, err := kernelsim.JmpRel32(c.SlotAddr(l)+uint64(len(c.Code)), c.ReturnAddr(l))
	if err != nil {
		return err
	}
	c.Slot = append(append(c.Slot[:0], c.Code...), j...)
	return nil
}

// CheckRate is the measured throughput of differential checks.
type CheckRate struct {
	Checks    int           // differential checks (each = two executions)
	Diverged  int           // checks whose two executions differed
	Elapsed   time.Duration // wall-clock time
	CPU       time.Duration // CPU time of the tracer and the sandbox together
	PerSecond float64       // checks per wall-clock second
	PerCPU    float64       // checks per CPU second (per core)
}

func (r CheckRate) String() string {
	return fmt.Sprintf("%d checks in %v (%.0f/s wall, %.0f/s per CPU-second), %d diverged",
		r.Checks, r.Elapsed.Round(time.Millisecond), r.PerSecond, r.PerCPU, r.Diverged)
}
