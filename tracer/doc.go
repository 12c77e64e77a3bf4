// Package tracer is kboost's user-space tracer core: it follows every thread
// of every process of a tree through ptrace and reports their system calls,
// process events and signals to a Handler.
//
// Contract:
//   - Tracees are attached with PTRACE_SEIZE and PTRACE_O_TRACEFORK, VFORK,
//     CLONE, EXEC and SYSGOOD (plus TRACESECCOMP when a seccomp filter is
//     used, and EXITKILL when kboost started the tracee), so new threads and
//     processes are followed from their first instruction.
//   - Signals reach tracees unchanged; group-stops are held with
//     PTRACE_LISTEN, so SIGSTOP/SIGCONT and job control behave as untraced.
//   - With Config.OneStop (experimental), under kboost's seccomp filter an
//     x86-64 call stops once, at its entry: its return goes through a stub
//     of the thread's own in two anonymous pages kboost maps into the
//     process (injected mmap and mprotect calls, made in place of one of
//     the process's calls, which then runs again), and Exit is called at
//     the thread's next stop. Calls that create tasks, exec, sigreturn or
//     do not return, and denied ones, stop at their exit too.
//   - A Handler may deny a system call: it is skipped and returns the given
//     errno; nothing else in the tracee changes.
//   - Detach (Tracer.Detach, e.g. on SIGINT) releases every thread and
//     leaves the tree running as it was. A tree started with a seccomp
//     filter cannot be released (the filter stays installed and would fail
//     the monitored calls with ENOSYS without a tracer), so kboost keeps
//     serving its stops silently until the tree exits.
//   - A Handler that also implements Prober (a breakpoint engine) is given
//     every SIGTRAP signal-delivery-stop first (its own traps are not
//     delivered), every thread of an attached tree stopped at once before
//     any runs (Attached), and at Detach every thread stopped at once
//     before any is released (Release). Config.NoSyscalls resumes with
//     PTRACE_CONT, so such a trace has no system call stops.
//   - Every ptrace request is made from one locked OS thread (the tracer).
//
// Linux on amd64 (x86-64 and i386 tracees), 386, arm64 (arm64 and compat
// ARM tracees) and arm; elsewhere New returns an error wrapping
// decode.ErrNotSupported.
package tracer
