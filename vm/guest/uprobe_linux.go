//go:build linux

package guest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/kboost/kboost/uprobe"
	"golang.org/x/sys/unix"
)

func init() { Register("uprobe-trial", stepUprobeTrial) }

// stepUprobeTrial probes every point of UprobeArgs through the perf uprobe
// PMU, one process each (uprobe.Trial), and stores uprobe-trial.json.
func stepUprobeTrial(e *Env, raw json.RawMessage) error {
	var a UprobeArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("uprobe-trial args: %w", err)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	rep := UprobeReport{Release: unix.ByteSliceToString(u.Release[:]), Machine: unix.ByteSliceToString(u.Machine[:])}
	start := time.Now()
	for i, p := range a.Points {
		r, err := uprobe.Trial(a.Bin, uprobe.Probe{Path: a.Bin, Offset: p.Offset}, p.NoRun, p.Arg, strconv.Itoa(a.Calls))
		rec := UprobeRecord{Name: p.Name, Result: r}
		if err != nil {
			rec.Err = err.Error()
		}
		rep.Records = append(rep.Records, rec)
		if i%50 == 0 {
			e.Logf("uprobe-trial: %d of %d points, %.0f s", i, len(a.Points), time.Since(start).Seconds())
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	return e.PutJSON("uprobe-trial.json", rep)
}
