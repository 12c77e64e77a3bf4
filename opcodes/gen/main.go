// Command gen generates the opcode tables of package opcodes from their spec
// files: the x86 maps (package spec's format) and the A64, A32 and T32
// encoding tables (package armspec's format, -format arm).
//
//	go run ./gen -spec spec/x86.spec -o x86_tables.go
//	go run ./gen -format arm -spec spec/arm64.spec -o a64_tables.go
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kboost/kboost/opcodes/internal/armspec"
	"github.com/kboost/kboost/opcodes/internal/spec"
)

func main() {
	format := flag.String("format", "x86", "spec format: x86 or arm")
	in := flag.String("spec", "spec/x86.spec", "spec file to read")
	out := flag.String("o", "x86_tables.go", "Go file to write")
	flag.Parse()
	gen, ok := generators[*format]
	if !ok {
		fmt.Fprintf(os.Stderr, "gen: unknown -format %q (x86 or arm)\n", *format)
		os.Exit(2)
	}
	src, err := gen(*in)
	if err == nil {
		err = os.WriteFile(*out, src, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// generators turn a spec file into Go source, by spec format.
var generators = map[string]func(path string) ([]byte, error){
	"x86": func(path string) ([]byte, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		s, err := spec.Parse(f)
		if err != nil {
			return nil, err
		}
		return spec.Generate(s)
	},
	"arm": func(path string) ([]byte, error) {
		s, err := armspec.ParseFile(path)
		if err != nil {
			return nil, err
		}
		return armspec.Generate(s, armspec.Cmdline)
	},
}
