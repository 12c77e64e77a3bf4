//go:build linux && (amd64 || 386 || arm64 || arm)

package tracer

import (
	"time"

	"golang.org/x/sys/unix"
)

// poller waits for the next stop by asking wait4 without blocking for up
// to a window before it blocks. A stop reported to a tracer asleep in
// wait4 first wakes the tracer's CPU, and where that CPU had halted (an
// idle vCPU: the host must run it again) the wake-up costs more than
// serving the stop; most stops come a few microseconds after the resume
// that led to them (a call's exit after its entry, the next call of a
// thread making many). The window adapts as the kernel's haltpoll cpuidle
// governor does: it grows while a blocking wait ends soon after the window
// did (a longer one would have caught the stop) and shrinks while waits
// end late (the tracee computes: polling only burns the CPU). Between two
// polls the tracer yields its CPU to any task that can run there.
type poller struct {
	window, max time.Duration
}

// pollStart is the first window, and the one a shrink below it ends at
// (0: off until a wait ends soon again).
const pollStart = 20 * time.Microsecond

func newPoller(max time.Duration) *poller {
	if max <= 0 {
		return &poller{}
	}
	return &poller{window: min(pollStart, max), max: max}
}

// wait is wait4(-1, ws, __WALL).
func (p *poller) wait(ws *unix.WaitStatus) (int, error) {
	if p.max == 0 {
		return unix.Wait4(-1, ws, unix.WALL, nil)
	}
	if p.window > 0 {
		start := time.Now()
		for {
			tid, err := unix.Wait4(-1, ws, unix.WALL|unix.WNOHANG, nil)
			if tid != 0 || err != nil {
				return tid, err // a stop, or an error the blocking wait would give too
			}
			if time.Since(start) >= p.window {
				break
			}
			// Any other task that can run on this CPU (a tracee woken
			// here, or anyone's) runs first: the poll only uses a CPU
			// that would be idle.
			unix.Syscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
	}
	start := time.Now()
	tid, err := unix.Wait4(-1, ws, unix.WALL, nil)
	if slept := time.Since(start); slept < p.max {
		p.window = min(max(2*p.window, pollStart), p.max)
	} else if p.window /= 2; p.window < pollStart {
		p.window = 0
	}
	return tid, err
}
