// Package cfi reads the call frame information of an ELF file's .eh_frame
// (and .eh_frame_hdr), or a 32-bit ARM file's exception index
// (.ARM.exidx, .ARM.extab: the ARM EHABI's unwind opcodes), and unwinds one
// stack frame at a time with it.
//
// Contract:
//   - New indexes the FDEs once: through .eh_frame_hdr's sorted table when
//     it has the usual encoding, else by reading every FDE and sorting them.
//     A lookup is a binary search; CIEs are parsed once.
//   - Step evaluates the row of the FDE that covers an address (the DW_CFA
//     instructions GCC and clang emit, with remember/restore state and the
//     DWARF expressions of PLT entries and signal trampolines) and turns one
//     frame's registers into its caller's. It reads the stack only through
//     the Memory function given.
//   - Malformed input yields an error wrapping ErrFormat (a *FormatError
//     naming the offset), never a panic; an address no FDE covers yields
//     ErrNoFDE; an operation kboost does not evaluate wraps
//     decode.ErrNotSupported.
//   - FromELF reads an ARM file's exception index rather than its
//     .eh_frame; Step then pops what the covering entry's opcodes say and
//     returns the popped r15 or else r14, without the Thumb bit. An
//     EXIDX_CANTUNWIND entry (linkers add one for code built without
//     tables; _start has one) yields ErrNoFDE, as an address no entry
//     covers: the caller falls back to the frame pointer. "Refuse to
//     unwind" is the outermost frame.
//   - Register numbers are DWARF's; Arch gives the stack pointer, frame
//     pointer and return-address columns of each instruction set (per-arch
//     files), looked up by *decode.Arch.
package cfi
