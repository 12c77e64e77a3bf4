package kernelsim

import "fmt"

// EmulatedBackend is a Backend that can say which emulator, if any, runs
// its cases.
type EmulatedBackend interface {
	Backend
	Emulator() string // the qemu-user binary, "" on the CPU
}

// openers are the backends registered per Arch (RegisterBackend).
var openers = map[*Arch]func(a *Arch, o Options) (EmulatedBackend, error){}

// RegisterBackend makes open the backend OpenBackend gives for a. Backend
// packages register theirs when they are imported, as database/sql drivers
// do: kernelsim/gdbserial for ARM64, ARM32 and Thumb.
func RegisterBackend(a *Arch, open func(a *Arch, o Options) (EmulatedBackend, error)) {
	openers[a] = open
}

// OpenBackend opens the default backend for a: the one registered for it,
// else the hardware sandbox (x86).
func OpenBackend(a *Arch, o Options) (EmulatedBackend, error) {
	if open := openers[a]; open != nil {
		return open(a, o)
	}
	if a == nil || a.target == nil {
		name := "<nil>"
		if a != nil {
			name = a.Name
		}
		return nil, fmt.Errorf("kernelsim: no backend registered for %s (import github.com/kboost/kboost/kernelsim/gdbserial): %w", name, errNotSupported)
	}
	return NewWithOptions(a, o)
}
