// Package native is kernelsim's backend on the host CPU: the ptrace
// sandbox that runs X86_64 and I386 cases in a process of its own
// (linux/amd64), and the hardware length oracle.
//
// # Contract
//
// Importing the package registers the backend for kernelsim.X86_64 and
// kernelsim.I386 (kernelsim.OpenBackend, which kernelsim.Simulate uses).
// [New] and [NewWithOptions] return a [Sandbox], a kernelsim.Backend that
// runs kernelsim.Case batches and reports a kernelsim.Result per case;
// crashed cases are reported as kernelsim.Crashed and the sandbox restarted.
// Close leaves no process or file behind. Off linux/amd64 the constructors
// return an error wrapping decode.ErrNotSupported.
//
// # Sandbox
//
// [Sandbox] is the backend on the host CPU (linux/amd64). It writes a minimal
// static ELF holding a hand-assembled runner (no libc), starts it under
// ptrace (PTRACE_TRACEME, PR_SET_PDEATHSIG=SIGKILL, its own process group),
// lets it map the code, slot, scratch and stack pages from a memfd shared
// with the tracer, install SA_SIGINFO handlers on an alternate stack and a
// seccomp filter, checks where it stopped, and detaches. ptrace is used again
// only to say where a runner that stopped making progress hangs before it is
// killed and restarted. Case code cannot make system calls (seccomp turns
// them into SIGSYS), and the runner's own memory lies beyond the reach of
// case registers and 32-bit displacements on x86-64. Every case starts from
// the same hidden state: x87/SSE/AVX reset (XRSTOR of the init state, FNINIT,
// MXCSR 0x1F80) and the runner's DS/ES/FS/GS selectors reloaded, so an earlier
// case cannot change the outcome of a later one. Vector and x87 registers are
// not part of the Result.
//
// # Batches
//
// Cases run in batches of up to 128 through the shared memory, with no
// ptrace stop and no system call per case: the tracer writes case records
// (registers, entry, the code and slot images) and the batch's distinct
// memory images (scratch + stack page; the cases of a fuzz block share three
// trial states), stores the count and wakes the runner with a futex; the
// runner runs every case and wakes the tracer when the batch is done. For
// each case it writes the code and slot images through a read-write alias of
// the code pages, loads the registers and enters the code (IRET); the return
// stub jumps back into the runner, which saves registers and flags. The live
// scratch and stack pages are copied from the image only when they hold
// another one: after every case the runner compares them with the image word
// by word, records the changed words (the whole pages when more than 24
// changed) and puts the image's values back, so the memory a case reads is
// exactly its image and the tracer rebuilds the final pages from the image
// and the changed words. A fault is caught by the runner's own SA_SIGINFO
// handler (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGFPE, SIGSYS) on an alternate
// stack: it clears AC first (a case may have set it), records signal,
// si_code, fault address, trap number, error code and all registers from the
// ucontext, and on x86-64 jumps straight back into the runner's stack and
// loop: the signals are SA_NODEFER with an empty mask, so no rt_sigreturn is
// needed and nothing stays blocked (a fault costs one kernel entry, not
// two). Under an emulator, and on i386, the handler rewrites the ucontext and
// returns through rt_sigreturn instead. A signal that arrives while no case
// runs (the watchdog, the case timer) returns through rt_sigreturn; any other
// signal outside a case is a runner bug and ends the process (exit 99,
// reported with the runner's PC).
//
// A case that loops is stopped by the case timer: an ITIMER_VIRTUAL interval
// timer on the runner's user CPU time, re-armed at every batch with a third
// of Sandbox.CaseTimeout (10 ms by default, 60 ms under an emulator; the
// kernel checks it at its scheduler tick); a case still running at three
// consecutive ticks ends TimedOut (the ticks before are handled and the case
// resumed through rt_sigreturn). An endless loop so costs about 10 ms
// instead of the 200 ms or more of the tracer's watchdog; a finite loop that
// needs longer (loop $ with a 2^28 count) is TimedOut too unless
// CaseTimeout allows it (`kboost sim` allows a second, `kboost fuzz` has
// --case-timeout). The tracer's watchdog (SIGUSR1 after Sandbox.Watchdog of
// the sandbox's CPU time without progress, then kill and restart) remains
// for a runner that stops making progress itself, and wakes at once a case
// that sleeps in a real system call under an emulator (which has no seccomp
// filter).
//
// Options.Exec chooses what executes the cases. i386 cases run in a 32-bit
// compat-mode process where the kernel allows it ([NativeExec] probes that
// once per process by running a minimal static executable); where it does
// not (some hosts refuse 32-bit executables with ENOEXEC), ExecAuto falls
// back to qemu-i386-static running the same runner, isolated in new
// PID/network/IPC namespaces as nobody. ExecCPU and ExecQEMU insist on one.
// An emulated sandbox reports its emulator through Sandbox.Emulator and has
// no hardware length oracle. 32-bit case code reaches every address of its
// process, so the i386 runner on the CPU unmaps the vDSO and makes the
// stack the kernel gave it read-only: a case branching into random bytes
// that write there faults, rather than leaving memory that the next case
// (the same instruction's hit) reads differently.
//
// [Sandbox.HWLengths] and [HWLength] are the sandsifter length oracle: bytes
// placed against the unmapped page after the code page, run with the trap
// flag; a fetch fault at the boundary with the PC still at the start means
// the CPU wants more bytes.
package native

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

var errNotSupported = fmt.Errorf("kernelsim: %w", decode.ErrNotSupported)
