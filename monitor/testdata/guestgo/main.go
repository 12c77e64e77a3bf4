// Command guestgo is the tracee of the monitor's ARM guest test (built with
// GOARCH=arm: no C cross compiler for armhf is installed): it does what
// ../guest.c does, with the system call numbers of Go's syscall package.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "child" {
		arg := ""
		if len(os.Args) > 2 {
			arg = os.Args[2]
		}
		fmt.Printf("child %s\n", arg)
		os.Exit(3)
	}
	if len(os.Args) < 2 {
		os.Exit(2)
	}
	fmt.Printf("nr openat=%d execve=%d exit_group=%d\n", syscall.SYS_OPENAT, syscall.SYS_EXECVE, syscall.SYS_EXIT_GROUP)
	res := "ok"
	if f, err := os.Open(os.Args[1]); err != nil {
		res = err.(*os.PathError).Err.Error()
	} else {
		f.Close()
	}
	fmt.Printf("open %s: %s\n", os.Args[1], res)
	cmd := exec.Command("/proc/self/exe", "child", "exec")
	cmd.Stdout = os.Stdout
	err := cmd.Run()
	st := -1
	if ee, ok := err.(*exec.ExitError); ok {
		st = ee.ExitCode()
	} else if err == nil {
		st = 0
	}
	fmt.Printf("child status %d\n", st)
}
