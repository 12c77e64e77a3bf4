// Command kboost-guest is the /init of the initramfs that package vm boots under
// QEMU: it runs the scenario the host put in /scenario.json and prints the result
// on the console (see package github.com/kboost/kboost/vm/guest). It does not
// link kboost's CLI: the steps that run kboost commands run the kboost binary
// the host packs beside it (guest.KboostPath).
package main

import (
	"fmt"
	"os"

	"github.com/kboost/kboost/vm/guest"
)

func main() {
	if err := guest.Main(); err != nil {
		fmt.Fprintln(os.Stderr, "kboost-guest:", err)
		os.Exit(1)
	}
}
