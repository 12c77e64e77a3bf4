//go:build linux && amd64

package native

import "github.com/kboost/kboost/internal/ptregs"

// tracedPC reads a stopped tracee's instruction pointer in the tracee's own
// register layout (internal/ptregs says why not PTRACE_GETREGS).
func tracedPC(pid int) (uint64, error) { return ptregs.PC(pid) }
