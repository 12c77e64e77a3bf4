//go:build !(linux && amd64)

package native

import "time"

// CPUTime is always 0 here.
func (s *Sandbox) CPUTime() time.Duration { return 0 }
