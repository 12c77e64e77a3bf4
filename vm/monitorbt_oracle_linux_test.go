//go:build linux

package vm

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/monitor"
	"github.com/kboost/kboost/vm/guest"
)

// The backtrace oracle of the guest monitor trials: vm/testdata/monitorbt
// (bt.c, omit.c built with -fomit-frame-pointer, lib.c) is built with
// clang for the guest's target twice, static and dynamic (lib.c then
// libkbt.so, the C library, libgcc_s and the loader taken from the cross
// sysroot into the guest), and run under the monitor with backtraces in
// the trial's boot. Its leaf function unwinds its own stack with libgcc's
// _Unwind_Backtrace, prints the frames, then calls getppid: the monitor's
// backtrace of that getppid must be the wrapper's frame, a frame in leaf
// (the symbol leaf, at leaf's address), then exactly the oracle's return
// addresses from leaf's caller to _start (with the chain in a signal
// handler: through the signal frame into raise, the interrupted pc exact), with dladdr's name and offset
// wherever dladdr has one, and where the monitor names a symbol it must
// start between the start of the frame's unwind entry and its pc (not
// at the entry's start: ld merges adjacent identical ARM index entries,
// and glibc's ARM signal restorer's entry starts a word before its
// symbol). The oracle's frame in leaf is not an address
// comparison: it returns from _Unwind_Backtrace, the monitor's from
// getppid.

const (
	monitorBTStatic = "/bin/kboost-bt-static"
	monitorBTDyn    = "/bin/kboost-bt-dynamic"
	monitorBTLib    = "/lib/kboost-bt" // the dynamic build's run path: every library it loads
)

// monitorBT is the backtrace oracle's build for one target.
type monitorBT struct {
	files   []File
	runs    [][]string        // the command lines: each build plain and with the chain in a signal handler
	host    map[string]string // the tracees' host copies by guest path
	objdump string            // the target's objdump (binutils)
}

// monitorBTBuild builds the two tracees for clang's target triple.
func monitorBTBuild(t *testing.T, triple string) *monitorBT {
	if _, err := exec.LookPath("clang"); err != nil {
		t.Fatalf("clang: %v (scripts/setup.sh installs it)", err)
	}
	src, err := filepath.Abs("testdata/monitorbt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cc := func(args ...string) {
		t.Helper()
		c := exec.Command("clang", append([]string{"--target=" + triple, "-O1", "-fno-optimize-sibling-calls", "-funwind-tables"}, args...)...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("clang %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	cc("-fno-omit-frame-pointer", "-c", "-o", "bt.o", src+"/bt.c")
	cc("-fomit-frame-pointer", "-c", "-o", "omit.o", src+"/omit.c")
	cc("-fno-omit-frame-pointer", "-c", "-o", "lib.o", src+"/lib.c")
	cc("-fno-omit-frame-pointer", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables", "-c", "-o", "notable.o", src+"/notable.c")
	cc("-fno-omit-frame-pointer", "-fPIC", "-shared", "-o", "libkbt.so", src+"/lib.c")
	cc("-static", "-o", "static", "bt.o", "omit.o", "notable.o", "lib.o")
	cc("-rdynamic", "-Wl,-rpath,"+monitorBTLib, "-o", "dynamic", "bt.o", "omit.o", "notable.o", "-L.", "-lkbt")
	read := func(p string) []byte {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	files := []File{{Name: monitorBTStatic, Mode: 0o755, Data: read(dir + "/static")},
		{Name: monitorBTDyn, Mode: 0o755, Data: read(dir + "/dynamic")},
		{Name: monitorBTLib + "/libkbt.so", Mode: 0o755, Data: read(dir + "/libkbt.so")}}
	ef, err := elf.Open(dir + "/dynamic")
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	needed, err := ef.DynString(elf.DT_NEEDED)
	if err != nil {
		t.Fatal(err)
	}
	var interp string
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if interp == "" {
		t.Fatal("dynamic build: no PT_INTERP")
	}
	sysroot := func(name string) []byte {
		t.Helper()
		out, err := exec.Command("clang", "--target="+triple, "-print-file-name="+name).Output()
		if err != nil {
			t.Fatalf("clang -print-file-name=%s: %v", name, err)
		}
		p := strings.TrimSpace(string(out))
		if !filepath.IsAbs(p) {
			t.Fatalf("clang --target=%s: no %s in the cross sysroot (scripts/setup.sh installs it)", triple, name)
		}
		return read(p)
	}
	files = append(files, File{Name: interp, Mode: 0o755, Data: sysroot(path.Base(interp))})
	for _, n := range needed {
		if n != "libkbt.so" {
			files = append(files, File{Name: monitorBTLib + "/" + n, Mode: 0o755, Data: sysroot(n)})
		}
	}
	return &monitorBT{files: files,
		runs: [][]string{{monitorBTStatic}, {monitorBTDyn}, {monitorBTStatic, "signal"}, {monitorBTDyn, "signal"},
			{monitorBTStatic, "notable"}, {monitorBTDyn, "notable"}},
		host:    map[string]string{monitorBTStatic: dir + "/static", monitorBTDyn: dir + "/dynamic"},
		objdump: triple + "-objdump"}
}

type btOracleFrame struct {
	pc, fn uint64
	sym    string
	off    uint64
}

var (
	btLeafRe  = regexp.MustCompile(`(?m)^leaf=0x([0-9a-f]+)$`)
	btNotabRe = regexp.MustCompile(`(?m)^notable ret0=0x([0-9a-f]+) ret1=0x([0-9a-f]+)$`)
	btCallRe  = regexp.MustCompile(`\tblx?(\s|$)`) // objdump's ARM and AArch64 calls
	btEndRe   = regexp.MustCompile(`(?m)^end=(stack|other -?\d+)$`)
	btFrameRe = regexp.MustCompile(`(?m)^frame (\d+) pc=0x([0-9a-f]+) fn=0x([0-9a-f]+) sym=(\S+)\+0x([0-9a-f]+)$`)
)

// monitorBTCheck compares each run's getppid backtrace with the frames the
// program printed; it returns the frames compared and agreed.
func monitorBTCheck(t *testing.T, runs []guest.BacktraceRun, b *monitorBT) (compared, agreed int) {
	if len(runs) != len(b.runs) {
		t.Fatalf("%d backtrace runs reported, want %d (%v)", len(runs), len(b.runs), b.runs)
	}
	hex := func(s string) uint64 { v, _ := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64); return v }
	for _, run := range runs {
		name := strings.Join(run.Argv, " ")
		if run.Err != "" || run.Status != 0 {
			t.Errorf("%s under the monitor: status %d, err %q, output %q", name, run.Status, run.Err, run.Out)
			continue
		}
		lm := btLeafRe.FindStringSubmatch(run.Out)
		if lm == nil {
			t.Errorf("%s: output %q: no leaf address", name, run.Out)
			continue
		}
		leaf := hex(lm[1])
		var oracle []btOracleFrame
		for i, m := range btFrameRe.FindAllStringSubmatch(run.Out, -1) {
			if n, _ := strconv.Atoi(m[1]); n != i {
				t.Fatalf("%s: frame %s printed as the %dth", name, m[1], i)
			}
			oracle = append(oracle, btOracleFrame{pc: hex(m[2]), fn: hex(m[3]), sym: m[4], off: hex(m[5])})
		}
		if len(oracle) < 5 || oracle[0].fn != leaf {
			t.Errorf("%s: oracle frames %+v: want leaf's (0x%x) first, then its callers", name, oracle, leaf)
			continue
		}
		var bt []monitor.Frame
		sc := bufio.NewScanner(strings.NewReader(run.Records))
		sc.Buffer(nil, 1<<20)
		n := 0
		for sc.Scan() {
			var l struct {
				Syscall   string
				Backtrace []monitor.Frame
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: record %s: %v", name, sc.Bytes(), err)
			}
			if l.Syscall == "getppid" {
				bt, n = l.Backtrace, n+1
			}
		}
		if n != 1 {
			t.Errorf("%s: %d getppid records, want 1", name, n)
			continue
		}
		var lines []string
		for i, f := range bt {
			lines = append(lines, strconv.Itoa(i)+" "+f.Addr+" "+f.Sym+"+0x"+strconv.FormatUint(f.Off, 16)+" "+f.File)
		}
		t.Logf("%s: monitor's getppid backtrace:\n\t%s\noracle:\n%s", name, strings.Join(lines, "\n\t"), strings.Join(btFrameRe.FindAllString(run.Out, -1), "\n"))
		// frame 0: the wrapper; frame 1: in leaf.
		if len(bt) < 2 || !strings.Contains(bt[0].Sym, "getppid") {
			t.Errorf("%s: monitor's frame 0 %+v: want the getppid wrapper", name, bt)
			continue
		}
		if bt[1].Sym != "leaf" || hex(bt[1].Addr)-bt[1].Off != leaf {
			t.Errorf("%s: monitor's frame 1 %+v: want in leaf (0x%x)", name, bt[1], leaf)
		}
		for k := 1; k < len(oracle); k++ {
			compared++
			o := oracle[k]
			if k+1 >= len(bt) {
				t.Errorf("%s: monitor's backtrace ends at %d frames; oracle frame %d is 0x%x %s", name, len(bt), k, o.pc, o.sym)
				continue
			}
			f := bt[k+1]
			ok := hex(f.Addr) == o.pc
			if ok && o.sym != "-" && (f.Sym != o.sym || f.Off != o.off) {
				ok = false // dladdr's dynamic symbol
			}
			if ok && f.Sym != "" && (hex(f.Addr)-f.Off < o.fn || hex(f.Addr)-f.Off > o.pc) {
				ok = false // the symbol the monitor names must start in the unwind entry's range, at or before pc
			}
			if !ok {
				t.Errorf("%s: monitor's frame %d %s %s+0x%x; oracle's frame %d 0x%x %s+0x%x", name, k+1, f.Addr, f.Sym, f.Off, k, o.pc, o.sym, o.off)
				continue
			}
			agreed++
		}
		// Past the oracle's last frame: nothing where it reached the
		// outermost frame; where it stopped at a frame it could not
		// unwind, at most that frame's return address, which objdump
		// must show right after a call (bl, blx) in the tracee.
		em := btEndRe.FindStringSubmatch(run.Out)
		if em == nil {
			t.Errorf("%s: output %q: no end line", name, run.Out)
			continue
		}
		j := len(oracle) + 1 // the monitor's first frame past the oracle's
		if em[1] != "stack" && j < len(bt) {
			// libgcc stopped at a frame it could not unwind without
			// printing it (ARM EHABI: EXIDX_CANTUNWIND before the
			// callback): objdump must show a call (bl, blx) right before
			// the monitor's frame there.
			f := bt[j]
			call := monitorBTCallBefore(t, b, f)
			t.Logf("%s: monitor's frame %d %+v is past the oracle's (end %s); objdump: %s", name, j, f, em[1], call)
			compared++
			if btCallRe.MatchString(call) {
				agreed++
			} else {
				t.Errorf("%s: monitor's frame %d %+v: objdump shows no call before it (%q)", name, j, f, call)
			}
			j++
		}
		if nm := btNotabRe.FindStringSubmatch(run.Out); nm != nil {
			// notable has no unwind entry: libgcc's walk ends in it, the
			// monitor's goes on by its frame record: the next two frames
			// are the return addresses the compiler gave notable, less
			// the Thumb bit (frames past them are not compared).
			for k, w := range nm[1:] {
				compared++
				if j >= len(bt) || hex(bt[j].Addr) != hex(w)&^1 {
					t.Errorf("%s: monitor's frame %d: want 0x%s (notable's __builtin_return_address(%d)); backtrace %+v", name, j, w, k, bt)
				} else {
					agreed++
				}
				j++
			}
		} else if j < len(bt) {
			t.Errorf("%s: monitor's backtrace has %d frames past the oracle's last (%+v; oracle's end %s)", name, len(bt)-j, bt[j:], em[1])
		}
	}
	return compared, agreed
}

// monitorBTCallBefore returns objdump's last instruction before frame f's
// address (in a tracee's own executable, by its symbol and offset).
func monitorBTCallBefore(t *testing.T, b *monitorBT, f monitor.Frame) string {
	host, ok := b.host[f.File]
	if !ok || f.Sym == "" {
		return "not in a tracee's executable: " + f.File
	}
	ef, err := elf.Open(host)
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	ef.Close()
	if err != nil {
		t.Fatal(err)
	}
	var va uint64
	for _, s := range syms {
		if s.Name == f.Sym && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			va = s.Value&^1 + f.Off // the Thumb bit is not part of the address
		}
	}
	if va == 0 {
		return "no symbol " + f.Sym
	}
	if _, err := exec.LookPath(b.objdump); err != nil {
		t.Fatalf("%s: %v (scripts/setup.sh installs binutils for the target)", b.objdump, err)
	}
	out, err := exec.Command(b.objdump, "-d", "--start-address=0x"+strconv.FormatUint(va-4, 16),
		"--stop-address=0x"+strconv.FormatUint(va, 16), host).Output()
	if err != nil {
		t.Fatalf("%s: %v", b.objdump, err)
	}
	last := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, ":\t") && strings.Count(l, "\t") >= 2 { // "addr:\tbytes \tmnemonic\toperands"
			last = l
		}
	}
	return last
}
