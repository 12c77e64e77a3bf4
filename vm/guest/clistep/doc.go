// Package clistep registers the guest step "probe-cli": kboost's own command
// tree (internal/cli.Main, in-process) run inside a kboost test machine, so
// that `kboost probe add|list|rm|sweep|watch` are tested as commands against
// a real kernel. It is a separate package because internal/cli depends on
// package vm, which depends on vm/guest; cmd/kboost-guest links it in with a
// blank import.
//
// The step (arguments guest.CLIArgs, result probe-cli.json, a
// guest.CLIReport) picks its points with package loader from the live kernel
// (a symbol, an optimizable symbol+offset, a raw address), then runs, in
// order: probe sweep (nothing to sweep); probe add of a point kboost refuses
// (not an instruction boundary: exit 1, the kernel is not asked); probe add of
// a user-space address (exit 2); probe add of the three points with --json;
// probe list --json; probe rm of the first event; probe sweep; probe add of
// the optimizable point with text output, and a sweep; and probe watch,
// interrupted with SIGINT once it is watching. After each command it
// records the kboost entries of kprobe_events and kprobes/list; the host
// compares them with the command's output and exit status.
//
// It also registers "ia32-refused" (guest.IA32Args, result
// ia32-refused.json, a guest.IA32Report): on a kernel that refuses 32-bit
// executables, the errno of a static i386 program's execve, `kboost sim` and
// `kboost fuzz --arch i386 --exec auto` run in-process, and compiled test
// binaries' outputs and times (see vm.IA32Refused).
//
// It also registers "monitor-trial" (guest.MonitorArgs, result
// monitor-trial.json, a guest.MonitorReport): a static program run natively
// and under kboost's reference monitor (package monitor, built for the
// guest's architecture) with a policy denying one openat, and the processes
// left afterwards (see vm.MonitorTrial).
//
// Linux only; elsewhere the package is empty.
package clistep
