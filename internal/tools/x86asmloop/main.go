// Command x86asmloop is the benchmark peer for `kboost audit --summary`: it only
// runs golang.org/x/arch/x86/x86asm.Decode over every executable section of an
// ELF file (one instruction after another, skipping one byte on error) and prints
// the instruction count and the time taken.
package main

import (
	"debug/elf"
	"fmt"
	"os"
	"time"

	"golang.org/x/arch/x86/x86asm"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: x86asmloop ELF")
		os.Exit(2)
	}
	f, err := elf.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "x86asmloop:", err)
		os.Exit(1)
	}
	mode := 64
	if f.Class == elf.ELFCLASS32 {
		mode = 32
	}
	start := time.Now()
	n, bad := 0, 0
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || s.Type == elf.SHT_NOBITS {
			continue
		}
		data, err := s.Data()
		if err != nil {
			fmt.Fprintln(os.Stderr, "x86asmloop:", err)
			os.Exit(1)
		}
		for off := 0; off < len(data); {
			inst, err := x86asm.Decode(data[off:], mode)
			if err != nil || inst.Len == 0 {
				bad++
				off++
				continue
			}
			n++
			off += inst.Len
		}
	}
	fmt.Printf("x86asm.Decode loop: %d instructions (%d undecodable bytes) in %.3fs\n", n, bad, time.Since(start).Seconds())
}
