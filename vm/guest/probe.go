package guest

import "github.com/kboost/kboost/loader"

// ChildEnv, when set in the environment of the guest binary, makes Main run a
// helper instead of the scenario (the "probe-lifecycle" step starts itself as a
// child this way): "watch-perf:SYM" or "watch-tracefs:SYM" runs loader.Watch on
// SYM until SIGINT, printing ChildReady once the probe is in place.
const ChildEnv = "KBOOST_GUEST_CHILD"

// ChildReady is the line a watching child prints when its probe is in place.
const ChildReady = "KBOOST-CHILD-READY"

// LifecycleArgs are the "probe-lifecycle" step's arguments.
type LifecycleArgs struct {
	// Points are predicted from the live kernel (kcore, and the vmlinux when
	// given) and then added through tracefs; the flags are compared.
	Points  []string `json:"points"`
	Vmlinux string   `json:"vmlinux,omitempty"`
	Config  string   `json:"config,omitempty"`
	// Watch is the symbol the perf and kill checks probe (e.g. vfs_read).
	Watch string `json:"watch"`
	// CLI, when set, also runs the "probe-cli" step in the same boot (the host
	// adds it; see CLIArgs).
	CLI *CLIArgs `json:"cli,omitempty"`
}

// LivePoint is one point of the lifecycle step: the loader's prediction (from
// /proc/kcore alone and from the vmlinux) and the kernel's answer.
type LivePoint struct {
	Point         string              `json:"point"`
	FromKcore     *loader.Expectation `json:"from_kcore,omitempty"`
	FromVmlinux   *loader.Expectation `json:"from_vmlinux,omitempty"`
	KernelErrno   string              `json:"kernel_errno,omitempty"`
	KernelErrLog  string              `json:"kernel_error_log,omitempty"`
	KernelList    *loader.ListEntry   `json:"kernel_list,omitempty"`
	PredictErrors []string            `json:"predict_errors,omitempty"`
	// With --place cheapest: where the point moved, the predicted cost, and
	// the kernel's list entry for the moved point.
	Placed       string            `json:"placed,omitempty"`
	PlacedCost   string            `json:"placed_cost,omitempty"`
	PlacedReason string            `json:"placed_reason,omitempty"`
	PlacedList   *loader.ListEntry `json:"placed_list,omitempty"`
	PlacedErrno  string            `json:"placed_errno,omitempty"`
	// The same point through the perf kprobe PMU: its errno, or the address
	// kprobes/list shows while the probe is open.
	PerfErrno string `json:"perf_errno,omitempty"`
	PerfAddr  uint64 `json:"perf_addr,omitempty"`
}

// KillCheck is one "kill the watcher" experiment.
type KillCheck struct {
	Target      string `json:"target"` // perf, tracefs
	Signal      string `json:"signal"` // SIGINT, SIGKILL
	Ready       bool   `json:"ready"`
	ListBefore  int    `json:"list_before"`  // kprobes/list entries while watching
	ListAfter   int    `json:"list_after"`   // after the watcher ended
	EventsAfter int    `json:"events_after"` // kboost tracefs events after it ended
	Swept       int    `json:"swept"`        // events removed by Sweep
	ListSwept   int    `json:"list_swept"`   // kprobes/list entries after Sweep
	ExitStatus  string `json:"exit_status"`
	Output      string `json:"output,omitempty"`
	Error       string `json:"error,omitempty"`
}

// Lifecycle is probe-lifecycle.json.
type Lifecycle struct {
	Points     []LivePoint `json:"points"`
	PerfTarget string      `json:"perf_target"`
	PerfListed int         `json:"perf_listed"` // kprobes/list entries while the perf probe is open
	PerfHits   uint64      `json:"perf_hits"`   // after reading files
	PerfAfter  int         `json:"perf_after"`  // kprobes/list entries after Close
	PerfError  string      `json:"perf_error,omitempty"`
	Kills      []KillCheck `json:"kills"`
	Notes      []string    `json:"notes,omitempty"`
	// CLI is the "probe-cli" step's report when it ran in the same boot.
	CLI *CLIReport `json:"cli,omitempty"`
}

// CLIArgs are the "probe-cli" step's arguments. That step runs kboost's
// commands in the guest: the kboost binary the host packs at KboostPath.
type CLIArgs struct {
	// Func is where `probe add` puts a symbol probe and an optimizable
	// symbol+offset probe, and what `probe watch` watches (default vfs_read).
	Func string `json:"func,omitempty"`
	// AddrFunc is probed by raw address (default ksys_read), at its first
	// point kboost predicts optimized, else its first non-ftrace boundary.
	AddrFunc string `json:"addr_func,omitempty"`
	// Config is the kernel's .config in the initramfs, passed as --config.
	Config string `json:"config,omitempty"`
}

// CLIRun is one kboost command run in the guest and the kernel's state after
// it (and, for probe watch, while it ran).
type CLIRun struct {
	Args   []string `json:"args"`
	Exit   int      `json:"exit"`
	Stdout string   `json:"stdout"`
	Stderr string   `json:"stderr"`
	// Events are the kboost* entries of kprobe_events after the command, List
	// the kprobes/list entries.
	Events []loader.Event     `json:"events"`
	List   []loader.ListEntry `json:"list"`
	// ListDuring is kprobes/list while a watch ran (before its SIGINT).
	ListDuring []loader.ListEntry `json:"list_during,omitempty"`
}

// CLIReport is probe-cli.json.
type CLIReport struct {
	// Points are the points given to `probe add`, and AddrPoint the
	// symbol+offset the raw address stands for.
	Points    []string `json:"points"`
	AddrPoint string   `json:"addr_point"`
	Runs      []CLIRun `json:"runs"`
	Notes     []string `json:"notes,omitempty"`
}
