// Package guest is the program that runs as /init inside a kboost test machine
// (package vm boots it), and the verification the guest and the host share:
// the wire format, the steps' arguments and records, the predictors (through
// loader, boost and audit) and the comparisons. Package vm reaches those
// packages only through this one. The guest does not link kboost's CLI: the
// steps that run kboost commands run the kboost binary at KboostPath.
//
// # Life of the guest
//
// Main, run as process 1 (it refuses otherwise, so that it can never power off a
// host), mounts devtmpfs on /dev, proc, sysfs, debugfs on /sys/kernel/debug and
// tracefs on /sys/kernel/tracing (failures are reported, not fatal); reads the
// Scenario from /scenario.json; lowers the console log level unless the scenario
// is verbose; runs the steps in order, each one isolated (an error or a panic is
// recorded and the next step runs); packs the results; prints them on the
// console between markers; and powers off with reboot(LINUX_REBOOT_CMD_POWER_OFF).
// If power-off fails it waits: the host stops QEMU once it sees the end marker.
//
// # Steps
//
//	uname         uname.json      Uname
//	features      features.json   Features: which kprobe/tracing files exist
//	kallsyms      kallsyms.txt    /proc/kallsyms as root (kptr_restrict set to 0)
//	config        config.gz       /proc/config.gz, when the kernel has it
//	dmesg         dmesg.txt       the kernel log
//	kprobe-check  kprobe-check.json  []ProbeCheck for KprobeCheckArgs.Points: each
//	              point is written as "p:kboost/pN sym+off" to kprobe_events alone;
//	              the errno and error_log message, or the kprobes/list line and
//	              flags ([FTRACE], [OPTIMIZED]) while enabled, are recorded; then
//	              the probe is disabled and removed.
//	kboost-verify kboost-verify.json X86Record for VerifyArgs (and kallsyms.txt,
//	              /proc/kallsyms): records, predicts nothing. It plans every
//	              boundary (the planning policy's kernel-decoder sweep over the
//	              /proc/kcore bytes; X86Planner) and sampled non-boundaries of
//	              the chosen functions, registers them in rounds (PlanRounds),
//	              records the functions' bytes, errno, address, [FTRACE],
//	              [OPTIMIZED] once the jmp is written, the whole slot from
//	              kprobe_insn_page in kcore (X86Slots: the instruction's copy,
//	              found without a prediction), an optimized probe's whole
//	              detour slot from kprobe_optinsn_page and the optprobe
//	              template; the host predicts (PredictX86) and trims the
//	              kernel's bytes to the predicted lengths (fields slot,
//	              optslot; see loader.OptTemplate).
//	probe-lifecycle probe-lifecycle.json Lifecycle for LifecycleArgs: package
//	              loader inside the guest: live predictions vs the kernel, the
//	              perf PMU probe, and SIGINT/SIGKILL of a watcher (a child: the
//	              guest binary re-run with ChildEnv set) then Sweep.
//	uprobe-trial  uprobe-trial.json UprobeReport for UprobeArgs: each point of a
//	              program of uprobe's trial protocol probed through the perf
//	              uprobe PMU, one process each (uprobe.Trial): errno, the
//	              site's bytes, [uprobes] / [uprobes-trampoline] in its maps,
//	              hits.
//	probe-cli     probe-cli.json CLIReport for CLIArgs: kboost's probe commands
//	              (the kboost binary at KboostPath, which the host packs when
//	              a step needs it: NeedsKboost) and the kernel's kprobes
//	              after each; a probe watch is interrupted with SIGINT.
//	ia32-refused  ia32-refused.json IA32Report for IA32Args: on a kernel
//	              refusing 32-bit executables, a static i386 program's
//	              execve, the kboost binary's i386 sim and fuzz with --exec
//	              auto, and compiled test binaries' outputs and times.
//
// Register adds steps (a program embedding this library registers its own before
// calling Main). Every run also stores steps.json ([]StepReport) and guest.json
// (GuestReport).
//
// # Wire format
//
// The payload is a gzip-compressed tar archive of the entries (Pack, Unpack). It
// travels on the console as lines; anything else on the console is ignored, and
// text may precede a marker on its line:
//
//	KBOOST-BEGIN <nonce>
//	KBOOST-DATA <seq> <crc32> <base64>     seq = 0, 1, ...; crc32 = 8 hex digits,
//	                                       IEEE CRC-32 of the base64 text; at most
//	                                       ChunkSize characters, a multiple of 4
//	                                       (standard base64, padded at the end)
//	KBOOST-END <nonce> <lines> <bytes> <sha256 of the payload, hex>
//
// or, when the guest cannot run the scenario at all, KBOOST-FAIL <nonce> <message>.
package guest
