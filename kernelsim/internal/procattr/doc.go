// Package procattr holds the process attributes shared by kernelsim's
// sandboxed backends (kernelsim/native's ptrace sandbox, kernelsim/gdbserial's
// qemu-user), so that both start their processes the same way. Linux only.
package procattr
