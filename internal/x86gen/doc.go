// Package x86gen generates x86 byte strings for differential testing of
// instruction decoders (against objdump, x86asm or the CPU itself).
//
// Contract:
//
//   - A Gen is deterministic: the same Config (seed, mode, weights) yields the
//     same sequence of candidates on every machine and Go version (it uses
//     math/rand/v2's PCG, whose output is specified).
//   - Next appends one candidate of 1..Config.MaxLen (default 15) bytes to dst
//     and returns the extended slice; Last reports which Kind produced it.
//   - Candidates are built from the parts that decide an instruction's length,
//     chosen to hit the corner cases: legacy prefixes (repeated, reordered,
//     conflicting), REX (also misplaced before a legacy prefix, and repeated),
//     the one-byte, 0F, 0F 38 and 0F 3A maps, 3DNow! (0F 0F), VEX2, VEX3,
//     EVEX and XOP prefixes (including reserved maps and bits, and in 32-bit
//     mode the LES/LDS/BOUND/POP forms of C4/C5/62/8F), ModRM/SIB variants
//     (every mod and rm, SIB base=5, disp8/disp32, RIP-relative) followed by
//     random displacement/immediate bytes. Some candidates are purely random,
//     some are a structured candidate cut short (Truncated).
//   - A candidate is not necessarily a valid instruction, and it need not end
//     where an instruction ends: the consumer decodes it and compares.
//   - Sweep is the systematic counterpart: it enumerates every opcode of
//     every map under each mandatory prefix and each VEX/EVEX/XOP field
//     combination, with register and memory ModRM forms of each ModRM.reg,
//     in a fixed order (about 1M candidates), so that a differential test
//     can name exactly which (map, opcode, prefix, form) cells disagree.
//
// The package depends on nothing but the standard library so that any test
// (the decoder's, a CPU-executed oracle's) can use it.
package x86gen
