package procstat

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrFormat is returned for a stat line that cannot be parsed.
var ErrFormat = errors.New("procstat: malformed stat line")

// Stat is what kboost reads of a process's stat line.
type Stat struct {
	Pid   int
	State byte // R, S, D, Z, T, t, X ...
	PPid  int
	// CPU is user plus system time (the kernel counts in clock ticks; USER_HZ
	// is 100 on every Linux architecture kboost runs on).
	CPU time.Duration
}

// Zombie reports whether the process has exited and waits to be reaped.
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// Read reads the stat line of pid.
func Read(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return Parse(string(b))
}

// Parse parses one stat line.
func Parse(line string) (Stat, error) {
	open, i := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 1 || i < open {
		return Stat{}, ErrFormat
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return Stat{}, ErrFormat
	}
	// after the command: state(0) ppid(1) ... utime(11) stime(12)
	f := strings.Fields(line[i+1:])
	// the state is one letter (R, S, D, T, t, Z, X, I, ...)
	if len(f) < 13 || len(f[0]) != 1 || !(f[0][0] >= 'A' && f[0][0] <= 'Z' || f[0][0] >= 'a' && f[0][0] <= 'z') {
		return Stat{}, ErrFormat
	}
	ppid, err1 := strconv.Atoi(f[1])
	u, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, ErrFormat
	}
	return Stat{Pid: pid, State: f[0][0], PPid: ppid, CPU: time.Duration(u+st) * 10 * time.Millisecond}, nil
}

// All reads the stat lines of every process (those that vanish while the
// list is read are left out).
func All() []Stat {
	ents, _ := os.ReadDir("/proc")
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := Read(pid); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Threads lists the thread ids of process pid (/proc/PID/task).
func Threads(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, n)
		}
	}
	return tids, nil
}

// Descendants lists the processes below pid (children, their children...),
// in ascending order.
func Descendants(pid int) []int {
	kids := map[int][]int{}
	for _, s := range All() {
		kids[s.PPid] = append(kids[s.PPid], s.Pid)
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, k := range kids[p] {
			out = append(out, k)
			walk(k)
		}
	}
	walk(pid)
	slices.Sort(out)
	return out
}

// Cmdline reads the arguments process pid was started with (empty for a
// zombie or a kernel thread).
func Cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}
