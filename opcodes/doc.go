// Package opcodes holds the x86 opcode maps as data: for every opcode of the
// one-byte, 0F, 0F 38, 0F 3A, 3DNow!, VEX, EVEX (maps 5/6) and XOP maps, what
// length decoding needs (ModRM presence, immediate kind, 64-bit mode validity and
// operand-size rules) and what classification needs (mnemonic, control-transfer
// class, privilege).
//
// The tables in x86_tables.go are generated from the human-readable spec file
// spec/x86.spec by `go generate` (command ./gen); TestGeneratedTablesFresh fails
// when they are stale. Package decode reads them; nothing here decodes.
package opcodes
