// gotarget is the Go program of the uprobe file-offset test: it speaks the
// corpus protocol (ready, a byte, COUNT calls of work, done, a byte). The
// calls run on a thread that exists before the probe is opened and is not
// the process's first one, as goroutines of any Go program may: a probe
// counted for the pid alone would see none of them.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
)

//go:noinline
func work(x int) int { return x*3 + 1 }

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	start, result := make(chan struct{}), make(chan int)
	go func() {
		runtime.LockOSThread() // a thread of its own, created now
		<-start
		s := 0
		for i := 0; i < n; i++ {
			s += work(i)
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
