// Package loader puts kprobes into the running Linux kernel and reads back what
// the kernel made of them, next to kboost's prediction for the same point.
//
// # Targets
//
//   - Perf: the perf kprobe PMU (perf_event_open with the PMU type from
//     /sys/bus/event_source/devices/kprobe/type, config1 = pointer to the symbol,
//     config2 = offset, or for a raw address config1 = 0 and config2 = the
//     address; config bit "retprobe" from the PMU's format directory for
//     return probes). One event per online CPU counts hits. The probe belongs to
//     the file descriptors: it disappears when they are closed, including when the
//     process dies (SIGKILL), so nothing leaks. This is the default.
//   - Tracefs: "p:GROUP/EVENT SYM+OFF", "p:GROUP/EVENT 0xADDR" (default event
//     name addr_ADDR: kprobe_events shows the address hashed) or "r:..." written
//     to kprobe_events, the
//     fallback when the PMU is missing, and the way to leave a probe in place
//     (probe add). Groups always start with GroupPrefix ("kboost"); Sweep removes
//     every such group, e.g. after a killed watcher.
//
// Every symbol, group and event name is checked against the kernel's own
// grammar (Spec.Validate) before anything is written, so a request can never
// inject a second command, a fetch argument or a filter into tracefs.
//
// PMU and PerfEvents are the perf pieces shared with package uprobe (the
// uprobe PMU); Tracefs takes the dynamic-event file (kprobe_events or
// uprobe_events).
//
// # Prediction
//
// Live (Linux, root) reads the running kernel: /proc/kallsyms (kptr_restrict is
// honoured: zero addresses are an error), function bytes from /proc/kcore, the
// configuration from /proc/config.gz or /boot/config-$(uname -r), and the
// kprobe blacklist from /sys/kernel/debug/kprobes/blacklist; it predicts a point
// with kboost's linux-6.1 policy (verdict, errno, [FTRACE], [OPTIMIZED]). A raw
// address is resolved as the kernel resolves it (the kallsyms symbol holding
// it, then symbol+offset; none: ENOENT; not text: EINVAL) and predicted as that
// point, without the ambiguous-name rule (EADDRNOTAVAIL) that names are under.
//
// # Reading back
//
// Live.Readback reads, from /proc/kcore, what the kernel built for a probe in
// place: its instruction slot on a kprobe_insn_page (found by MatchSlots: the
// copied instruction with its RIP-relative displacement rebased, then int3, or
// a jmp back when boosted) and, for an [OPTIMIZED] probe, its detour buffer on
// a kprobe_optinsn_page (named by the jmp at the probed address): the kernel's
// optprobe template (OptTemplate, read from kcore at the optprobe_template_*
// symbols) with its clac, "mov $op,%rdi" and "call optimized_callback" fields
// patched in, the copied instructions (Decision.OptLen bytes, each rebased),
// and a jmp back to addr+OptLen. Each is compared with kboost's prediction for
// the same address (SlotImage, DetourImage); the only bytes not predicted are
// the kernel's optimized_kprobe pointer (".." in MaskedHex).
//
// # Errors
//
// Requests that cannot work fail before the kernel is asked: *SpecError (bad
// symbol or name), ErrNoKprobes (the kernel has none: checked first, as
// nothing else helps then), ErrNotRoot, ErrNoTracefs and ErrNoDebugfs (with
// the mount command in the message), ErrNoKprobeEvents (tracefs mounted
// without kprobe_events), ErrNoKprobePMU. A refusal by the kernel is a
// *KernelError carrying the errno and the newest tracefs error_log line.
// Elsewhere than Linux every operation returns an error wrapping decode.ErrNotSupported.
package loader
