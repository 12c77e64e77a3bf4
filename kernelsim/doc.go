// Package kernelsim runs instructions for real — x86 on the CPU, ARM64, A32
// and Thumb under qemu-user — and reports the final architectural state, so
// kboost can check a kprobes verdict ("this instruction behaves the same from
// an out-of-line slot") against the machine. It holds the models and the
// interfaces; backends live in packages of their own, as delve's pkg/proc
// does it: the ptrace sandbox for x86 is kernelsim/native, the emulator
// backend for the ARM instruction sets is kernelsim/gdbserial (both
// registered through [RegisterBackend] when imported), and the differential
// fuzz engine is kernelsim/fuzz.
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
// kernelsim/native is the backend on the host CPU (the ptrace sandbox,
// linux/amd64), kernelsim/gdbserial the emulator backend; both register
// through [RegisterBackend] when imported, and [OpenBackend] opens them.
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
