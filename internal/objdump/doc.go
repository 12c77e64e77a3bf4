// Package objdump runs GNU objdump as an x86 disassembly oracle and parses its
// output as a stream of instruction records.
//
// Contract:
//
//   - Run and RunBytes start objdump with -d (or -D for raw bytes) -w -z, so
//     every byte of an instruction is on its one line and blocks of zeros are
//     disassembled instead of being elided as "...". For raw bytes they pass
//     -b binary, -m i386 or i386:x86-64 and --adjust-vma.
//   - A Scanner reads objdump's text output (from any io.Reader) one record at
//     a time without holding the whole output in memory, so a 6.6M-instruction
//     vmlinux streams in constant space. A Record is only valid until the next
//     call to Scan; copy what must outlive it.
//   - Every printed instruction becomes one Record with its address, its bytes
//     and its text. objdump's special lines are classified, not hidden:
//     "(bad)" sets Bad; a line holding nothing but prefixes (objdump prints a
//     REX that is not last before the opcode, a prefix run it cannot finish,
//     or a lone prefix at the end of the input on its own line) sets
//     PrefixOnly; ".byte 0xNN" (objdump could not read a whole instruction,
//     e.g. at the end of a section) sets Truncated; a hex-and-ASCII dump line
//     (objdump dumps object symbols inside code sections as data) sets Data.
//     Section headers and symbol
//     headers update Record.Section and Record.Symbol; "..." lines (zero
//     blocks, only without -z) are counted in Scanner.Skipped. Without -w, a
//     continuation line that carries only more bytes of the previous
//     instruction is merged into it.
//   - Lines that are none of these (file header, blank lines, relocations,
//     warnings) are ignored. Malformed input never panics; a line that starts
//     like an instruction but cannot be parsed is reported by Scan returning
//     false and Err returning a *ParseError.
//
// The package does not import the decoder, so the decoder's own tests can use it.
package objdump
