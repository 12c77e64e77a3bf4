package uprobe

import "time"

// UprobeGroup is the tracefs group of kboost's uprobe events.
const UprobeGroup = "kboost_uprobe"

// Count is one probe's hit count at a tick.
type Count struct {
	Probe Probe  `json:"-"`
	Point string `json:"point"` // PATH:0xOFF
	Hits  uint64 `json:"hits"`
}

// WatchOptions configure Watch.
type WatchOptions struct {
	Tracefs  bool          // uprobe_events instead of the perf PMU (a killed watcher leaves them: Sweep)
	Interval time.Duration // between OnTick calls; 0 means 1 s
	OnReady  func(target string)
	OnTick   func([]Count)
}

// TracefsProbe is one kboost event in uprobe_events.
type TracefsProbe struct {
	Event string `json:"event"` // GROUP/EVENT
	Point string `json:"point"`
	Hits  uint64 `json:"hits"`
}
