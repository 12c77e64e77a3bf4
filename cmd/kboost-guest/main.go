// Command kboost-guest is the /init of the initramfs that package vm boots under
// QEMU: it runs the scenario the host put in /scenario.json and prints the result
// on the console (see package github.com/kboost/kboost/vm/guest).
package main

import (
	"fmt"
	"os"

	"github.com/kboost/kboost/vm/guest"
	_ "github.com/kboost/kboost/vm/guest/clistep" // the probe-cli step
)

func main() {
	if err := guest.Main(); err != nil {
		fmt.Fprintln(os.Stderr, "kboost-guest:", err)
		os.Exit(1)
	}
}
