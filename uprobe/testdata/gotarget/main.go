// gotarget is the Go program of the uprobe file-offset test: it speaks the
// corpus protocol (ready, a byte, COUNT calls of work, done, a byte).
package main

import (
	"fmt"
	"os"
	"strconv"
)

//go:noinline
func work(x int) int { return x*3 + 1 }

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	b := make([]byte, 1)
	fmt.Println("ready")
	os.Stdin.Read(b)
	s := 0
	for i := 0; i < n; i++ {
		s += work(i)
	}
	fmt.Printf("done %d wrong 0 last %#x\n", n, s)
	os.Stdin.Read(b)
}
