// Command gen generates opcodes/x86_tables.go from opcodes/spec/x86.spec.
//
//	go run ./gen -spec spec/x86.spec -o x86_tables.go
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kboost/kboost/opcodes/internal/spec"
)

func main() {
	in := flag.String("spec", "spec/x86.spec", "spec file to read")
	out := flag.String("o", "x86_tables.go", "Go file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := spec.Parse(f)
	if err != nil {
		return err
	}
	src, err := spec.Generate(s)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
