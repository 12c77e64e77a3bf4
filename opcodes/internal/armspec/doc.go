// Package armspec parses kboost's ARM encoding spec files (opcodes/spec/arm64.spec,
// arm.spec, thumb.spec and their includes) and renders the Go tables generated
// from them. It is shared by the generator command (opcodes/gen -format arm) and
// by the tests that fail when a generated file is stale.
//
// # Format
//
// A spec file is UTF-8 text, one encoding per line; '#' starts a comment and
// blank lines are ignored. A directive line sets table properties:
//
//	isa a64            instruction set: a64, a32 or t32 (width 32; t32 also 16)
//	index 21 8         lookup key: KeyBits bits of the word starting at bit KeyShift
//	include sve.spec   the lines of another file (relative to this one) go here
//
// The generated index lists, for every key value, the lines that can match a
// word with that key, in file order; a bucket of more than a dozen lines is
// split again on the field (up to 6 bits) that makes its largest part smallest.
//
// An encoding line has four fields separated by '|':
//
//	PATTERN | NAME | CLASS | FLAGS
//
// PATTERN lists the bits from the most significant one, as the Arm ARM draws
// encodings: tokens separated by blanks, each either a run of 0, 1 and x
// (x: any value) or a named field NAME:N (N any-value bits, for readability) or
// NAME=BITS (a named field with fixed bits). The positions must add up to the
// instruction width: 32, or in a t32 file also 16 for a T16 encoding, which
// matches the word 0x0000hhhh (the upper halfword is fixed to zero, so T16
// lines never match a T32 word: its first halfword is in bits 31..16). NAME is the mnemonic GNU objdump prints ("-" for an
// unallocated carve-out); CLASS one of unallocated branch exception system
// loadstore dpimm dpreg fpsimd sve sme; FLAGS a blank- or comma-separated list
// of flag names (pcrel load store excl acq rel atomic pair simd hint pac bti
// barrier sysreg wb mops alias group itflags), branch=KIND (jmp jcc call jmp-indirect
// call-indirect ret iret int ud) and if=COND (an alias condition the pattern
// cannot express: rn=rm rn=rm&!al !al imms<immr lsl rd/rn=sp movz movn orrmov badmask oddpair rt=rt2 wboverlap mopsregs
// rd=rm pd=pm pm=pg pn=pm=pg sve-badmask sve-movmask).
//
// Lines are tried in file order and the first match wins: write aliases and
// unallocated carve-outs before the general encoding.
package armspec
