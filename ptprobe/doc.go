// Package ptprobe is kboost's user-space probe engine (`kboost trace`): probes
// at functions or addresses of an x86-64 binary in a process tree traced
// with the tracer package, counted exactly, in three mechanisms chosen per
// point by a checked classification.
//
// # Classification
//
// Which instruction may be displaced and how is boost's PolicyName policy
// (linux-6.1: the x86 kprobe booster's can_boost, prepare_emulation, the
// RIP-relative rebase of __copy_instruction, optprobes' can_optimize) in a
// user-space environment (Env: boosting and optimization on, no IBT, ftrace
// or notrace rules). Plan turns its Decision at the point into a Site:
//
//   - SingleStep: int3 at the point; at the stop the thread's IP moves to the
//     copy in the probe's slot area, followed by int3; at that second stop
//     IP moves to the point's next instruction. Two stops per hit.
//   - Boost (verdict Boost): the slot holds the copy and a jmp back; one stop.
//     A SingleStep verdict falls back to SingleStep.
//   - Jump (Decision.Optimizable): a jmp rel32 over the Decision.OptLen
//     displaced bytes to a trampoline that moves the stack pointer past the
//     red zone, saves the arithmetic flags (lahf, seto), increments the
//     probe's counter with a locked add, restores them, runs each displaced instruction's copy
//     (each re-classified at its own trampoline address: it must be Boost
//     there, so a RIP-relative operand out of rel32 reach refuses the jump)
//     and jumps back. No stop. Else it falls back to Boost.
//   - Emulate (verdict Emulate: relative jumps, calls, jcc, ret, pushf...):
//     one stop, and kernelsim's model of the kernel's 6.1 emulation runs on
//     the thread's registers and stack.
//
// A Reject verdict, or a point where the policy's instruction length (the
// kernel decoder's) differs from the CPU's (kboost's decoder), is refused
// with ErrPoint. Every fallback is recorded in Site.Reasons as rule ids
// (the policy's and ptprobe.*).
//
// # Live engine (Linux amd64)
//
// Points are validated against the ELF file before anything starts
// (Resolve: the uprobe audit's function, boundary and file offset). When a
// process of the tree executes the binary (exec, or at attach with every
// thread stopped), kboost injects an mmap system call into a stopped
// thread (a syscall instruction written at its IP, single-stepped, bytes
// and registers restored) for two pages within rel32 reach of the text:
// the slot areas (AreaSize bytes per probe, r-x, written through
// /proc/PID/mem) and the jump counters: a memfd kboost maps too, which the
// tracee opens through /proc/KBOOST/fd/N and maps MAP_SHARED (injected
// openat, mmap, close), so one counter per probe serves the whole tree and
// survives exec, fork, vfork and a tracee killed by a signal. Jumps are
// written only while every thread of the process is stopped and are
// demoted to Boost where a stopped thread's IP or another probe lies among
// the displaced bytes. Fork children inherit probes, slots and counters; a
// process that executes the binary again is probed again.
//
// Detach (Ctrl-C) stops every thread at once, moves any thread whose IP is
// in a slot or trampoline out of it by single-stepping, writes every
// patched byte back, reads the counters, unmaps the slot pages with an
// injected munmap and releases the tree, which runs on with its original
// code. A tree kboost started dies with kboost if kboost is killed
// (PTRACE_O_EXITKILL). An attached (--pid) tree is not killed: after a
// SIGKILL of kboost its int3 probes stay and the next hit of one ends the
// process with SIGTRAP; its jump probes keep running correctly (and
// counting) from their trampolines.
//
// # Hit records
//
// With Options.Hits every hit is a record on Out. An int3-based probe's is
// written at its stop. A jump trampoline calls a record routine of its
// slot page (no stop): it reserves a record of a ring in the counters'
// memfd (after its first page, mapped MAP_SHARED anywhere in the process)
// with a locked xadd, writes the probe, the process's pid (a word of its
// own slot page, rewritten in each fork child's copy), the thread pointer
// (rdfsbase where AT_HWCAP2 allows it) and the argument registers, and
// last the record's sequence number. A goroutine of kboost drains the ring
// while the tree runs and publishes how far it read; a routine finding the
// ring nearly full drops the record and counts it (Summary.Dropped), a
// record lapped or never completed (its writer killed) is counted as Lost.
// kboost names a record's thread from thread pointers it saw at clone,
// fork and attach (a process with one thread: its pid). The counts stay
// exact either way. Records of jump and int3 probes interleave in the
// order kboost wrote them, not the order the hits happened.
//
// # Limits
//
// x86-64 tracees only (an i386 binary is refused; arm64 and ARM have no
// engine). A vfork child's jump records carry its parent's pid and thread
// pointer (it shares the parent's memory). A thread whose signal frame
// holds an IP inside a slot when the tracee is detached returns into
// unmapped memory.
//
// Elsewhere New returns an error wrapping decode.ErrNotSupported.
package ptprobe
