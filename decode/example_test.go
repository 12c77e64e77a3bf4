package decode_test

import (
	"fmt"

	"github.com/kboost/kboost/decode"
)

// Decode one x86-64 instruction from hex as the CLI reads it (bytes in
// memory order) and look at its fields.
func ExampleArch_DecodeOne() {
	code, err := decode.X86_64.ParseHex([]string{"48 8b 05 10 00 00 00"}, false)
	if err != nil {
		panic(err)
	}
	in, err := decode.X86_64.DecodeOne(code, decode.X86_64.TextAddr)
	if err != nil {
		panic(err)
	}
	fmt.Println(decode.Format(&in, nil))
	fmt.Println(in.Len, "bytes, RIP-relative:", in.RIPRel)
	for _, f := range in.Fields() {
		if f.Len > 0 {
			fmt.Printf("%-6s +%d %d: %s\n", f.Name, f.Off, f.Len, f.Text)
		}
	}
	// Output:
	// mov 0x10(%rip),%rax
	// 7 bytes, RIP-relative: true
	// rex    +0 1: 48 at +0
	// opcode +1 1: map one, 8b at +1
	// modrm  +2 1: 05 at +2 (mod=0 reg=0 rm=5)
	// disp   +3 4: 0x10 (4 bytes at +3)
}

// An A64 instruction given as a word (--words in the CLI).
func ExampleArch_ParseHex_words() {
	code, err := decode.ARM64.ParseHex([]string{"d503201f"}, true)
	if err != nil {
		panic(err)
	}
	in, err := decode.ARM64.DecodeOne(code, decode.ARM64.TextAddr)
	if err != nil {
		panic(err)
	}
	fmt.Printf("% x: %s\n", code, decode.Format(&in, nil))
	// Output:
	// 1f 20 03 d5: nop
}

// A truncated instruction is an error, not a guess.
func ExampleArch_DecodeOne_truncated() {
	_, err := decode.X86_64.DecodeOne([]byte{0x48, 0x8b}, 0)
	fmt.Println(err)
	// Output:
	// decode at 0x0: truncated instruction
}
