// Package uprobe tells what the running kernel's uprobes do at a point of a
// user-space ELF file, and checks it.
//
// # Points and file offsets
//
// Open reads an x86-64, i386 or arm64 ELF executable or shared library (PIE
// or not, static, Go, stripped down to its dynamic symbols). Binary.Resolve turns a request —
// SYMBOL, SYMBOL+OFF or a virtual address 0xADDR — into the file offset the
// kernel wants (uprobe_events "PATH:0xOFF", perf config2): the virtual address
// minus its PT_LOAD segment's p_vaddr plus p_offset. A virtual address outside
// every executable segment is an error, not a guess.
//
// # Verdicts
//
// A Kernel is one kernel version's uprobes behaviour as a value: the boost
// policy of that version (uprobes-x86 for 6.1, uprobes-6.12, uprobes-6.18,
// uprobes-7.2; on arm64 uprobes-arm64, uprobes-6.12-arm64, uprobes-6.18-arm64,
// uprobes-7.2-arm64: Kernel.PolicyFor) decides acceptance, emulation and which NOP sites the kernel
// optimizes into a call to the [uprobes-trampoline] page; the Kernel adds what
// that call does to the process (6.18's red-zone write). ForRelease and
// Running pick the model of a release (the same major.minor, else the nearest
// older modelled one, with a note); Lookup takes a model or policy name. Audit decides every instruction boundary of a function: the path
// (refused with an errno, emulated, single-stepped out of line, optimized),
// the rules behind it, and the hazards kboost sees and the kernel does not: a
// mid-instruction offset (the kernel installs it; kboost refuses it, naming
// the instruction it falls in), an optimized site in a function that keeps data
// in the red zone, a return probe on a Go binary (its runtime moves stacks).
//
// # USDT
//
// Binary.USDT parses .note.stapsdt: provider, name, probe address (adjusted by
// .stapsdt.base as libbpf does), semaphore and argument spec; the semaphore's
// file offset is the ref_ctr_offset the kernel takes.
//
// Cheapest moves a point to the cheapest site of its basic block that runs as
// often, never to one with a hazard, by the model's paths (optimized, else
// emulated, else single-stepped: what is optimized or emulated differs per
// version).
//
// # Live (Linux, root)
//
// OpenPMU registers a Probe through the perf uprobe PMU (config1 the path,
// config2 the file offset, the retprobe and ref_ctr_offset format fields; one
// process or all): the probe belongs to the file descriptors and vanishes with
// them. AddTracefs, RemoveTracefs and SweepTracefs drive uprobe_events (group
// UprobeGroup; every path and name is validated before it is written). Watch
// streams hit counts. ReadBack reads a probed process's site bytes through
// /proc/PID/mem and its [uprobes] / [uprobes-trampoline] mappings, and says
// which path they show (the optimized call, 7.2's behind lea -0x80(%rsp),%rsp).
// Trial runs one probe on a program of the trial protocol (kboost's uprobe
// test programs: "ready", a byte on stdin, the calls, one "done" line) and
// reads back what the kernel did; TrialExpect and TrialAgrees compare that
// with a Site's verdict (the host's and a booted guest's corpus checks).
// Bench measures each path's cost per call on a built-in workload whose
// optimized row probes BenchNop, the NOP form the model optimizes (6.18: the
// 5-byte NOP, 7.2: the 10-byte one); BenchTarget the cost per hit of one site
// in a command.
//
// # Errors
//
// Bad input is a *PointError or *FormatError naming the cause; elsewhere than
// Linux the live operations return an error wrapping decode.ErrNotSupported.
package uprobe
