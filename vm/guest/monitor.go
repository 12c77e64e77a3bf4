package guest

// MonitorArgs are the "monitor-trial" step's arguments: a static program
// (monitor/testdata/guest.c or guestgo, built on the host for the guest's
// architecture) run natively and then under kboost's reference monitor,
// with a policy denying the openat of Deny (also the program's argument).
type MonitorArgs struct {
	Bin  string `json:"bin"`
	Deny string `json:"deny"`
	// Backtrace lists the command lines run under the monitor with
	// backtraces on (every call, no policy): the backtrace oracle's
	// tracees, each printing its own stack (vm/testdata/monitorbt).
	Backtrace [][]string `json:"backtrace,omitempty"`
}

// MonitorReport is the "monitor-trial" step's result (monitor-trial.json).
type MonitorReport struct {
	Machine      string `json:"machine"`
	Native       string `json:"native"` // the program's stdout, untraced
	NativeStatus int    `json:"native_status"`
	Traced       string `json:"traced"`  // its stdout under the monitor
	Records      string `json:"records"` // the monitor's JSON lines (calls, events, summary)
	Status       int    `json:"status"`  // the root's exit status under the monitor
	Err          string `json:"err,omitempty"`
	// Leftover lists the processes below the guest's init after the
	// monitor returned ("pid comm"): none may remain.
	Leftover []string `json:"leftover"`
	// Backtraces holds MonitorArgs.Backtrace's runs, in order.
	Backtraces []BacktraceRun `json:"backtraces,omitempty"`
}

// BacktraceRun is one program run under the monitor with backtraces.
type BacktraceRun struct {
	Argv    []string `json:"argv"`
	Out     string   `json:"out"`     // its stdout
	Records string   `json:"records"` // the monitor's JSON lines, each call with its backtrace
	Status  int      `json:"status"`
	Err     string   `json:"err,omitempty"`
}
