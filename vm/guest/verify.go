package guest

import (
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/loader"
)

// Outcome is what happens to one probe: the fields kboost predicts and the
// kernel shows.
type Outcome struct {
	Errno     string `json:"errno"`               // "" when accepted, else the errno name
	Addr      uint64 `json:"addr,omitempty"`      // the probed address (after IBT adjustment)
	Ftrace    bool   `json:"ftrace,omitempty"`    // [FTRACE]
	Optimized bool   `json:"optimized,omitempty"` // [OPTIMIZED] after the optimizer ran
	Slot      string `json:"slot,omitempty"`      // the instruction slot, hex
	SlotAddr  uint64 `json:"slot_addr,omitempty"` // kernel: where the slot is
	// OptSlot is an optimized probe's detour buffer, hex (the prediction in
	// loader.MaskedHex form: ".." where the kernel writes its own pointer), at
	// OptAddr, the target of the jmp at the probed address.
	OptSlot string `json:"optslot,omitempty"`
	OptAddr uint64 `json:"opt_addr,omitempty"`
}

// VerifyRecord is one probe: the prediction and what the kernel did.
type VerifyRecord struct {
	Func      string   `json:"func"`
	Off       uint64   `json:"off"`
	Boundary  bool     `json:"boundary"`
	Bytes     string   `json:"bytes,omitempty"` // the instruction (boundaries), hex, from kcore
	Verdict   string   `json:"verdict"`         // kboost's verdict
	Rules     []string `json:"rules,omitempty"` // kboost's deciding rules
	Predicted Outcome  `json:"predicted"`
	Kernel    Outcome  `json:"kernel"`
	Round     int      `json:"round"`          // registration round; -1: not run
	Note      string   `json:"note,omitempty"` // e.g. why the slot was not compared
}

// sameErrno compares errno names, treating Linux's aliases (one number, two
// names; the name lookup may return either) as equal.
func sameErrno(a, b string) bool {
	alias := map[string]string{"ENOTSUP": "EOPNOTSUPP", "EWOULDBLOCK": "EAGAIN", "EDEADLOCK": "EDEADLK"}
	if x, ok := alias[a]; ok {
		a = x
	}
	if x, ok := alias[b]; ok {
		b = x
	}
	return a == b
}

// VerifyReport is kboost-verify.json.
type VerifyReport struct {
	Release   string         `json:"release"`
	Policy    string         `json:"policy"`
	Functions []string       `json:"functions"`
	Records   []VerifyRecord `json:"records"`
	Rounds    int            `json:"rounds"`
	// KcoreDiffers counts functions whose kcore bytes differ from the vmlinux
	// (alternatives, ftrace and jump-label patching at boot).
	KcoreDiffers int              `json:"kcore_differs"`
	Optimization bool             `json:"optimization"` // debug.kprobes-optimization was 1
	Notes        []string         `json:"notes,omitempty"`
	Leftover     string           `json:"leftover,omitempty"` // kprobes/list after the run, if not empty
	TimingMS     map[string]int64 `json:"timing_ms"`
}

func predictedOutcome(d *boost.Decision, optimization bool) Outcome {
	o := Outcome{}
	if d.Verdict == boost.Reject {
		o.Errno = d.Errno.String()
		if o.Errno == "" {
			o.Errno = "EINVAL"
		}
		return o
	}
	o.Addr = d.Addr
	o.Ftrace = d.Verdict == boost.Ftrace
	o.Optimized = optimization && !o.Ftrace && d.Optimizable
	return o
}

// ListEntry is one line of /sys/kernel/debug/kprobes/list.
type ListEntry = loader.ListEntry

// ParseKprobesList parses kprobes/list; see loader.ParseKprobesList.
func ParseKprobesList(b []byte) []ListEntry { return loader.ParseKprobesList(b) }

// OptimizerWait is how a recorder waits, after enabling a round, for the
// kernel's delayed optimizer: [OPTIMIZED] is set when a probe is queued,
// the jump is written later. The round has settled when no listed probe
// lacks its jump, at least Min after the start and Stable after the number
// listed last changed; Max bounds the wait.
type OptimizerWait struct {
	Min, Stable, Max, Poll time.Duration
	// Len and Align: the bytes read at a probed address (rounded down to
	// Align) to see whether Jumped, the optimized jump, is in place.
	Len    int
	Align  uint64
	Jumped func(b []byte) bool
	// Note formats the note of a round that did not settle: listed
	// [OPTIMIZED], pending of them without the jump.
	Note func(round, listed, pending int, max time.Duration) string
}
