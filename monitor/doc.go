// Package monitor is kboost's reference monitor: it runs a process tree
// under package tracer, records every selected system call with its decoded
// arguments (package sysent) and result, enforces a policy file by failing
// denied calls with EPERM, and summarises the run.
//
// Only the selected calls stop (a seccomp filter when the monitor starts
// the tree); ExecMaps narrows the mapping calls to those with PROT_EXEC in
// the filter itself. Backtraces unwind each frame by the call frame
// information (.eh_frame, 32-bit ARM's .ARM.exidx; package internal/cfi) of
// the file its pc is in, and by the frame pointer where none covers it,
// over the executable mappings of the process, re-read only after a call
// that can map code (the monitor stops at those even when they are not
// selected, and does not record them); symbols and call frame information come from each
// file's ELF sections, read once per (device, inode, mtime), and from the
// vDSO's (i386's __kernel_vsyscall, signal return trampolines), whose
// image is read from the process's memory once per process and mapping.
// Where the policy names no caller, a walk is not made at the call's stop:
// the thread's stack is copied there in one read (as far as its walks so
// far reached, or the main stack's end), and unwound once the thread runs
// again; a thread's first walk off the main stack, and one whose stack
// pointer is outside the stack its walks read (an alternate signal stack),
// are made at the stop.
//
// Records go to their own writer (a file, as JSON lines or text), never to
// the tracee's stdout or stderr. Arguments are decoded at the call's entry
// (a path may be gone at its exit) and written at its exit, in the order the
// calls return.
package monitor
