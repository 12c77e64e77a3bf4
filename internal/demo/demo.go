package demo

import _ "embed"

// ELF is the demo executable.
//
//go:embed demo.elf
var ELF []byte

// Name is the name shown for the embedded file.
const Name = "demo.elf (embedded)"
