//go:build linux && amd64

package native

import "time"

// CPUTime is the CPU time used so far by this process and the sandbox
// processes together: the running sandbox's as /proc reports it (10 ms
// ticks), plus that of the sandbox processes already reaped (restarts).
func (s *Sandbox) CPUTime() time.Duration { return cpuTime(s.pid) + s.deadCPU }
