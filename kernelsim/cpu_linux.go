//go:build linux && amd64

package kernelsim

import "time"

// CPUTime is the CPU time used so far by this process and the sandbox
// process together (the sandbox's as /proc reports it, in 10 ms ticks; a
// sandbox restarted after a crash starts from zero).
func (s *Sandbox) CPUTime() time.Duration { return cpuTime(s.pid) }
