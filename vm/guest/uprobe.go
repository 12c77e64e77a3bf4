package guest

import "github.com/kboost/kboost/uprobe"

// UprobeArgs are the "uprobe-trial" step's arguments: points of a program of
// uprobe's trial protocol (uprobe.Trial; kboost's uprobe corpus, built on the
// host) to probe one at a time inside the guest.
type UprobeArgs struct {
	Bin    string        `json:"bin"` // the program, in the initramfs
	Calls  int           `json:"calls"`
	Points []UprobePoint `json:"points"`
}

// UprobePoint is one probe: the file offset of Bin and the program's
// arguments' function name (the count is UprobeArgs.Calls).
type UprobePoint struct {
	Name   string `json:"name"`
	Arg    string `json:"arg"`
	Offset uint64 `json:"offset"`
	// NoRun: the probe is installed and the site read back, the function is
	// not called (the kernel refuses it, or it faults natively).
	NoRun bool `json:"norun,omitempty"`
}

// UprobeReport is the "uprobe-trial" step's result (uprobe-trial.json): one
// record per point, in order, and the guest's uname.
type UprobeReport struct {
	Release string         `json:"release"`
	Machine string         `json:"machine"`
	Records []UprobeRecord `json:"records"`
	Seconds float64        `json:"seconds"`
}

// UprobeRecord is what the guest's kernel did with one point (Err: the trial
// itself failed, e.g. the program did not start).
type UprobeRecord struct {
	Name   string             `json:"name"`
	Result uprobe.TrialResult `json:"result"`
	Err    string             `json:"err,omitempty"`
}
