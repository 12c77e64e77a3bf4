//go:build linux && amd64

package ptprobe

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/kboost/kboost/internal/procstat"
)

// hangDump describes a hung traced run: every thread of every process below
// the test (state, wait channel, the system call it sits in, its tracer and
// signal masks) and the test's goroutines (the tracer thread among them),
// so that a hang seen once in thousands of runs can be explained afterwards.
func hangDump() string {
	var b strings.Builder
	for _, pid := range procstat.Descendants(os.Getpid()) {
		tids, _ := procstat.Threads(pid)
		for _, tid := range tids {
			dir := fmt.Sprintf("/proc/%d/task/%d/", pid, tid)
			read := func(f string) string {
				s, _ := os.ReadFile(dir + f)
				return strings.TrimSpace(string(s))
			}
			st := read("stat")
			if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
				st = st[:i+1] + " " + st[i+2:i+3]
			}
			fmt.Fprintf(&b, "pid %d tid %d: %s wchan=%s syscall=[%s]", pid, tid, st, read("wchan"), read("syscall"))
			for _, l := range strings.Split(read("status"), "\n") {
				for _, k := range []string{"TracerPid:", "SigPnd:", "ShdPnd:", "SigBlk:"} {
					if strings.HasPrefix(l, k) {
						b.WriteString(" " + strings.Join(strings.Fields(l), ""))
					}
				}
			}
			b.WriteByte('\n')
		}
	}
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	b.WriteString("goroutines:\n" + string(buf[:n]))
	return b.String()
}
