// Package cpuspec keeps the CPU capability tables kimage numbers boot-time
// patching with, per kernel version, as spec files derived from the
// kernel's own sources: arm64 cpucaps (arch/arm64/tools/cpucaps, numbered by
// position, with the capability descriptions the kernel logs as "CPU
// features: detected:") and x86 feature bits (arch/x86/include/asm/
// cpufeatures.h, with the /proc/cpuinfo names the kernel's mkcapflags.sh
// derives from it). Extract reads the sources, Parse and Write the spec
// text, Generate the Go tables of package kimage.
package cpuspec
