package native

import (
	"fmt"

	"github.com/kboost/kboost/kernelsim"
)

// LengthOutcome is what the CPU did with a candidate byte string in the
// hardware length oracle.
type LengthOutcome uint8

const (
	// LenExecuted: the instruction ran (the single-step trap came after it).
	LenExecuted LengthOutcome = iota
	// LenFaulted: the CPU took all N bytes, then the instruction faulted
	// (memory fault, #GP of a privileged instruction, #DE, int3, a trapped
	// system call...). The length is the CPU's.
	LenFaulted
	// LenRejected: #UD (SIGILL) with N bytes available and no request for
	// more: the CPU does not accept the encoding.
	LenRejected
	// LenTooShort: the CPU still fetched beyond all bytes given (or 15).
	LenTooShort
	// LenUnknown: the probe timed out or crashed the sandbox.
	LenUnknown
)

func (o LengthOutcome) String() string {
	switch o {
	case LenExecuted:
		return "executed"
	case LenFaulted:
		return "faulted"
	case LenRejected:
		return "rejected (#UD)"
	case LenTooShort:
		return "needs more bytes"
	case LenUnknown:
		return "unknown"
	}
	return fmt.Sprintf("LengthOutcome(%d)", uint8(o))
}

// HWLen is the hardware length oracle's answer for one byte string.
type HWLen struct {
	N       int             // the CPU's instruction length (see Outcome)
	Outcome LengthOutcome   //
	Fault   kernelsim.Fault // the signal of the deciding probe
	Probes  int             // executions used
}
