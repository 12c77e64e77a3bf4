// gotarget is the Go program of the uprobe file-offset test: it speaks the
// corpus protocol (ready, a byte, COUNT calls of work, done, a byte). The
// calls run on a thread that exists before the probe is opened and is not
// the process's first one, as goroutines of any Go program may: a probe
// counted for the pid alone would see none of them. Argument 1 "grow" calls
// grow instead of work (its callee grows the stack).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

//go:noinline
func work(x int) int { return x*3 + 1 }

// grow calls deep, whose frames make the goroutine's stack grow: the runtime
// copies the stack and walks its frames, grow's return address among them.
//
//go:noinline
func grow(x int) int { return deep(x, 64) + 1 }

//go:noinline
func deep(x, n int) int {
	var pad [512]byte
	pad[n%512] = byte(x)
	if n == 0 {
		return int(pad[0])
	}
	return deep(x, n-1) + int(pad[n%512])
}

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	start, result := make(chan struct{}), make(chan int)
	go func() {
		runtime.LockOSThread() // a thread of its own, created now
		<-start
		s := 0
		f := work
		if os.Args[1] == "grow" {
			f = grow
		}
		for i := 0; i < n; i++ {
			s += f(i)
		}
		result <- s
	}()
	b := make([]byte, 1)
	fmt.Println("ready")
	os.Stdin.Read(b)
	close(start)
	s := <-result
	fmt.Printf("done %d wrong 0 last %#x\n", n, s)
	os.Stdin.Read(b)
}
