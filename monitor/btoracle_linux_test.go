//go:build linux && amd64

package monitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBacktraceOracleX86: the guest trials' backtrace oracle
// (vm/testdata/monitorbt: main, outer -> middle (-fomit-frame-pointer) ->
// kbt_lib -> inner (-fomit-frame-pointer) -> leaf -> getppid, leaf
// printing its own stack from libgcc's _Unwind_Backtrace with
// _Unwind_GetRegionStart and dladdr), built on this host by gcc for
// x86-64 and, with -m32, for i386, static and dynamic (kbt_lib then in
// libkbt.so), run plain, with the chain in a signal handler and through
// notable (no unwind tables), in both stop modes. The monitor's getppid
// backtrace must be the call's entry frames (i386: __kernel_vsyscall in
// the vDSO, through which the C library makes every call; then the
// getppid wrapper), a frame in leaf, then libgcc's frames one for one:
// the same address, dladdr's symbol and offset where dladdr has one, and
// a symbol starting between the frame's unwind entry start and its pc.
// Past libgcc's last frame (libgcc ends at a function without an FDE,
// notable) the two return addresses notable read from its frame records.
// Where this kernel refuses 32-bit code the i386 case says so and skips.
func TestBacktraceOracleX86(t *testing.T) {
	needTracing(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Fatalf("gcc: %v (scripts/setup.sh installs it)", err)
	}
	for _, c := range []struct {
		name, flag string
		entry      []string // the frames before leaf's, innermost first (symbol substrings)
	}{
		{"x86-64", "-m64", []string{"getppid"}},
		{"i386", "-m32", []string{"__kernel_vsyscall", "getppid"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := btOracleBuild(t, c.flag)
			if out, err := exec.Command(dir + "/static").Output(); err != nil {
				var ee *exec.ExitError
				if c.flag == "-m32" && !errors.As(err, &ee) {
					t.Skipf("native %s run: %q %v: this kernel does not run 32-bit code", c.name, out, err)
				}
				t.Fatalf("native run: %v\n%s", err, out)
			}
			for _, build := range []string{"static", "dynamic"} {
				var compared, agreed int
				for _, arg := range []string{"", "signal", "notable"} {
					for _, seccomp := range []bool{true, false} {
						n, a := btOracleRun(t, dir, build, arg, seccomp, c.entry)
						compared, agreed = compared+n, agreed+a
					}
				}
				t.Logf("%s %s: %d frames compared with libgcc's, %d agreed (3 runs x 2 stop modes)", c.name, build, compared, agreed)
			}
		})
	}
}

// btOracleBuild builds the oracle's static and dynamic programs (and the
// dynamic one's libkbt.so, found through its run path) with gcc flag
// (-m64, -m32).
func btOracleBuild(t *testing.T, flag string) string {
	t.Helper()
	src, err := filepath.Abs("../vm/testdata/monitorbt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cc := func(args ...string) {
		t.Helper()
		c := exec.Command("gcc", append([]string{flag, "-O1", "-fno-optimize-sibling-calls", "-funwind-tables"}, args...)...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("gcc %s %s: %v (gcc-multilib: scripts/setup.sh)\n%s", flag, strings.Join(args, " "), err, out)
		}
	}
	cc("-fno-omit-frame-pointer", "-c", "-o", "bt.o", src+"/bt.c")
	cc("-fomit-frame-pointer", "-c", "-o", "omit.o", src+"/omit.c")
	cc("-fno-omit-frame-pointer", "-c", "-o", "lib.o", src+"/lib.c")
	cc("-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-c", "-o", "notable.o", src+"/notable.c")
	cc("-fno-omit-frame-pointer", "-fPIC", "-shared", "-o", "libkbt.so", src+"/lib.c")
	cc("-static", "-o", "static", "bt.o", "omit.o", "notable.o", "lib.o")
	cc("-rdynamic", "-Wl,-rpath,"+dir, "-o", "dynamic", "bt.o", "omit.o", "notable.o", "-L.", "-lkbt")
	return dir
}

var (
	btoLeaf   = regexp.MustCompile(`(?m)^leaf=0x([0-9a-f]+)$`)
	btoFrame  = regexp.MustCompile(`(?m)^frame (\d+) pc=0x([0-9a-f]+) fn=0x([0-9a-f]+) sym=(\S+)\+0x([0-9a-f]+)$`)
	btoEnd    = regexp.MustCompile(`(?m)^end=(stack|other -?\d+)$`)
	btoNotab  = regexp.MustCompile(`(?m)^notable ret0=0x([0-9a-f]+) ret1=0x([0-9a-f]+)$`)
	btoResult = regexp.MustCompile(`(?m)^result \d+$`)
)

// btOracleRun runs one oracle program under the monitor and compares its
// getppid backtrace with the frames the program printed; it returns the
// frames compared and agreed.
func btOracleRun(t *testing.T, dir, build, arg string, seccomp bool, entry []string) (compared, agreed int) {
	t.Helper()
	name := build
	argv := []string{filepath.Join(dir, build)}
	if arg != "" {
		argv, name = append(argv, arg), name+" "+arg
	}
	if !seccomp {
		name += " (no seccomp)"
	}
	stdout := filepath.Join(t.TempDir(), "stdout")
	f, err := os.Create(stdout)
	if err != nil {
		t.Fatal(err)
	}
	var rec bytes.Buffer
	m, err := New(Options{Argv: argv, Syscalls: []string{"getppid"}, Backtrace: true, JSON: true, Out: &rec,
		NoSeccomp: !seccomp, Stdio: [3]*os.File{nil, f, nil}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := m.Run()
	f.Close()
	if err != nil || sum.Status != 0 {
		t.Fatalf("%s under the monitor: %v, status %d", name, err, sum.Status)
	}
	b, err := os.ReadFile(stdout)
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	hex := func(s string) uint64 { v, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); return v }
	lm := btoLeaf.FindStringSubmatch(out)
	if lm == nil || !btoResult.MatchString(out) {
		t.Fatalf("%s: output %q: no leaf address or result", name, out)
	}
	leaf := hex(lm[1])
	type oframe struct {
		pc, fn, off uint64
		sym         string
	}
	var oracle []oframe
	for i, m := range btoFrame.FindAllStringSubmatch(out, -1) {
		if n, _ := strconv.Atoi(m[1]); n != i {
			t.Fatalf("%s: frame %s printed as the %dth", name, m[1], i)
		}
		oracle = append(oracle, oframe{pc: hex(m[2]), fn: hex(m[3]), sym: m[4], off: hex(m[5])})
	}
	if len(oracle) < 5 || oracle[0].fn != leaf {
		t.Fatalf("%s: oracle frames %+v: want leaf's (0x%x) first, then its callers", name, oracle, leaf)
	}
	if em := btoEnd.FindStringSubmatch(out); em == nil || em[1] != "stack" {
		t.Fatalf("%s: output %q: libgcc's walk did not end at the outermost frame or a frame without an FDE", name, out)
	}

	var bt []Frame
	n := 0
	for _, l := range bytes.Split(rec.Bytes(), []byte("\n")) {
		var r Record
		if bytes.HasPrefix(l, []byte(`{"pid"`)) && json.Unmarshal(l, &r) == nil && r.Syscall == "getppid" {
			bt, n = r.Backtrace, n+1
		}
	}
	if n != 1 {
		t.Fatalf("%s: %d getppid records, want 1:\n%s", name, n, rec.String())
	}
	var lines []string
	for i, f := range bt {
		lines = append(lines, strconv.Itoa(i)+" "+f.text())
	}
	report := "monitor:\n\t" + strings.Join(lines, "\n\t") + "\nlibgcc:\n" + strings.Join(btoFrame.FindAllString(out, -1), "\n")

	// The call's entry frames, then leaf's.
	top := len(entry)
	if len(bt) <= top {
		t.Errorf("%s: %d frames, want %v, leaf, ...\n%s", name, len(bt), entry, report)
		return len(oracle), 0
	}
	for i, s := range entry {
		if !strings.Contains(bt[i].Sym, s) {
			t.Errorf("%s: frame %d %s: want %s\n%s", name, i, bt[i].text(), s, report)
		}
	}
	if bt[top].Sym != "leaf" || hex(bt[top].Addr)-bt[top].Off != leaf {
		t.Errorf("%s: frame %d %s: want in leaf (0x%x)\n%s", name, top, bt[top].text(), leaf, report)
	}
	bad := false
	for k := 1; k < len(oracle); k++ {
		compared++
		o := oracle[k]
		j := top + k
		if j >= len(bt) {
			t.Errorf("%s: the backtrace ends at %d frames; libgcc's frame %d is 0x%x %s+0x%x", name, len(bt), k, o.pc, o.sym, o.off)
			bad = true
			continue
		}
		f := bt[j]
		ok := hex(f.Addr) == o.pc
		if ok && o.sym != "-" && (f.Sym != o.sym || f.Off != o.off) {
			ok = false // dladdr's symbol
		}
		// libgcc calls back for a frame no FDE covers (its last) with the
		// region start of the frame before: that frame's fn, no range.
		stale := k == len(oracle)-1 && o.fn == oracle[k-1].fn
		if ok && f.Sym != "" && !stale && (hex(f.Addr)-f.Off < o.fn || hex(f.Addr)-f.Off > o.pc) {
			ok = false // the symbol must start in the unwind entry's range, at or before pc
		}
		if !ok {
			t.Errorf("%s: frame %d %s; libgcc's frame %d 0x%x %s+0x%x (entry at 0x%x)", name, j, f.text(), k, o.pc, o.sym, o.off, o.fn)
			bad = true
			continue
		}
		agreed++
	}
	j := top + len(oracle)
	if nm := btoNotab.FindStringSubmatch(out); nm != nil {
		// libgcc ends at notable, which has no FDE; the monitor goes on
		// by its frame record: notable's __builtin_return_address(0), (1).
		for k, w := range nm[1:] {
			compared++
			if j >= len(bt) || hex(bt[j].Addr) != hex(w) {
				t.Errorf("%s: frame %d: want 0x%s (notable's __builtin_return_address(%d))", name, j, w, k)
				bad = true
			} else {
				agreed++
			}
			j++
		}
	} else if j < len(bt) {
		t.Errorf("%s: %d frames past libgcc's outermost: %+v", name, len(bt)-j, bt[j:])
		bad = true
	}
	if bad {
		t.Logf("%s:\n%s", name, report)
	}
	return compared, agreed
}

// TestVDSOReadOnce: an i386 process's vDSO is read from its memory once
// (and the address space before its exec once),
// however many times its maps are viewed again (the dynamic loader's
// PROT_EXEC mmap2 calls, each backtraced), and its frame named from the
// image (the getppid backtrace's __kernel_vsyscall).
func TestVDSOReadOnce(t *testing.T) {
	needTracing(t)
	dir := btOracleBuild(t, "-m32")
	if out, err := exec.Command(dir + "/dynamic").Output(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Skipf("native i386 run: %q %v: this kernel does not run 32-bit code", out, err)
		}
		t.Fatalf("native run: %v\n%s", err, out)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var rec bytes.Buffer
	m, err := New(Options{Argv: []string{dir + "/dynamic"}, Syscalls: []string{"getppid", "mmap2"}, Backtrace: true, JSON: true, Out: &rec,
		Stdio: [3]*os.File{nil, null, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := m.Run(); err != nil || sum.Status != 0 {
		t.Fatalf("monitor: %v, status %d", err, sum.Status)
	}
	if !strings.Contains(rec.String(), `"sym":"__kernel_vsyscall"`) {
		t.Errorf("no __kernel_vsyscall frame recorded:\n%s", rec.String())
	}
	// One read per address space: the started child's before its execve
	// (kboost's own x86-64 vDSO, the execve backtraced) and the program's,
	// each a different image.
	if m.bt.views < 4 || m.bt.vdsoReads > 2 || m.bt.vdsoReads != len(m.bt.vdsos) {
		t.Errorf("%d maps views, %d vDSO reads, %d images: want 4 or more views, a read per address space (2 or fewer), each a new image", m.bt.views, m.bt.vdsoReads, len(m.bt.vdsos))
	}
	t.Logf("%d maps views, %d vDSO reads", m.bt.views, m.bt.vdsoReads)
}
