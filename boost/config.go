package boost

import (
	"strings"
)

// Config is the part of a kernel configuration (and of the probe itself) that
// changes what kprobes do. Build it from a .config with ConfigFromFunc, or start
// from a policy's Defaults.
type Config struct {
	// Preemption is CONFIG_PREEMPTION (6.x) or CONFIG_PREEMPT (2.6.17): boosting
	// is compiled out.
	Preemption bool
	// Retpoline is CONFIG_RETPOLINE: 6.1 can_optimize treats jumps into the
	// indirect-thunk range as indirect jumps; 6.12 skips the indirect-jump test.
	Retpoline bool
	// IBT is CONFIG_X86_KERNEL_IBT: sym+0 and sym+4 move past an ENDBR.
	IBT bool
	// Optprobes is CONFIG_OPTPROBES (and the debug.kprobes-optimization sysctl on).
	Optprobes bool
	// KprobesOnFtrace is CONFIG_KPROBES_ON_FTRACE: a probe on an ftrace location
	// becomes ftrace-based; without it such a probe gets EINVAL.
	KprobesOnFtrace bool
	// DynamicFtrace is CONFIG_DYNAMIC_FTRACE (needed for the notrace check).
	DynamicFtrace bool
	// KprobeEventsOnNotrace is CONFIG_KPROBE_EVENTS_ON_NOTRACE: kprobe_events
	// accepts notrace functions.
	KprobeEventsOnNotrace bool
	// SMP is CONFIG_SMP (alternatives_text_reserved exists only with SMP).
	SMP bool
	// UPLocks: the core kernel was booted on one CPU, so its .smp_locks table is
	// registered with alternatives_smp_module_add and alternatives_text_reserved
	// consults it (a boot-time fact, not a .config option).
	UPLocks bool
	// PostHandler: the probe has a post_handler (kprobe_events and perf never
	// set one). Prevents boosting and optimization.
	PostHandler bool
	// DirectRegister: the probe is registered with register_kprobe() (a module),
	// not via kprobe_events/perf, so the notrace check does not apply.
	DirectRegister bool
}

// ConfigFromFunc builds a Config from kernel configuration values. get returns the
// value of a symbol ("CONFIG_PREEMPTION" -> "y", "m", a string, ...) and whether it
// is set; a nil get yields the zero Config. Boot-time and per-probe fields
// (UPLocks, PostHandler, DirectRegister) stay false.
func ConfigFromFunc(get func(name string) (string, bool)) Config {
	var c Config
	if get == nil {
		return c
	}
	on := func(name string) bool {
		v, ok := get(name)
		if !ok {
			v, ok = get(strings.TrimPrefix(name, "CONFIG_"))
		}
		return ok && (v == "y" || v == "m")
	}
	c.Preemption = on("CONFIG_PREEMPTION") || on("CONFIG_PREEMPT")
	c.Retpoline = on("CONFIG_RETPOLINE") || on("CONFIG_MITIGATION_RETPOLINE")
	c.IBT = on("CONFIG_X86_KERNEL_IBT")
	c.Optprobes = on("CONFIG_OPTPROBES")
	c.KprobesOnFtrace = on("CONFIG_KPROBES_ON_FTRACE")
	c.DynamicFtrace = on("CONFIG_DYNAMIC_FTRACE")
	c.KprobeEventsOnNotrace = on("CONFIG_KPROBE_EVENTS_ON_NOTRACE")
	c.SMP = on("CONFIG_SMP")
	return c
}

// Flags lists the Config fields that are set, in .config spelling (for reports).
func (c Config) Flags() []string {
	var f []string
	add := func(b bool, n string) {
		if b {
			f = append(f, n)
		}
	}
	add(c.Preemption, "PREEMPTION")
	add(c.Retpoline, "RETPOLINE")
	add(c.IBT, "X86_KERNEL_IBT")
	add(c.Optprobes, "OPTPROBES")
	add(c.KprobesOnFtrace, "KPROBES_ON_FTRACE")
	add(c.DynamicFtrace, "DYNAMIC_FTRACE")
	add(c.KprobeEventsOnNotrace, "KPROBE_EVENTS_ON_NOTRACE")
	add(c.SMP, "SMP")
	add(c.UPLocks, "up-boot-smp-locks")
	add(c.PostHandler, "post_handler")
	add(c.DirectRegister, "register_kprobe")
	return f
}

// debian61 is Debian bookworm's linux-image-amd64 6.1 configuration (read from
// linux-config-6.1's config.amd64_none_amd64): PREEMPT_DYNAMIC (so PREEMPTION=y),
// RETPOLINE=y, X86_KERNEL_IBT not set, OPTPROBES=y, KPROBES_ON_FTRACE=y,
// DYNAMIC_FTRACE=y, KPROBE_EVENTS_ON_NOTRACE not set, SMP=y. The 686 flavour
// shares it (IBT is 64-bit only).
var debian61 = Config{
	Preemption: true, Retpoline: true, Optprobes: true, KprobesOnFtrace: true,
	DynamicFtrace: true, SMP: true,
}

// debian612 is Debian's linux-image-amd64 6.12 configuration (linux-config-6.12's
// config.amd64_none_amd64; trixie's and bookworm-security's agree on these):
// as debian61, plus X86_KERNEL_IBT=y; RETPOLINE is spelled
// MITIGATION_RETPOLINE. Debian builds no i386 6.12 kernel.
var debian612 = Config{
	Preemption: true, Retpoline: true, IBT: true, Optprobes: true, KprobesOnFtrace: true,
	DynamicFtrace: true, SMP: true,
}
