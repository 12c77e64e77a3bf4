//go:build linux

package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/loader"
)

func init() {
	Register(ARMVerifyStep, func(e *Env, raw json.RawMessage) error { return stepVerifyFixed(e, raw, ARMProbes) })
}

// armOptWait bounds the wait for the delayed optimizer of one round.
const armOptWait = 8 * time.Second

// waitOptimized enables the round's events (a disabled kprobe is never
// optimized), waits for the kernel's delayed optimizer and records
// [OPTIMIZED], then disables them again (kprobe_events cannot be cleared
// while they are enabled). The optimizer runs OPTIMIZE_DELAY jiffies after
// arming and then waits for an RCU grace period; the flag is set when a probe
// is queued, so the list is read until it stops changing (at least 1 s,
// at most armOptWait). With /proc/kcore, a probe counts as optimized only
// when its word has become a B to the detour.
func waitOptimized(e *Env, rep *ARM64Report, dir string, ok []*VerifyRecord, byAddr map[uint64]*ListEntry, kc *loader.Kcore) {
	enable := filepath.Join(dir, "events", kprobeGroup, "enable")
	if err := os.WriteFile(enable, []byte("1\n"), 0); err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: enabling: %v", rep.Rounds, err))
		return
	}
	defer func() {
		if err := os.WriteFile(enable, []byte("0\n"), 0); err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: disabling: %v", rep.Rounds, err))
		}
	}()
	start := time.Now()
	last, stable := -1, time.Time{}
	for {
		list := ParseKprobesList(readOr(kprobesList))
		for i := range list {
			byAddr[list[i].Addr] = &list[i]
		}
		n, pending := 0, 0
		for _, r := range ok {
			le := byAddr[r.Kernel.Addr]
			if le == nil || r.Kernel.Addr == 0 {
				continue
			}
			r.Kernel.Optimized = le.Has("OPTIMIZED")
			if !r.Kernel.Optimized {
				continue
			}
			n++
			if kc != nil {
				// ARM: B<cond> is cond 101 0 imm24.
				if b, err := kc.Read(le.Addr&^3, 4); err != nil || b[3]&0x0F != 0x0A {
					pending++
				}
			}
		}
		now := time.Now()
		if n != last {
			last, stable = n, now
		}
		settled := now.Sub(start) >= time.Second && now.Sub(stable) >= 500*time.Millisecond && pending == 0
		if settled || now.Sub(start) > armOptWait {
			if !settled {
				rep.Notes = append(rep.Notes, fmt.Sprintf("round %d: [OPTIMIZED] not settled after %v (%d listed, %d without the branch)", rep.Rounds, armOptWait, n, pending))
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
