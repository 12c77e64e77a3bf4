//go:build !linux

package kernelsim

import (
	"fmt"
	"time"
)

// GDB is the emulator backend; it needs Linux (memfd, namespaces).
type GDB struct {
	Watchdog   time.Duration
	Restarts   int
	LastCrash  string
	Stops      int
	TargetRegs []TargetReg
}

// NewGDB returns errNotSupported off Linux.
func NewGDB(a *Arch, o Options) (*GDB, error) {
	return nil, fmt.Errorf("kernelsim: the gdb-stub emulator backend needs Linux: %w", errNotSupported)
}

// OpenBackend opens the default backend for a (see the Linux version).
func OpenBackend(a *Arch, o Options) (Backend, error) {
	if a != nil && a.emu != nil {
		return nil, fmt.Errorf("kernelsim: the gdb-stub emulator backend needs Linux: %w", errNotSupported)
	}
	return NewWithOptions(a, o)
}

func (g *GDB) Arch() *Arch                          { return nil }
func (g *GDB) Run(cases []Case, res []Result) error { return errNotSupported }
func (g *GDB) Close() error                         { return nil }
func (g *GDB) Emulator() string                     { return "" }
func (g *GDB) Pid() int                             { return 0 }
func (g *GDB) CPUTime() time.Duration               { return 0 }
