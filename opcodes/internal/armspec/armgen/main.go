// Command armgen generates an ARM encoding table (opcodes/arm64_tables.go) from
// its spec file (opcodes/spec/arm64.spec); see package armspec for the format.
//
//	go run ./internal/armspec/armgen -spec spec/arm64.spec -o arm64_tables.go
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/kboost/kboost/opcodes/internal/armspec"
)

func main() {
	in := flag.String("spec", "spec/arm64.spec", "spec file to read")
	out := flag.String("o", "arm64_tables.go", "Go file to write")
	flag.Parse()
	if err := run(*in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "armgen:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	s, err := armspec.ParseFile(in)
	if err != nil {
		return err
	}
	src, err := armspec.Generate(s, armspec.Cmdline)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
