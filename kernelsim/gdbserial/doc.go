// Package gdbserial is kernelsim's emulator backend for ARM64, ARM32 and
// Thumb: a generated runner under qemu-aarch64-static or qemu-arm-static,
// started and checked through QEMU's gdb stub (the GDB remote serial
// protocol, gdbrsp.go), with the A64 and A32 assemblers that write the
// runners.
//
// # Contract
//
// Importing the package registers the backend for kernelsim.ARM64,
// kernelsim.ARM32 and kernelsim.Thumb (kernelsim.OpenBackend, which
// kernelsim.Simulate uses). New returns a kernelsim.Backend that runs
// kernelsim.Case batches and reports a kernelsim.Result per case, the same
// contract as the hardware sandbox: by default it detaches from the stub
// after start-up and takes batches through futexes in a shared memfd, the
// runner catching faults itself; NewMode(a, o, GDBAttached) keeps every
// batch and fault on the stub (same results, slower). The emulator runs as
// nobody in new PID, network and IPC namespaces and dies with its owner;
// Close leaves no process or file behind. Off Linux, New returns an error
// wrapping decode.ErrNotSupported.
package gdbserial

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

var errNotSupported = fmt.Errorf("kernelsim: %w", decode.ErrNotSupported)
