//go:build !linux

package gdbserial

import (
	"fmt"
	"time"

	"github.com/kboost/kboost/kernelsim"
)

// GDB is the emulator backend; it needs Linux (memfd, namespaces).
type GDB struct {
	Watchdog   time.Duration
	Restarts   int
	LastCrash  string
	Stops      int
	TargetRegs []TargetReg
}

// New returns errNotSupported off Linux.
func New(a *kernelsim.Arch, o kernelsim.Options) (*GDB, error) {
	return nil, fmt.Errorf("kernelsim: the gdb-stub emulator backend needs Linux: %w", errNotSupported)
}

func (g *GDB) Arch() *kernelsim.Arch                                    { return nil }
func (g *GDB) Run(cases []kernelsim.Case, res []kernelsim.Result) error { return errNotSupported }
func (g *GDB) Close() error                                             { return nil }
func (g *GDB) Emulator() string                                         { return "" }
func (g *GDB) Pid() int                                                 { return 0 }
func (g *GDB) CPUTime() time.Duration                                   { return 0 }
