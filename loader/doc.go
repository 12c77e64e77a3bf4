// Package loader puts kprobes into the running Linux kernel and reads back what
// the kernel made of them, next to kboost's prediction for the same point.
//
// # Targets
//
//   - Perf: the perf kprobe PMU (perf_event_open with the PMU type from
//     /sys/bus/event_source/devices/kprobe/type, config1 = pointer to the symbol,
//     config2 = offset; config bit "retprobe" from the PMU's format directory for
//     return probes). One event per online CPU counts hits. The probe belongs to
//     the file descriptors: it disappears when they are closed, including when the
//     process dies (SIGKILL), so nothing leaks. This is the default.
//   - Tracefs: "p:GROUP/EVENT SYM+OFF" (or "r:...") written to kprobe_events, the
//     fallback when the PMU is missing, and the way to leave a probe in place
//     (probe add). Groups always start with GroupPrefix ("kboost"); Sweep removes
//     every such group, e.g. after a killed watcher.
//
// Every symbol, group and event name is checked against the kernel's own
// grammar (Spec.Validate) before anything is written, so a request can never
// inject a second command, a fetch argument or a filter into tracefs.
//
// # Prediction
//
// Live (Linux, root) reads the running kernel: /proc/kallsyms (kptr_restrict is
// honoured: zero addresses are an error), function bytes from /proc/kcore, the
// configuration from /proc/config.gz or /boot/config-$(uname -r), and the
// kprobe blacklist from /sys/kernel/debug/kprobes/blacklist; it predicts a point
// with kboost's linux-6.1 policy (verdict, errno, [FTRACE], [OPTIMIZED]).
//
// # Errors
//
// Requests that cannot work fail before the kernel is asked: *SpecError (bad
// symbol or name), ErrNotRoot, ErrNoTracefs and ErrNoDebugfs (with the mount
// command in the message), ErrNoKprobePMU. A refusal by the kernel is a
// *KernelError carrying the errno and the newest tracefs error_log line.
// Elsewhere than Linux every operation returns ErrNotSupported.
package loader
