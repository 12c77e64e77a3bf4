//go:build linux && (amd64 || 386 || arm64 || arm)

package tracer

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kboost re-executes itself (/proc/self/exe) for two helpers, chosen by
// environment variable before any other code runs.
const (
	envChild    = "KBOOST_TRACER_CHILD"    // becomes the tracee: filter, then execve
	envSentinel = "KBOOST_TRACER_SENTINEL" // exits when its stdin closes
	// envGodebug holds the command's own GODEBUG ("1" and its value, or
	// "0": none): the helper runs with asynchronous preemption off, since
	// the Go runtime preempts a thread by sending it SIGURG, and a SIGURG
	// still pending at the helper's execve is delivered to the command.
	envGodebug = "KBOOST_TRACER_GODEBUG"
	noPreempt  = "asyncpreemptoff=1"
)

// helperEnv is the helper's environment for a command to run with env.
func helperEnv(env []string) []string {
	out := make([]string, 0, len(env)+3)
	orig := "0"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok && orig == "0" {
			orig = "1" + v
			if v != "" {
				v += ","
			}
			e = "GODEBUG=" + v + noPreempt // the last setting of a name wins
		}
		out = append(out, e)
	}
	if orig == "0" {
		out = append(out, "GODEBUG="+noPreempt)
	}
	return append(out, envGodebug+"="+orig, envChild+"=1")
}

// commandEnv undoes helperEnv: the command's environment as given.
func commandEnv(env []string) []string {
	orig := "0"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, envGodebug+"="); ok {
			orig = v
		}
	}
	out := make([]string, 0, len(env))
	first := true // helperEnv changed the first GODEBUG only
	for _, e := range env {
		switch {
		case strings.HasPrefix(e, envChild+"="), strings.HasPrefix(e, envGodebug+"="):
			continue
		case strings.HasPrefix(e, "GODEBUG=") && first:
			first = false
			if !strings.HasPrefix(orig, "1") {
				continue // the command had none
			}
			e = "GODEBUG=" + orig[1:]
		}
		out = append(out, e)
	}
	return out
}

func init() {
	if os.Getenv(envSentinel) == "1" {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	if os.Getenv(envChild) == "1" {
		runtime.LockOSThread() // the main thread: the one kboost seized
		childMain()
	}
}

// childMain runs in the helper: it waits until kboost has seized it, installs
// the seccomp filter kboost sent and executes the command.
func childMain() {
	ctl := os.NewFile(3, "kboost-control")
	var hdr [4]byte
	if _, err := io.ReadFull(ctl, hdr[:]); err != nil {
		os.Exit(127) // kboost went away before the start
	}
	prog := make([]byte, binary.LittleEndian.Uint32(hdr[:]))
	var goByte [1]byte
	if _, err := io.ReadFull(ctl, prog); err != nil {
		os.Exit(127)
	}
	if _, err := io.ReadFull(ctl, goByte[:]); err != nil || goByte[0] != 'g' {
		os.Exit(127)
	}
	ctl.Close()
	args := os.Args[2:]
	env := commandEnv(os.Environ())
	path := args[0]
	if !strings.Contains(path, "/") {
		p, err := lookPath(path, env)
		if err != nil {
			fmt.Fprintf(os.Stderr, "kboost: %s: %v\n", path, err)
			os.Exit(127)
		}
		path = p
	}
	if len(prog) > 0 {
		if err := installFilter(prog); err != nil {
			fmt.Fprintf(os.Stderr, "kboost: seccomp filter: %v\n", err)
			os.Exit(127)
		}
	}
	err := syscall.Exec(path, args, env)
	fmt.Fprintf(os.Stderr, "kboost: exec %s: %v\n", args[0], err)
	os.Exit(127)
}

func lookPath(name string, env []string) (string, error) {
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	for _, dir := range strings.Split(pathEnv, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in PATH")
}

func installFilter(prog []byte) error {
	fprog := unix.SockFprog{Len: uint16(len(prog) / 8), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	seccomp := func() syscall.Errno {
		_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog)))
		return e
	}
	e := seccomp()
	if e == unix.EACCES { // no CAP_SYS_ADMIN: filters need no_new_privs
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return err
		}
		e = seccomp()
	}
	if e != 0 {
		return e
	}
	return nil
}
