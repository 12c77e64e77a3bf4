//go:build linux && amd64

package monitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBacktraceCFI: the backtrace of a system call made at the bottom of a
// chain of functions built without frame pointers (testdata/deep.c, gcc -O2
// -fomit-frame-pointer, the C library's getppid wrapper on top, and for
// i386 the vDSO's __kernel_vsyscall above it) is, frame for frame, the one
// gdb prints for the same stop (catch syscall, both runs without address
// randomization), and its frames below leaf are the return addresses the
// program recorded itself. Built for x86-64 and, with -m32, for i386 (which
// skips where this kernel refuses 32-bit code).
func TestBacktraceCFI(t *testing.T) {
	needTracing(t)
	for _, c := range []struct{ name, flag string }{{"x86-64", "-m64"}, {"i386", "-m32"}} {
		t.Run(c.name, func(t *testing.T) { backtraceCFI(t, c.flag) })
	}
}

func backtraceCFI(t *testing.T, flag string) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	gdb, err := exec.LookPath("gdb")
	if err != nil {
		t.Fatalf("gdb: %v (scripts/setup.sh installs it)", err)
	}
	setarch, err := exec.LookPath("setarch")
	if err != nil {
		t.Fatalf("setarch: %v (util-linux)", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "deep")
	if out, err := exec.Command(gcc, flag, "-O2", "-fomit-frame-pointer", "-o", bin, "testdata/deep.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v (gcc-multilib: scripts/setup.sh)\n%s", flag, err, out)
	}
	if out, err := exec.Command(bin, filepath.Join(dir, "native.out")).CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if flag == "-m32" && !errors.As(err, &ee) {
			t.Skipf("native run: %q %v: this kernel does not run 32-bit code", out, err)
		}
		t.Fatalf("native run: %v\n%s", err, out)
	}

	// gdb's frames: pc and function, innermost first.
	script := `python exec("f=gdb.newest_frame()\nwhile f:\n print('PC', hex(f.pc()), f.name())\n f=f.older()")`
	out, err := exec.Command(gdb, "-nx", "-batch", "-ex", "set backtrace past-main on", "-ex", "catch syscall getppid",
		"-ex", "run", "-ex", script, "--args", bin, filepath.Join(dir, "gdb.out")).CombinedOutput()
	if err != nil {
		t.Fatalf("gdb: %v\n%s", err, out)
	}
	var want []uint64
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "PC" {
			pc, err := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			if err != nil {
				t.Fatalf("gdb line %q", l)
			}
			want, names = append(want, pc), append(names, f[2])
		}
	}
	lf := 0 // leaf's frame: after the wrapper (and i386's __kernel_vsyscall)
	for lf < len(names) && names[lf] != "leaf" {
		lf++
	}
	if lf == 0 || len(want) < lf+9 || !strings.Contains(names[lf-1], "getppid") {
		t.Fatalf("gdb's backtrace %v %v: want getppid, leaf, rec x3, indirect, vla, spill, main...\n%s", names, want, out)
	}

	var rec bytes.Buffer
	self := filepath.Join(dir, "self.out")
	m, err := New(Options{Argv: []string{setarch, "-R", bin, self}, Syscalls: []string{"getppid"}, Backtrace: true, JSON: true, Out: &rec})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := m.Run()
	if err != nil || sum.Status != 0 {
		t.Fatalf("monitor: %v, status %d", err, sum.Status)
	}
	var r Record
	for _, l := range bytes.Split(rec.Bytes(), []byte("\n")) {
		if bytes.Contains(l, []byte(`"syscall":"getppid"`)) {
			if err := json.Unmarshal(l, &r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(r.Backtrace) == 0 {
		t.Fatalf("no getppid recorded:\n%s", rec.String())
	}
	got := make([]uint64, len(r.Backtrace))
	for i, f := range r.Backtrace {
		got[i], _ = strconv.ParseUint(strings.TrimPrefix(f.Addr, "0x"), 16, 64)
	}
	for i := range max(len(got), len(want)) {
		var g, w uint64
		var gs, ws string
		if i < len(got) {
			g, gs = got[i], r.Backtrace[i].Sym
		}
		if i < len(want) {
			w, ws = want[i], names[i]
		}
		if g != w {
			t.Errorf("frame %d: kboost 0x%x %s, gdb 0x%x %s", i, g, gs, w, ws)
		}
	}
	for i := lf; i < lf+8 && i < len(got); i++ { // the program's own functions: the same names as gdb's
		if r.Backtrace[i].Sym != names[i] {
			t.Errorf("frame %d: %s, gdb %s", i, r.Backtrace[i].Sym, names[i])
		}
	}

	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	ras := strings.Fields(string(b)) // leaf's return address first
	if len(ras) != 8 {
		t.Fatalf("the program recorded %d return addresses, want 8", len(ras))
	}
	for i, s := range ras {
		v, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		if i+lf+1 >= len(got) || got[i+lf+1] != v {
			t.Errorf("frame %d: want 0x%x, the return address the program recorded", i+lf+1, v)
		}
	}
}

// TestBacktraceVDSO: a system call made inside the vDSO (its
// clock_gettime fallback for CPUTIME clocks, testdata/vdso.c) is unwound
// from the vDSO through the C library, built without frame pointers, to the
// program: the frames from vdso_caller's caller outward are the ones
// libgcc's unwinder prints in the same run. The x86-64 vDSO has call frame
// information for the function; i386's has it only for its entry and
// signal trampolines, and its functions keep frame pointers while the C
// library's do not (a frame-pointer step, then call frame information).
// Walks at the stop and from snapshots.
func TestBacktraceVDSO(t *testing.T) {
	needTracing(t)
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	for _, c := range []struct{ name, flag, call string }{{"x86-64", "-m64", "clock_gettime"}, {"i386", "-m32", "clock_gettime64"}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "vdso")
			if out, err := exec.Command(gcc, c.flag, "-O2", "-fomit-frame-pointer", "-o", bin, "testdata/vdso.c").CombinedOutput(); err != nil {
				t.Fatalf("gcc %s: %v (gcc-multilib: scripts/setup.sh)\n%s", c.flag, err, out)
			}
			if out, err := exec.Command(bin, filepath.Join(dir, "native.out")).CombinedOutput(); err != nil {
				var ee *exec.ExitError
				if c.flag == "-m32" && !errors.As(err, &ee) {
					t.Skipf("native run: %q %v: this kernel does not run 32-bit code", out, err)
				}
				t.Fatalf("native run: %v\n%s", err, out)
			}
			for _, sync := range []bool{false, true} {
				var rec bytes.Buffer
				self := filepath.Join(dir, "self.out")
				m, err := New(Options{Argv: []string{bin, self}, Syscalls: []string{c.call}, Backtrace: true, JSON: true, Out: &rec, syncWalks: sync})
				if err != nil {
					t.Fatal(err)
				}
				if sum, err := m.Run(); err != nil || sum.Status != 0 {
					t.Fatalf("monitor: %v, status %d", err, sum.Status)
				}
				var r Record
				for _, l := range bytes.Split(rec.Bytes(), []byte("\n")) {
					if bytes.Contains(l, []byte(`"syscall":"`+c.call+`"`)) {
						if err := json.Unmarshal(l, &r); err != nil {
							t.Fatal(err)
						}
					}
				}
				b, err := os.ReadFile(self)
				if err != nil {
					t.Fatal(err)
				}
				var oracle []string // libgcc's frames past vdso_caller's own
				for _, l := range strings.Split(string(b), "\n") {
					if f := strings.Fields(l); len(f) == 3 && f[0] == "frame" && f[1] != "0" && f[2] != "0x0" {
						oracle = append(oracle, f[2])
					}
				}
				var lines []string
				for i, f := range r.Backtrace {
					lines = append(lines, strconv.Itoa(i)+" "+f.text())
				}
				report := strings.Join(lines, "\n\t")
				if len(r.Backtrace) == 0 || r.Backtrace[0].File != "[vdso]" {
					t.Fatalf("sync=%v: want a backtrace from the vDSO:\n\t%s", sync, report)
				}
				k := 1
				for k < len(r.Backtrace) && r.Backtrace[k].File == "[vdso]" {
					k++
				}
				for k < len(r.Backtrace) && strings.Contains(r.Backtrace[k].File, "libc") {
					k++
				}
				if k == len(r.Backtrace) || r.Backtrace[k].Sym != "vdso_caller" || k < 2 {
					t.Fatalf("sync=%v: want the vDSO, the C library, then vdso_caller:\n\t%s", sync, report)
				}
				if len(oracle) < 3 {
					t.Fatalf("libgcc printed %q", b)
				}
				for i, want := range oracle {
					if j := k + 1 + i; j >= len(r.Backtrace) || r.Backtrace[j].Addr != want {
						t.Errorf("sync=%v: frame %d: want %s (libgcc's frame %d)\n\t%s", sync, j, want, i+1, report)
					}
				}
			}
		})
	}
}
