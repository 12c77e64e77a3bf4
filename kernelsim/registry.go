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
// do: kernelsim/native for X86_64 and I386 (the ptrace sandbox on the CPU),
// kernelsim/gdbserial for ARM64, ARM32 and Thumb.
func RegisterBackend(a *Arch, open func(a *Arch, o Options) (EmulatedBackend, error)) {
	openers[a] = open
}

// OpenBackend opens the backend registered for a.
func OpenBackend(a *Arch, o Options) (EmulatedBackend, error) {
	if open := openers[a]; open != nil {
		return open(a, o)
	}
	name, pkg := "<nil>", "native or gdbserial"
	if a != nil {
		name, pkg = a.Name, "gdbserial"
		if a.Reserved != ([2]uint64{}) {
			pkg = "native"
		}
	}
	return nil, fmt.Errorf("kernelsim: no backend registered for %s (import github.com/kboost/kboost/kernelsim/%s): %w", name, pkg, errNotSupported)
}
