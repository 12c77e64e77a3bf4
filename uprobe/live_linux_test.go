//go:build linux

package uprobe

// Live oracle tests (KBOOST_ROOT=1, as root, a kernel with uprobes): the
// running kernel is the oracle. The test programs are built from testdata
// with gcc (and go) at test time; objdump -F and nm give the addresses and
// file offsets independently of kboost.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/boost"
)

func rootGate(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ROOT") != "1" {
		t.Skip("set KBOOST_ROOT=1 (as root, kernel with uprobes) to check against the running kernel")
	}
	if os.Geteuid() != 0 {
		t.Fatal("KBOOST_ROOT=1 needs root")
	}
	if _, err := os.Stat("/sys/bus/event_source/devices/uprobe/type"); err != nil {
		t.Fatal("the running kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)")
	}
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// built compiles the test programs once: corpus (PIE), corpus-nopie,
// corpus-static, corpus-stripped (-rdynamic, stripped: dynamic symbols only),
// corpus-lib with libkb.so, and the Go program gotarget.
func built(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kboost-uprobe-test-")
		if err != nil {
			buildErr = err
			return
		}
		buildDir = dir
		src, _ := filepath.Abs("testdata")
		run := func(name string, args ...string) {
			if buildErr != nil {
				return
			}
			out, err := exec.Command(name, args...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
			}
		}
		c := filepath.Join(src, "corpus.c")
		o := func(n string) string { return filepath.Join(dir, n) }
		run("gcc", "-O1", "-o", o("corpus"), c)
		run("gcc", "-O1", "-no-pie", "-fno-pie", "-o", o("corpus-nopie"), c)
		run("gcc", "-O1", "-static", "-o", o("corpus-static"), c)
		run("gcc", "-O1", "-rdynamic", "-o", o("corpus-stripped"), c)
		run("strip", o("corpus-stripped"))
		run("gcc", "-O1", "-shared", "-fPIC", "-o", o("libkb.so"), filepath.Join(src, "libkb.c"))
		run("gcc", "-O1", "-DKB_LIB", "-o", o("corpus-lib"), c, "-L"+dir, "-lkb", "-Wl,-rpath,"+dir)
		cmd := exec.Command("go", "build", "-o", o("gotarget"), filepath.Join(src, "gotarget", "main.go"))
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil && buildErr == nil {
			buildErr = fmt.Errorf("go build gotarget: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// target is one run of a test program in the corpus protocol.
type target struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startTarget(bin string, args ...string) (*target, error) {
	cmd := exec.Command(bin, args...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	tg := &target{cmd: cmd, in: in, out: bufio.NewReader(out)}
	l, err := tg.out.ReadString('\n')
	if err != nil || l != "ready\n" {
		tg.kill()
		return nil, fmt.Errorf("%s %v: no ready line (%q, %v)", bin, args, l, err)
	}
	return tg, nil
}

func (tg *target) pid() int { return tg.cmd.Process.Pid }

// run lets the program make its calls and returns its "done" line.
func (tg *target) run() (string, error) {
	if _, err := tg.in.Write([]byte{'x'}); err != nil {
		return "", err
	}
	l, err := tg.out.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("no done line: %w", err)
	}
	return strings.TrimSpace(l), nil
}

// exit lets the program exit and returns how it ended.
func (tg *target) exit() error {
	tg.in.Close()
	done := make(chan error, 1)
	go func() { done <- tg.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		tg.cmd.Process.Kill()
		return <-done
	}
}

func (tg *target) kill() {
	tg.cmd.Process.Kill()
	tg.exit()
}

// nmSyms is nm's view of a binary's symbols (the oracle for addresses).
func nmSyms(t *testing.T, bin string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", bin, err)
	}
	m := map[string]uint64{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 {
			if v, err := strconv.ParseUint(f[0], 16, 64); err == nil {
				m[f[2]] = v
			}
		}
	}
	return m
}

var fileOffRE = regexp.MustCompile(`<([^>]+)> \(File Offset: 0x([0-9a-f]+)\):`)

// objdumpFileOffset is objdump -F's file offset of a function.
func objdumpFileOffset(t *testing.T, bin, fn string) uint64 {
	t.Helper()
	out, err := exec.Command("objdump", "-d", "-F", "--disassemble="+fn, bin).Output()
	if err != nil {
		t.Fatalf("objdump -F %s: %v", bin, err)
	}
	for _, m := range fileOffRE.FindAllStringSubmatch(string(out), -1) {
		if m[1] == fn {
			v, _ := strconv.ParseUint(m[2], 16, 64)
			return v
		}
	}
	t.Fatalf("objdump -F %s: no file offset for %s", bin, fn)
	return 0
}

// kernelSays is what the kernel did with one probe.
type kernelSays struct {
	errno  string // refused: the errno name
	rb     Readback
	done   string // the program's done line
	exit   error  // how the program ended
	hits   uint64
	opened bool
}

// probeRun starts bin with args, puts a uprobe on it at file offset off
// (perf PMU, that process only), lets it run (unless norun: then the site is
// only read back), reads back the site and the maps, and removes the probe.
func probeRun(bin string, off uint64, ret, norun bool, refCtr uint64, args ...string) (kernelSays, error) {
	var ks kernelSays
	tg, err := startTarget(bin, args...)
	if err != nil {
		return ks, err
	}
	defer tg.kill()
	ev, err := OpenPMU(Probe{Path: bin, Offset: off, Return: ret, RefCtrOffset: refCtr, Pid: tg.pid()})
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			return ks, err
		}
		ks.errno = boost.Errno(errno).String()
		return ks, nil
	}
	defer ev.Close()
	ks.opened = true
	if norun {
		ks.rb, err = ReadBack(tg.pid(), bin, off, 8)
		return ks, err
	}
	ks.done, err = tg.run()
	if err != nil {
		ks.exit = tg.exit()
		ks.hits, _ = ev.Hits()
		return ks, nil
	}
	if ks.rb, err = ReadBack(tg.pid(), bin, off, 8); err != nil {
		return ks, err
	}
	ks.hits, err = ev.Hits()
	ks.rb.Hits = ks.hits
	ks.exit = tg.exit()
	return ks, err
}

func runningModel(t *testing.T) *Kernel {
	k, note := Running()
	if note != "" {
		t.Logf("model: %s", note)
	}
	return k
}

// The corpus: every s_NAME site of the test program (>= 300 instructions,
// NOP forms) and its USDT sites, one process and one probe each. kboost's
// predicted path must be what the kernel did: refused with the same errno,
// or accepted, and then the site bytes (int3, or the call into
// [uprobes-trampoline]), the [uprobes] XOL page (single-step) or its absence
// (emulation), and hit counts equal to the calls.
func TestLiveCorpus(t *testing.T) {
	rootGate(t)
	dir := built(t)
	bin := filepath.Join(dir, "corpus")
	k := runningModel(t)
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	type point struct {
		name, arg string
		addr      uint64
		norun     bool
	}
	var pts []point
	for name, a := range nmSyms(t, bin) {
		if n, ok := strings.CutPrefix(name, "s_"); ok {
			pts = append(pts, point{name, n, a, false})
		}
		if n, ok := strings.CutPrefix(name, "n_"); ok {
			pts = append(pts, point{name, n, a, true})
		}
	}
	usdt, err := b.USDT()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usdt {
		if u.Name == "gated" {
			continue // TestLiveUSDTSemaphore
		}
		pts = append(pts, point{"usdt:" + u.Provider + ":" + u.Name, "u_" + u.Name, uint64(u.Addr), false})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].name < pts[j].name })
	if re := os.Getenv("KBOOST_UPROBE_SITES"); re != "" { // to look at a few sites
		pts = slices.DeleteFunc(pts, func(p point) bool { return !regexp.MustCompile(re).MatchString(p.name) })
	}
	if len(pts) < 300 && os.Getenv("KBOOST_UPROBE_SITES") == "" {
		t.Fatalf("corpus has %d sites, want >= 300", len(pts))
	}
	const calls = 7
	type result struct {
		p    point
		site Site
		ks   kernelSays
		err  error
	}
	res := make([]result, len(pts))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &res[i]
				r.p = pts[i]
				r.site, _, r.err = Check(b, k, Request{Addr: r.p.addr, HasAddr: true})
				arg := r.p.arg
				if r.p.norun {
					arg = "nop1" // any runnable name: the program only has to start
				}
				if r.err == nil {
					r.ks, r.err = probeRun(bin, uint64(r.site.FileOffset), false, r.p.norun, 0, arg, strconv.Itoa(calls))
				}
			}
		}()
	}
	for i := range pts {
		next <- i
	}
	close(next)
	wg.Wait()
	count := map[string]int{}
	bad := 0
	for _, r := range res {
		if r.err != nil {
			t.Errorf("%s: %v", r.p.name, r.err)
			bad++
			continue
		}
		want := r.site.Path.String()
		if r.site.Path == PathRefused {
			want += " " + r.site.Errno
		}
		// Hazards that kill the process: how it dies (measured).
		for _, h := range r.site.Hazards {
			switch h {
			case RulePushfTF.ID:
				want = "died: signal: trace/breakpoint trap"
			case RuleSyscallXOL.ID:
				want = "died: signal: segmentation fault"
			}
		}
		got, wantHits := "", uint64(calls)
		switch {
		case r.ks.errno != "":
			got, wantHits = "refused "+r.ks.errno, 0
		case r.p.norun:
			got, wantHits = "accepted, int3 not written", 0
			if r.ks.rb.Int3 {
				got = "accepted"
			}
			if r.site.Path != PathRefused {
				want = "accepted"
			}
		case r.ks.exit != nil && r.ks.done == "":
			got = fmt.Sprintf("died: %v", r.ks.exit)
		default:
			got = r.ks.rb.Observed()
		}
		if slices.Contains(r.site.Reasons, RuleRepHits.ID) {
			wantHits *= 8 // the corpus's rep instructions iterate 8 times
		}
		count[got]++
		if testing.Verbose() {
			t.Logf("%-22s %-32s %-26s kboost %-12s kernel %-12s hits %d", r.p.name, SpacedHex(r.site.Bytes), r.site.Asm, want, got, r.ks.hits)
		}
		if strings.HasPrefix(want, "died") {
			wantHits = 1 // the first hit is what kills it
		}
		if got != want || r.ks.hits != wantHits {
			bad++
			t.Errorf("%s %s (%s): kboost %s %v, kernel %s, %d hits of %d calls, site %s", r.p.name, SpacedHex(r.site.Bytes), r.site.Asm,
				want, r.site.Reasons, got, r.ks.hits, wantHits, SpacedHex(r.ks.rb.Site))
		}
	}
	t.Logf("%d sites on %s: %v; %d disagree", len(res), k.Name, count, bad)
}

// 200 random instruction boundaries each of /usr/bin/bash and libc.so.6 (as a
// bash process maps them): accepted or refused as kboost predicts, and every
// accepted site holds int3 in the process.
func TestLiveSystemBinaries(t *testing.T) {
	rootGate(t)
	k := runningModel(t)
	tg, err := startTarget("/usr/bin/bash", "-c", "echo ready; read -r x")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.kill()
	mb, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", tg.pid()))
	if err != nil {
		t.Fatal(err)
	}
	libc := ""
	for _, m := range ParseMaps(mb) {
		if strings.HasSuffix(m.Name, "/libc.so.6") {
			libc = m.Name
		}
	}
	if libc == "" {
		t.Fatal("bash maps no libc.so.6")
	}
	for _, path := range []string{"/usr/bin/bash", libc} {
		b, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewSource(14))
		var sites []Site
		seen := map[Hex]bool{}
		for tries := 0; len(sites) < 200 && tries < 5000; tries++ {
			f := b.Funcs[rng.Intn(len(b.Funcs))]
			fa, err := Audit(b, k, f)
			if err != nil || len(fa.Sites) == 0 {
				continue
			}
			s := fa.Sites[rng.Intn(len(fa.Sites))]
			if !seen[s.Addr] {
				seen[s.Addr] = true
				sites = append(sites, s)
			}
		}
		b.Close()
		var mu sync.Mutex
		count := map[string]int{}
		var wg sync.WaitGroup
		next := make(chan Site)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := range next {
					got := "accepted"
					ev, err := OpenPMU(Probe{Path: path, Offset: uint64(s.FileOffset), Pid: tg.pid()})
					var errno syscall.Errno
					switch {
					case errors.As(err, &errno):
						got = "refused " + boost.Errno(errno).String()
					case err != nil:
						t.Errorf("%s %#x: %v", path, uint64(s.Addr), err)
						continue
					default:
						rb, err := ReadBack(tg.pid(), path, uint64(s.FileOffset), 1)
						if err != nil || !rb.Int3 {
							got = fmt.Sprintf("accepted, but the site holds %s (%v)", rb.Site, err)
						}
						ev.Close()
					}
					want := "accepted"
					if s.Path == PathRefused {
						want = "refused " + s.Errno
					}
					mu.Lock()
					count[got]++
					mu.Unlock()
					if got != want {
						t.Errorf("%s %s+%#x (file %#x) %s (%s): kboost %s %v, kernel %s", path, s.Func, s.Off, uint64(s.FileOffset), s.Bytes, s.Asm, want, s.Reasons, got)
					}
				}
			}()
		}
		for _, s := range sites {
			next <- s
		}
		close(next)
		wg.Wait()
		t.Logf("%s: %d boundaries: %v", path, len(sites), count)
	}
}
