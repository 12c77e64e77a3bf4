// Package ptregs reads and writes a stopped tracee's general registers
// through PTRACE_GETREGSET/SETREGSET(NT_PRSTATUS), in the layout the kernel
// answers with for that tracee: x86-64 or i386 for an x86 tracer, arm64 or
// ARM for an arm64 one, ARM for an ARM one (per-arch files; Linux only).
//
// PTRACE_GETREGS is not used: which layout it fills for a 32-bit tracee
// depends on how the kernel judges the tracer's mode, and some hypervisor
// guests (PVM, whose user code segment is not __USER_CS) fill the i386
// layout into the 64-bit struct, leaving rip zero. The calls must come from
// the tracer thread.
package ptregs
