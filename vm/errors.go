package vm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

var (
	// ErrUnknownArch reports an architecture or Debian package vm cannot boot.
	ErrUnknownArch = errors.New("vm: unknown guest architecture")
	// ErrInitramfs reports an initramfs that cannot be built from the given files.
	ErrInitramfs = errors.New("vm: bad initramfs")
)

// QEMUNotFoundError reports a missing system emulator.
type QEMUNotFoundError struct {
	Binary     string // "qemu-system-x86_64"
	AptPackage string // "qemu-system-x86"
}

func (e *QEMUNotFoundError) Error() string {
	return fmt.Sprintf("vm: %s not found in PATH: install it with `apt-get install %s`", e.Binary, e.AptPackage)
}

// KernelPanicError reports a guest kernel that panicked before the result arrived.
type KernelPanicError struct {
	Message string   // the "Kernel panic - not syncing: ..." line
	Console []string // the last console lines
}

func (e *KernelPanicError) Error() string {
	return fmt.Sprintf("vm: guest kernel panicked: %s\nlast console lines:\n%s", e.Message, indent(e.Console))
}

// TimeoutError reports a guest that did not finish in time.
type TimeoutError struct {
	After   time.Duration
	Console []string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("vm: guest gave no result within %v (raise Config.Timeout if the machine is just slow)\nlast console lines:\n%s", e.After, indent(e.Console))
}

// ExitError reports QEMU stopping before the guest sent its result.
type ExitError struct {
	Status  string   // QEMU's exit status
	Stderr  string   // what QEMU printed on stderr
	Console []string // the last console lines
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("vm: QEMU exited (%s) before the guest sent its result", e.Status)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + s
	}
	return msg + "\nlast console lines:\n" + indent(e.Console)
}

// GuestFailError reports a guest that started but could not run its scenario.
type GuestFailError struct {
	Message string
}

func (e *GuestFailError) Error() string { return "vm: guest failed: " + e.Message }

// StepError reports a scenario step that failed inside the guest.
type StepError struct {
	Step    string
	Message string
}

func (e *StepError) Error() string {
	return fmt.Sprintf("vm: guest step %q failed: %s", e.Step, e.Message)
}

// ProtocolError reports console output that breaks the result protocol.
type ProtocolError struct {
	Line   int // console line number, 1-based (0 when not tied to a line)
	Reason string
}

func (e *ProtocolError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("vm: result protocol: console line %d: %s", e.Line, e.Reason)
	}
	return "vm: result protocol: " + e.Reason
}

func indent(lines []string) string {
	if len(lines) == 0 {
		return "  (none)"
	}
	return "  " + strings.Join(lines, "\n  ")
}
