package guest

// Uname is the "uname" step's result (uname.json).
type Uname struct {
	Sysname string `json:"sysname"`
	Release string `json:"release"`
	Version string `json:"version"`
	Machine string `json:"machine"`
}

// FeaturePaths are the files whose existence the "features" step reports.
var FeaturePaths = []string{
	"/proc/kallsyms",
	"/proc/kcore",
	"/proc/config.gz",
	"/proc/sys/debug/kprobes-optimization",
	"/sys/kernel/debug/kprobes/list",
	"/sys/kernel/debug/kprobes/blacklist",
	"/sys/kernel/debug/kprobes/enabled",
	"/sys/kernel/tracing/kprobe_events",
	"/sys/kernel/tracing/kprobe_profile",
	"/sys/kernel/tracing/error_log",
	"/sys/bus/event_source/devices/kprobe/type",
}

// Features is the "features" step's result (features.json).
type Features struct {
	Exists map[string]bool   `json:"exists"`
	Values map[string]string `json:"values,omitempty"` // small files' contents, trimmed
}
