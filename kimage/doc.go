// Package kimage reads everything kboost needs from binary inputs: ELF files
// (vmlinux, modules, executables), Debian kernel packages, x86 bzImages, symbol
// maps, kernel configurations and the kernel's special-site tables.
//
// # Opening inputs
//
// Open recognises its input by content, not by name:
//
//   - ELF: machine EM_X86_64 gives decode.X86_64, EM_386 decode.I386,
//     EM_AARCH64 decode.ARM64, EM_ARM decode.ARM with per-section spans of
//     ARM, Thumb and data (Section.Spans, File.CodeSpans) decided as GNU
//     objdump does: the mapping symbols $a, $t, $d (and "$a.N" forms), else
//     the Thumb bit of the function symbol a block starts at; mapping symbols
//     are not in the SymTab and Thumb functions are there at their even
//     address (see a32_elf.go). Any other machine is an error wrapping
//     ErrUnsupportedArch that names the machine and the supported ones.
//     Sections are read lazily from the file.
//   - Debian package (ar archive): data.tar.{xz,zst,gz} is streamed until
//     ./boot/vmlinuz-*, ./boot/config-* and ./boot/System.map-* are found. The
//     vmlinuz is extracted, the config parsed, and a real System.map (not
//     Debian's placeholder) used when the vmlinux has no symbols.
//   - x86 bzImage ("HdrS" at 0x202): the payload located by the setup header is
//     decompressed (xz with or without the x86 BCJ filter, gzip, zstd, bzip2)
//     into one buffer, the ELF vmlinux.
//   - 32-bit ARM zImage (0x016f2818 at 0x24; Debian armmp's vmlinuz): the
//     payload (xz with the ARM branch filter, or gzip) is found by its
//     magic; the decompressed Image, given as such, is recognised by its
//     first word and its banner and processor strings. Kind KindARMImage,
//     Arch decode.ARM (decode.Thumb for CONFIG_THUMB2_KERNEL). With kallsyms,
//     SetSymbols places the Image (_text, else the most frequent BL target,
//     __gnu_mcount_nc) and synthesizes its sections as for arm64; KernelTables
//     finds the ftrace call sites, the jump-label table by its shape and the
//     NOKPROBE list between two addresses init_kprobes loads (a32_tables.go).
//   - arm64 Image ("ARMd" at 0x38), plain or gzip-compressed: Arch
//     decode.ARM64. An Image has no symbols and no section headers: SetSymbols
//     with a kallsyms table synthesizes .text (_stext.._etext), .init.text
//     (_sinittext.._einittext) and the data around them, and shifts a KASLR
//     table to the link address (KIMAGE_VADDR, checked against .rela.dyn).
//
// Everything is pure Go: no external program is run, except by
// FetchDebianKernel and FetchDebianKernelVersion, which drive apt. The latter
// looks for a version in the system's sources, then in Debian trixie and
// unstable through apt configurations of their own under CacheDir()/apt
// (sources list, lists, cache), never changing the system's. A Debian 7.x
// kernel comes in a linux-binary-<release> package (the image, under
// usr/lib/modules/<release>/) and a linux-base-<release> one (config,
// System.map); ReadDeb of the first reads the second beside it.
//
// # Memory
//
// An extracted vmlinux lives in exactly one buffer and section data are
// sub-slices of it; an ELF on disk is read section by section, on demand, and
// each section is cached. Section.Data results must not be modified. Peak
// memory of reading a 63 MiB vmlinux's code and tables is about 27 MiB;
// extracting it from its .deb peaks near twice its size plus the decompressor's
// dictionary.
//
// # Symbols
//
// SymTab is sorted by address once; Lookup is O(log n), ByName is a map.
// Aliases at one address are ordered with sized functions and global symbols
// first. Sizes come from ELF, or for map files (System.map, /proc/kallsyms) are
// the distance to the next higher address among symbols of the same module and
// kind (text or not); the last symbol of such a run has size 0 (unknown) and
// only its exact address resolves. A kallsyms dump with every address zero
// fails with ErrKptrRestrict. File.SetSymbols shifts a table taken from a KASLR
// boot to the image's link-time addresses using _text.
//
// # Kernel tables
//
// For an arm64 Image (Debian's has no CONFIG_KALLSYMS_ALL: kallsyms names
// text only) KernelTables finds each table's bounds in the kernel's own code:
// the ADRP+ADD pairs of the function that walks it (search_kernel_exception_table,
// jump_label_init, find_bug, ftrace_init, init_kprobes) give candidate bounds,
// and the widest pair whose every entry has the table's shape is taken
// (Source == SourceCode); absolute pointers (__mcount_loc, the NOKPROBE list)
// are read through .rela.dyn, as the relocatable kernel applies it at boot,
// or, for a RELR kernel (7.2), from the Image itself at the addresses
// .relr.dyn names (both tables found by their shape). Tables.Ftrace holds the
// ftrace records (ftrace_call_adjust of the configuration: the patchable
// entry, or with DYNAMIC_FTRACE_WITH_CALL_OPS the NOPs before the function),
// Tables.Refused the ranges arm64's kprobe blacklist holds. See
// a64_tables.go.
//
// ARM64Alternatives reads an arm64 Image's CPU alternatives (struct alt_instr
// entries, found by the __alt_instructions symbols or through the alt_region
// that __apply_alternatives_multi_stop addresses) and numbers cpucaps by the
// Image's own capability descriptors (A64CapNames; the numbering differs
// between 6.1 stable releases); Apply patches bytes as __apply_alternatives
// does, branch and ADRP fix-ups included. See a64_alt.go. The cpucap lists
// and x86 feature bits per version are generated from spec/ (derived from
// the kernels' sources by internal/cpuspec): `go generate ./kimage`.
//
// ReadX86Boot reads what an x86-64 kernel patches in its own text at boot
// (ftrace records, .parainstructions, .altinstructions, .ibt_endbr_seal,
// .smp_locks) in its version's layout; X86Boot.Apply patches bytes as that
// version's alternative_instructions does (Linux 6.1, 6.12 and 7.2 are
// modelled; 6.8-6.11 as 6.12, whose rules upstream has had since 6.8; another
// version as the nearest older one: X86Boot.Note says which) on a
// machine given as an X86CPU (its feature bits as the kernel numbers them and
// its number of CPUs): from /proc/cpuinfo flags (X86CPUFromFlags, numbered by
// the version's cpufeatures.h table, X86FeatureTableFor) or a named machine
// kboost boots (X86NamedCPU: qemu64, its captured cpuinfo). See x86_boot.go.
//
// Patcher rewrites code the way the kernel does at boot, before kprobes
// decode it: return thunks to `ret` on x86 (NewReturnPatcher), the whole x86
// boot patching for a CPU (NewX86BootPatcher), the first patchable-entry NOP
// of every traced function on arm64 (NewFtraceInitPatcher: `mov x9, x30`, as
// ftrace_init_nop writes it) and the arm64 CPU alternatives of a chosen set
// of cpucaps (Patcher.SetCPUCaps). See bootpatch.go.
//
// SourceDirs reads an ELF file's DWARF line tables (compressed sections
// too) and maps an address to the directory of its source file, as addr2line
// does without -i; a file without them (Debian's vmlinux, stripped binaries)
// gives ErrNoLineTables. See srcdir.go.
//
// KernelTables reads, for x86-64 and i386 kernels with the Linux 6.1 layouts,
// the exception table, BUG/WARN sites, jump-label and static-call sites,
// alternatives, the NOKPROBE_SYMBOL blacklist and the text ranges that kprobes
// refuses. Each Table says whether it came from an ELF section, from
// __start/__stop symbols, or is missing (with a Note): a stripped Debian
// vmlinux keeps __ex_table, __bug_table and .altinstructions as sections, the
// rest needs symbols (a kallsyms dump of a CONFIG_KALLSYMS_ALL kernel). The
// bug_entry size is derived from CONFIG_GENERIC_BUG_RELATIVE_POINTERS and
// CONFIG_DEBUG_BUGVERBOSE and must divide the table.
//
// # Errors
//
// Malformed input gives a *FormatError naming what was read, where and why,
// wrapping ErrFormat, ErrCorrupt, ErrUnsupportedCompression or
// ErrUnsupportedArch; other conditions have sentinels (ErrNoKernel,
// ErrPlaceholderMap, ErrKptrRestrict, ErrNoSymbol, ErrNoConfig, ErrAddress,
// decode.ErrNotSupported). No input makes the parsers panic (see the fuzz targets).
//
// kimage imports decode (for the instruction-set values) and nothing else of
// kboost.
package kimage
