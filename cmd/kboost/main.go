// Command kboost tells, instruction by instruction, what Linux kprobes do at a
// probe point, and proves it. See README.md.
package main

import (
	"os"

	"github.com/kboost/kboost/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
