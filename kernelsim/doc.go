// Package kernelsim runs instructions for real — x86 on the CPU, ARM64, A32
// and Thumb under qemu-user — and reports the final architectural state, so
// kboost can check a kprobes verdict ("this instruction behaves the same from
// an out-of-line slot") against the machine. It holds the models and the
// interfaces; backends live in packages of their own, as delve's pkg/proc
// does it: the ptrace sandbox for x86 is here for now ([Sandbox]), the
// emulator backend for the ARM instruction sets is kernelsim/gdbserial
// (registered through [RegisterBackend] when imported), and the
// differential fuzz engine is kernelsim/fuzz.
//
// # Contract
//
// A [Backend] executes [Case] values: code bytes at the layout's original
// address (followed by a return stub the backend adds), optionally slot bytes
// at the slot address, an initial register file and the contents of a scratch
// page and a stack page. For each case it returns a [Result]: all general
// registers, the flags masked to the architectural bits ([Arch].FlagsMask), the
// PC, both pages, or the fault (signal, si_code, address, trap number, error
// code, registers at the fault). [Arch.Compare] compares two results (a fault
// is compared as a fault; #GP of privileged instructions and trapped system
// calls give [NotVerifiable]).
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
//
// # Slot model and hit simulation
//
// [BuildSlot] and [NewSlotModel] write what a kernel writes to a kprobe slot
// (the copy with its RIP-relative displacement rebased, refused with a
// [SlotRangeError] beyond s32, then jmp rel32 back to addr+len or int3),
// independently of package boost, whose slot image they check; Verify checks
// the layout (jump target, MAX_INSN_SIZE, no branch into the tail).
// [Probe.HitCase] turns a trial state into the simulated kprobe hit on a
// [Path]: the boosted slot, the single-step slot (with [Probe.FixHit] moving
// IP back to addr+len), or Linux 6.1's emulation ([Arch.Emulate6_1], the
// kernel's quirks included) resumed through a jump to the emulated IP.
// [CheckHit] runs it against the in-place run on a Backend ([CheckModel] for
// any [HitModel]); [Lazy2006] replays the 2006 booster's lazy -1/0/1 states
// hit by hit. [BuildSlotA64], [A64Probe] and [Arch.SimulateA64] model
// Linux's [insn, BRK #6] slot, the boost-arm64 [insn, B addr+4] slot and
// 6.1's simulation. [A32Probe] models the kernel's hit for linux-6.1-arm and
// linux-6.1-thumb as per-ISA values ([ISA]: instruction bytes, breakpoint,
// jumps, the hit and the slot check): the condition check (the IT block's
// for Thumb), the policy's slot called with the emulate_* / t16_ /
// t32_emulate_* handler's register set-up and written back the same way,
// the simulations, and LDM/STM through kprobe_decode_ldmstm's windows or
// simulation (ldmstm.go); [CheckHitsA32] runs them against the in-place run.
//
// [Simulate] is `kboost sim` as one call for every arch (per-arch data keyed
// on the *decode.Arch in x86_sim.go, a64_sim.go, a32_sim.go): decision, slot
// and its check, the states run on the arch's backend ([OpenBackend]), and
// the conclusion, in a [SimReport] whose JSON is the command's. Bad input is
// an [InputError]; a refuted hit is a report, not an error.
//
// Everything that starts processes is behind the linux && amd64 build tag;
// elsewhere the constructors return an error wrapping decode.ErrNotSupported.
package kernelsim
