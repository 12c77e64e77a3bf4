// Package vm boots real Linux kernels under QEMU and asks them questions: the
// real-kernel harness behind kboost's oracles and its live verification.
//
// # Contract
//
// Run boots Config.Kernel with an initramfs built by WriteInitramfs (a gzip newc
// cpio archive) that holds:
//
//	/init           the guest binary: package cmd/kboost-guest (library vm/guest),
//	                built static (CGO_ENABLED=0, GOOS=linux, GOARCH of the guest)
//	/scenario.json  the guest.Scenario: a nonce and the steps to run
//	Config.Files    anything else a step needs (kernel modules, inputs)
//
// QEMU is started as
//
//	<Arch.QEMU> <Arch.Machine...> -m 512 -kernel K -initrd I \
//	    -append "console=<Arch.Console> panic=-1 nokaslr quiet <Config.Append...>" \
//	    -nographic -no-reboot
//
// (x86 always uses -accel tcg: /dev/kvm hangs with stock QEMU on these machines;
// Config.HostMemory adds -qmp unix:<tmp>/qmp.sock,server=on,wait=off and a pipe
// as QEMU's serial input).
// The console is read line by line. The guest prints its result between a begin
// and an end marker carrying the scenario's nonce (grammar in package guest); the
// Decoder checks every line's CRC-32, the sequence, the length and the SHA-256 of
// the whole payload, a gzip-compressed tar archive of named entries. Result holds
// the entries, the per-step reports and the timing.
//
// QEMU runs in its own process group, with SIGKILL as its parent-death signal.
// Run kills the group and removes its temporary directory on every path: the end
// marker (QEMU is stopped at once, whether or not the guest powers off), the
// guest's KBOOST-FAIL line, QEMU exiting, Config.Timeout (DefaultTimeout when 0),
// context cancellation, and any error. Errors say which of these happened:
// *QEMUNotFoundError (names the apt package), *KernelPanicError and *TimeoutError
// and *ExitError (with the last console lines), *GuestFailError, *ProtocolError,
// *GoBuildError. A step failing inside the guest is not an error of Run: see
// Result.Err, which returns a *StepError.
//
// # Host memory reads
//
// With Config.HostMemory (guest.Scenario.HostMemory) a step may ask the host to
// read guest kernel memory: the guest prints a KBOOST-MEM request (grammar in
// package guest, hostmem.go) and waits on the console's input; the console reader
// stops the guest through QEMU's QMP monitor, reads with memsave (virtual, by the
// guest CPU's current page tables) or, when the request names the kernel's own
// translation table, walks that table (Arch.WalkTTB: ARMShortWalk for 32-bit ARM)
// and reads with pmemsave (physical), lets the guest run and writes the
// KBOOST-MEMR answer to QEMU's serial input. Result.HostMem counts the reads.
//
// # Kallsyms
//
// DebianKallsyms(ctx, "linux-image-amd64" or "linux-image-686") fetches the
// current kernel package with kimage.FetchDebianKernel, boots it with nokaslr,
// reads /proc/kallsyms as root (so its addresses are the vmlinux's), uname, and
// what the kernel offers (kprobes/list, kprobe_events, config.gz, kcore), and
// caches the dump; see KallsymsPaths. A cached dump is returned without booting.
// Debian's 686 kernel lacks CONFIG_KALLSYMS_ALL, so its dump has no data symbols
// (no table bounds such as __start___jump_table).
//
// # Cache ($KBOOST_CACHE, default $HOME/.cache/kboost)
//
//	debs/<package>.deb                     kernel packages (package kimage)
//	guest/<pkg>-<arch>-<key>               guest binaries; key hashes the Go version,
//	                                       target and every non-stdlib source file
//	kallsyms/<package file without .deb>.txt   /proc/kallsyms of that kernel
//	kallsyms/<...>.json                    KallsymsRecord: uname, features, timings
//	kbuild/<KbuildKey>/                    the boost kernel: bzImage, vmlinux,
//	                                       System.map, config, release, build.log
//	kbuild/<KbuildKey>.lock                flock held while building
//	verify/<package>-<key>.json            VerifyARM64's and VerifyARM's kernel record;
//	                                       key hashes the machine, arguments and record version
//	verify/<package>-x86-<key>.json        Verify's x86-64 record (guest.X86Record), and
//	verify/<...>.json.kallsyms.gz          the guest's /proc/kallsyms of the same boot
//
// # The boost-capable kernel
//
// Debian's kernels are PREEMPT_DYNAMIC, which compiles kprobes' boosting out.
// BuildBoostKernel builds one that boosts from Debian's linux-source-6.1 tarball:
// `make tinyconfig`, scripts/config -e for each of BoostKernelOptions (PREEMPT_NONE,
// KPROBES, OPTPROBES, KPROBES_ON_FTRACE, DYNAMIC_FTRACE, KALLSYMS_ALL, PROC_KCORE,
// what a static Go /init needs, ...), `make olddefconfig`, then a check that every
// one of them is =y and PREEMPTION and RANDOMIZE_BASE are off (*KconfigError
// otherwise), and `make -jN bzImage`. The tree is unpacked in a temporary
// directory under the cache and removed; the key hashes the recipe, the fragment
// and the tarball's name, size and mtime. Missing tools or headers give a
// *KbuildDepsError naming the apt packages; a failing step a *KbuildError with
// the log's tail. VerifyConfig.Build boots such a kernel; its vmlinux and .config
// go into the initramfs as the Debian kernel's do.
//
// # ARM64 verification
//
// VerifyARM64 boots a Debian linux-image-*-arm64 package's Image under
// qemu-system-aarch64 (-M virt -cpu cortex-a57) with the kboost-verify-arm64
// step (package guest): for every 4-byte boundary of the chosen functions, and
// two misaligned offsets each, it registers a kprobe event, records the errno or
// the kprobes/list entry, and finds the probe's slot ([insn, BRK #6]) in the
// kprobe_insn_page read from /proc/kcore. The kernel's record is cached under
// verify/ and predicted again with the arm64 policy on every call
// (guest.PredictARM64Report), with the jump-label and exception tables
// kimage.KernelTables locates in the Image (ARM64ImageTables: the package's
// kallsyms dump, DebKallsyms, names the functions whose ADRP+ADD pairs bound
// them; CheckImageMatches checks that the Image is the recorded kernel);
// WriteTable prints the outcome table per mnemonic and, with predictions, the
// agreement table.
//
// # 32-bit ARM verification
//
// VerifyARM runs the same recorder (guest.ARMProbes, step kboost-verify-arm)
// on a Debian linux-image-*-armmp package: its zImage boots as it is under
// qemu-system-arm (-M virt -cpu cortex-a15). Each round's probes are enabled
// and the recorder waits for the delayed optimizer before reading
// [OPTIMIZED]. The armmp kernel has no /proc/kcore: the functions' bytes come
// from the zImage's Image (kimage.ExtractARMZImage), placed by its mcount calls
// (ARMImageBase) and checked against available_filter_functions (FillARMImage);
// the Image also gives the ftrace locations (bl __gnu_mcount_nc) and the
// jump-label sites (FindARMJumpLabels), which guest.PredictFixedReport hands
// to the linux-6.1-arm policy. The kprobe slot pages are read by the host
// (host memory reads, above) after each round, translated through
// swapper_pg_dir (found from /proc/iomem's "Kernel code"), kept in the record
// per round, and matched to the probes on the host once the records have
// their bytes (guest.MatchRecordedSlots with guest.ARMSlotMatch: the kernel's
// copy is the instruction made unconditional with its registers renamed,
// then mov pc, lr). The agreement table compares errno, addr, ftrace,
// optimized and slot.
//
// # One command for every architecture
//
// A Verifier (AMD64Verifier, ARM64Verifier, ARMVerifier; LookupVerifier by
// name) is an architecture's verification scenario: its Debian package, default
// policy, compared fields and what it accepts (a boost kernel, probe spacing,
// cached records). Verifier.Verify runs a VerifyRequest and returns a
// VerifyOutcome whose WriteTable, WriteJSON and Summary are the same for every
// architecture; `kboost vm verify --arch` is built on it. Every
// architecture's records get one summary (VerifySummary, from
// recordView.summarize) and one --json writer; what differs per architecture
// is a recordView value (x86View, arm64View, armView, in the x86_, a64_ and
// a32_ files: compared fields, comparison, mnemonic table, whether slots jump
// back). The shared types are in verify.go here and in package guest. Without a policy,
// the booted kernel's release picks one (boost.ForKernel: the same
// major.minor, else the nearest older modelled version, said in the notes).
// Every architecture's guest only records what the kernel did; the host
// predicts from the recorded bytes on every call (cached records included).
// The x86-64 recorder also plans its offsets (instruction boundaries are
// the planning policy's kernel-decoder sweep of the kcore bytes): Verify
// picks that policy from the package's release before the boot, keys the
// cache with it, and predicts with the same policy, from the guest's
// kallsyms (recorded in the same boot, cached beside the record as
// <record>.kallsyms.gz) and the package's vmlinux and config.
// The x86-64 guest boots with clocksource=hpet: it times its waits by its own
// clock, which a TSC miscalibrated under a loaded host runs fast (a note says
// when the guest's time exceeded the host's); VerifyRequest.Boundaries
// probes fewer boundaries per function, as the CI's runs of 6.12 and 7.2 do.
//
// # Uprobes in a booted kernel
//
// The uprobe-trial step (package guest) probes a static program of uprobe's
// trial protocol, copied into the initramfs, at every given point, each in
// its own process; the guest reports errno, site bytes, the [uprobes] and
// [uprobes-trampoline] mappings and hits, for the host to compare with the
// uprobes model of the guest's release (uprobe.TrialAgrees). A verification
// runs it in its own boot, after its step (VerifyRequest.Uprobes, on x86-64
// and arm64; cached with the arm64 record under a key naming the program
// and its points); UprobeTrials boots a kernel for the step alone.
//
// # A host that refuses 32-bit executables
//
// IA32Refused boots a Debian amd64 kernel (6.7 or later) with
// ia32_emulation=0, so that execve of a 32-bit program fails with ENOEXEC,
// as on hosts without IA32 emulation, and runs the "ia32-refused" guest
// step: a static i386 program, the kboost binary's i386 sim
// and fuzz with --exec auto (qemu-i386-static is copied from the host into
// the initramfs) and compiled test binaries (go test -c), each in its
// package's directory under /src with the files IA32Request adds (the guest
// has no Go toolchain: the kboost binaries the tests run, their test data),
// whose results the host checks.
//
// # Platforms
//
// Booting (Run, DebianKallsyms) needs Linux and returns an error wrapping decode.ErrNotSupported
// elsewhere; building initramfs archives and decoding console output work
// everywhere. Guests: AMD64, I386, ARM64 and ARM (VerifyARM) are verified. Building the guest
// needs the go command and the kboost module source (the current directory inside
// it); otherwise set Config.GuestBinary or $KBOOST_GUEST to a prebuilt binary.
// The steps that run kboost commands (guest.NeedsKboost: probe-cli,
// ia32-refused) get cmd/kboost built the same way, packed at
// guest.KboostPath (Config.KboostBinary or $KBOOST_GUEST_KBOOST to prebuild);
// the /init does not link the CLI.
//
// Needed on Debian: apt-get install qemu-system-x86 cpio (cpio only for tests);
// for arm64 qemu-system-arm, the arm64 dpkg architecture (dpkg
// --add-architecture arm64; apt-get update) and, for its oracle test,
// binutils-aarch64-linux-gnu; for arm qemu-system-arm;
// for the boost kernel also linux-source-6.1 bc bison flex libelf-dev libssl-dev
// gcc make (and xz-utils, perl, binutils, usually present).
package vm
