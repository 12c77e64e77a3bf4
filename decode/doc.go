// Package decode decodes x86 instructions (i386 and x86-64) exactly: every prefix
// (legacy, REX, VEX, EVEX, XOP), the opcode map and byte, ModRM/SIB, displacement
// and immediates with their offsets and sizes, operand and address size,
// RIP-relative addressing and the control-transfer kind and target.
//
// Contract:
//   - Decode never panics. On success Inst.Len is 1..15. On failure the error is a
//     *DecodeError wrapping one of ErrTruncated, ErrInvalid, ErrTooLong or ErrMode,
//     and Inst.Len (and DecodeError.Len) still says how many bytes were consumed
//     (>= 1 for non-empty input), so a linear sweep can go on. For ErrInvalid the
//     length is the structural one (what the encoding occupies), which is what a
//     disassembler shows as "(bad)" coverage.
//   - Lengths follow the Intel SDM and, where vendors differ, the Linux kernel's
//     instruction decoder (which decides kprobe boundaries): near branches ignore
//     a 66 prefix in 64-bit mode (Intel semantics).
//   - Opcode facts come from package opcodes (generated from a spec file); Decode
//     allocates nothing.
//   - Arch.ParseHex is the one reading of instruction bytes written as hex
//     (every kboost command): bytes in memory order; words (A64/A32 32-bit,
//     Thumb 16-bit, little-endian in memory) with its words argument or a 0x
//     prefix. Its error is a *HexError wrapping ErrHex. Arch.DecodeOne
//     decodes exactly one instruction: short input is ErrTruncated, input
//     longer than the instruction ErrTrailing.
//   - Sweep decodes linearly as objdump -d does, restarting at symbols;
//     SweepSpans does so across instruction-set spans (an ARM ELF section's
//     ARM code, Thumb code and data: no instruction reads past a symbol,
//     data pieces come with ErrData).
//
// Text rendering (AT&T syntax) is done with golang.org/x/arch/x86/x86asm where it
// can; see Format.
package decode
