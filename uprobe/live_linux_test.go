//go:build linux

package uprobe

// Live oracle tests (KBOOST_ROOT=1, as root, a kernel with uprobes): the
// running kernel is the oracle. The test programs are built from testdata
// with gcc (and go) at test time; objdump -F and nm give the addresses and
// file offsets independently of kboost.

import (
	"errors"
	"fmt"
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
// corpus-lib with libkb.so, the i386 corpus32 (gcc-multilib) and the Go
// program gotarget.
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
		run("gcc", "-m32", "-O1", "-no-pie", "-fno-pie", "-o", o("corpus32"), filepath.Join(src, "corpus32.c"))
		run("gcc", "-O1", "-pthread", "-o", o("threads"), filepath.Join(src, "threads.c"))
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

// probeRun starts bin with args, puts a uprobe on it at file offset off
// (perf PMU, that process only), lets it run (unless norun: then the site is
// only read back), reads back the site and the maps, and removes the probe.
func probeRun(bin string, off uint64, ret, norun bool, refCtr uint64, args ...string) (TrialResult, error) {
	return probeRunIn(bin, bin, off, ret, norun, refCtr, args...)
}

// probeRunIn is probeRun with the probe in file (bin itself, or a library it maps).
func probeRunIn(bin, file string, off uint64, ret, norun bool, refCtr uint64, args ...string) (TrialResult, error) {
	return Trial(bin, Probe{Path: file, Offset: off, Return: ret, RefCtrOffset: refCtr}, norun, args...)
}

// openCorpus gates on root, builds the test programs and opens the corpus
// (closed at the end of the test) with the running kernel's model.
func openCorpus(t *testing.T) (string, *Binary, *Kernel) {
	t.Helper()
	rootGate(t)
	bin := filepath.Join(built(t), "corpus")
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return bin, b, runningModel(t)
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
func TestLiveCorpus(t *testing.T) { liveCorpus(t, "corpus", 300) }

// The i386 corpus (gcc -m32) in a 32-bit task: the same checks (no NOP site
// is optimized in a 32-bit task).
func TestLiveCorpus32(t *testing.T) { liveCorpus(t, "corpus32", 150) }

func liveCorpus(t *testing.T, name string, least int) {
	rootGate(t)
	dir := built(t)
	bin := filepath.Join(dir, name)
	// Where the kernel refuses 32-bit executables there is no i386 task to
	// probe (uprobes need the kernel to run it: no qemu path).
	c := exec.Command(bin)
	if err := c.Start(); errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("%s: this kernel refuses its executables (%v)", name, err)
	} else if err == nil {
		c.Process.Kill()
		c.Wait()
	}
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
	if len(pts) < least && os.Getenv("KBOOST_UPROBE_SITES") == "" {
		t.Fatalf("%s has %d sites, want >= %d", name, len(pts), least)
	}
	const calls = 7
	type result struct {
		p    point
		site Site
		ks   TrialResult
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
		want, wantHits := TrialExpect(&r.site, r.p.norun, calls, 8) // the corpus's rep instructions iterate 8 times
		got := r.ks.Outcome(r.p.norun)
		count[got]++
		if testing.Verbose() {
			t.Logf("%-22s %-32s %-26s kboost %-12s kernel %-12s hits %d", r.p.name, SpacedHex(r.site.Bytes), r.site.Asm, want, got, r.ks.Hits)
		}
		if ok, why := TrialAgrees(&r.site, &r.ks, r.p.norun, calls, 8); !ok {
			bad++
			t.Errorf("%s %s (%s): %s (want %d hits)", r.p.name, SpacedHex(r.site.Bytes), r.site.Asm, why, wantHits)
		}
	}
	t.Logf("%s: %d sites on %s: %v; %d disagree", name, len(res), k.Name, count, bad)
}

// bashLibc starts a bash that maps libc.so.6 and returns it (killed at the
// end of the test) and libc's path.
func bashLibc(t *testing.T) (*TrialProcess, string) {
	t.Helper()
	tg, err := StartTrial("/usr/bin/bash", "-c", "echo ready; read -r x")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Kill)
	mb, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", tg.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ParseMaps(mb) {
		if strings.HasSuffix(m.Name, "/libc.so.6") {
			return tg, m.Name
		}
	}
	t.Fatal("bash maps no libc.so.6")
	return nil, ""
}

// sampleSites is 200 random instruction boundaries of path (seeded: the same
// sites every run).
func sampleSites(t *testing.T, path string, k *Kernel) []Site {
	t.Helper()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
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
	return sites
}

// 200 random instruction boundaries each of /usr/bin/bash and libc.so.6 (as a
// bash process maps them): accepted or refused as kboost predicts, and every
// accepted site holds int3 in the process.
func TestLiveSystemBinaries(t *testing.T) {
	rootGate(t)
	k := runningModel(t)
	tg, libc := bashLibc(t)
	for _, path := range []string{"/usr/bin/bash", libc} {
		sites := sampleSites(t, path, k)
		var mu sync.Mutex
		count := map[string]int{}
		var wg sync.WaitGroup
		next := make(chan Site)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := range next {
					got := "accepted"
					ev, err := OpenPMU(Probe{Path: path, Offset: uint64(s.FileOffset), Pid: tg.Pid()})
					var errno syscall.Errno
					switch {
					case errors.As(err, &errno):
						got = "refused " + boost.Errno(errno).String()
					case err != nil:
						t.Errorf("%s %#x: %v", path, uint64(s.Addr), err)
						continue
					default:
						rb, err := ReadBack(tg.Pid(), path, uint64(s.FileOffset), 1)
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

// bashWork is a bash script in the corpus protocol whose loop runs bash's
// parser, expansion and printf code and libc's string and memory functions.
const bashWork = `echo ready; read -r -n1 x; s=; for ((i=0;i<40;i++)); do s="$s$i"; printf -v z '%05d' "$i"; [[ $z == *3* ]] && s=${s/1/x}; a[i]=$z; done; IFS=,; y="${a[*]}"; echo "done ${#s} ${#y}"; read -r y`

// The same sampled sites, one bash process each running bashWork with the
// probe on: the sites the work reaches are hit, and the path the kernel took
// (read back: int3 with or without the [uprobes] XOL page, or the optimized
// call) is kboost's; sites not reached hold int3; hazards that kill the
// process (single-stepped syscall, pushf) kill it.
func TestLiveSystemBinariesHits(t *testing.T) {
	rootGate(t)
	k := runningModel(t)
	_, libc := bashLibc(t)
	for _, path := range []string{"/usr/bin/bash", libc} {
		sites := sampleSites(t, path, k)
		hot := hotSites(t, path, k)
		sites = append(sites, hot...)
		type result struct {
			s   Site
			ks  TrialResult
			err error
		}
		res := make([]result, len(sites))
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					res[i].s = sites[i]
					res[i].ks, res[i].err = probeRunIn("/usr/bin/bash", path, uint64(sites[i].FileOffset), false, false, 0, "-c", bashWork)
				}
			}()
		}
		for i := range sites {
			next <- i
		}
		close(next)
		wg.Wait()
		count := map[string]int{}
		var hitSites int
		var hits uint64
		for _, r := range res {
			if r.err != nil {
				t.Errorf("%s %s+%#x: %v", path, r.s.Func, r.s.Off, r.err)
				continue
			}
			want := r.s.Path.String()
			if r.s.Path == PathRefused {
				want = "refused " + r.s.Errno
			}
			var got string
			switch {
			case r.ks.Errno != "":
				got = "refused " + r.ks.Errno
			case r.ks.Died():
				got = fmt.Sprintf("died: %v", r.ks.Exit)
				for _, h := range r.s.Hazards {
					if h == RulePushfTF.ID || h == RuleSyscallXOL.ID {
						want = got // the hazard kboost flagged
					}
				}
			case r.ks.Hits == 0:
				got = "not hit, int3"
				if !r.ks.Readback.Int3 {
					got = "not hit, site holds " + SpacedHex(r.ks.Readback.Site)
				}
				if r.s.Path != PathRefused {
					want = "not hit, int3"
				}
			default:
				got = r.ks.Readback.Observed()
			}
			if r.ks.Hits > 0 {
				hitSites++
				hits += r.ks.Hits
			}
			count[got]++
			if got != want {
				t.Errorf("%s %s+%#x (file %#x) %s (%s): kboost %s %v, kernel %s (%d hits)", path, r.s.Func, r.s.Off, uint64(r.s.FileOffset),
					SpacedHex(r.s.Bytes), r.s.Asm, want, r.s.Reasons, got, r.ks.Hits)
			}
		}
		hotHit := 0
		for _, r := range res[len(sites)-len(hot):] {
			if r.ks.Hits > 0 {
				hotHit++
			}
		}
		if hotHit < len(hot)/2 {
			t.Errorf("%s: %d of the %d sites in functions the work calls were hit", path, hotHit, len(hot))
		}
		t.Logf("%s: %d boundaries (%d random, %d in called functions, %d of them hit) on %s, %d hit (%d hits in all): %v",
			path, len(sites), len(sites)-len(hot), len(hot), hotHit, k.Name, hitSites, hits, count)
	}
}

// hotFuncs are functions of bash and libc that bashWork calls on every
// iteration.
var hotFuncs = map[string][]string{
	"bash":      {"make_word", "dispose_word", "find_variable", "hash_search", "bind_variable", "array_insert", "legal_number", "xmalloc", "itos", "copy_word", "assign_array_element", "printf_builtin"},
	"libc.so.6": {"malloc", "free", "realloc", "__errno_location", "__ctype_b_loc", "sigprocmask", "strtoimax", "mbrtowc"},
}

// hotSites is the first boundaries (up to 12, the entry block and a little
// more) of each of hotFuncs in path.
func hotSites(t *testing.T, path string, k *Kernel) []Site {
	t.Helper()
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var sites []Site
	for _, name := range hotFuncs[filepath.Base(path)] {
		f, ok := b.Func(name)
		if !ok {
			t.Logf("%s: no function %s", path, name)
			continue
		}
		fa, err := Audit(b, k, f)
		if err != nil {
			t.Fatal(err)
		}
		sites = append(sites, fa.Sites[:min(12, len(fa.Sites))]...)
	}
	return sites
}

// Mid-instruction offsets: kboost refuses them, naming the instruction; the
// kernel installs them, and the process misbehaves: inside the immediate of
// mov $0x11223344,%eax the probe is never hit and the function returns the
// immediate with int3 (0xcc) in that byte; on the ModRM byte of a lea the
// process dies with SIGILL.
func TestLiveMidInstruction(t *testing.T) {
	bin, b, k := openCorpus(t)
	for off := uint64(1); off <= 4; off++ {
		s, _, err := Check(b, k, Request{Symbol: "k_midimm", Off: off})
		if err != nil {
			t.Fatal(err)
		}
		if s.Path != PathRefused || !slices.Contains(s.Hazards, RuleMidInsn.ID) || !strings.Contains(s.Within, "mov $0x11223344,%eax") {
			t.Errorf("k_midimm+%d: kboost %s %v within %q: want refused as mid-instruction", off, s.Path, s.Reasons, s.Within)
		}
		ks, err := probeRun(bin, uint64(s.FileOffset), false, false, 0, "midimm", "5")
		if err != nil {
			t.Fatal(err)
		}
		if ks.Errno != "" || !s.KernelAccepts {
			t.Errorf("k_midimm+%d: kernel %q, kboost says the kernel accepts: %v", off, ks.Errno, s.KernelAccepts)
			continue
		}
		// int3 replaces immediate byte off-1.
		want := uint64(0x11223344)&^(0xff<<(8*(off-1))) | 0xcc<<(8*(off-1))
		if ks.Done != fmt.Sprintf("done 5 wrong 0 last %#x", want) || ks.Hits != 0 {
			t.Errorf("k_midimm+%d: %q, %d hits; want last %#x and no hits", off, ks.Done, ks.Hits, want)
		}
		t.Logf("k_midimm+%d: kernel accepted, %d hits, %s: %s", off, ks.Hits, ks.Done, s.Details[0])
	}
	s, _, err := Check(b, k, Request{Symbol: "k_midlea", Off: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != PathRefused || !strings.Contains(s.Within, "lea") {
		t.Errorf("k_midlea+2: kboost %s within %q", s.Path, s.Within)
	}
	ks, err := probeRun(bin, uint64(s.FileOffset), false, false, 0, "midlea", "5")
	if err != nil {
		t.Fatal(err)
	}
	if ks.Errno != "" || ks.Exit == "" || !strings.Contains(ks.Exit, "illegal instruction") {
		t.Errorf("k_midlea+2: kernel %q, process ended %v; want accepted and SIGILL", ks.Errno, ks.Exit)
	}
	t.Logf("k_midlea+2: kernel accepted, the process ended: %v", ks.Exit)
}

// The red-zone hazard of optimized 5-byte NOP probes (kernels with the
// optimization): k_redzone keeps its argument at -8(%rsp) across a 5-byte
// NOP. kboost flags the site; with a probe there, every call after the first
// (once the site is optimized) returns a wrong value.
func TestLiveRedZone(t *testing.T) {
	bin, b, k := openCorpus(t)
	if !k.RedZoneCall {
		t.Skipf("model %s has no optimized 5-byte NOP call", k.Name)
	}
	addr := nmSyms(t, bin)["s_redzone"]
	s, fa, err := Check(b, k, Request{Addr: addr, HasAddr: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Path != PathOptimized || !slices.Contains(s.Hazards, RuleRedZone.ID) || fa.RedZone == nil {
		t.Fatalf("s_redzone: kboost %s hazards %v: want optimized with the red-zone hazard", s.Path, s.Hazards)
	}
	// A 5-byte NOP in a function without red-zone data: no hazard.
	if c, _, err := Check(b, k, Request{Addr: nmSyms(t, bin)["s_nop5"], HasAddr: true}); err != nil || len(c.Hazards) != 0 {
		t.Errorf("s_nop5: hazards %v (%v)", c.Hazards, err)
	}
	ks, err := probeRun(bin, uint64(s.FileOffset), false, false, 0, "redzone", "10")
	if err != nil {
		t.Fatal(err)
	}
	if !ks.Readback.Call || ks.Done != "done 10 wrong 9 last 0x"+strconv.FormatUint(uint64(ks.Readback.Addr)+5, 16) {
		t.Errorf("redzone: %q, site %s: want 9 wrong results of 10, the last one the call's return address %#x", ks.Done, SpacedHex(ks.Readback.Site), uint64(ks.Readback.Addr)+5)
	}
	t.Logf("redzone: %s (site %s, %d hits); kboost: %s", ks.Done, SpacedHex(ks.Readback.Site), ks.Hits, s.Details[len(s.Details)-1])
	// --place cheapest moves the probe off the hazard: every result right,
	// one hit per call.
	moved, why, err := Cheapest(fa, s.Off)
	if err != nil || moved.Off == s.Off || len(moved.Hazards) != 0 {
		t.Fatalf("cheapest from +%#x: +%#x %v (%v)", s.Off, moved.Off, moved.Hazards, err)
	}
	ks, err = probeRun(bin, uint64(moved.FileOffset), false, false, 0, "redzone", "10")
	if err != nil || ks.Done != "done 10 wrong 0 last 0xa" || ks.Hits != 10 {
		t.Errorf("redzone probed at +%#x: %q, %d hits (%v)", moved.Off, ks.Done, ks.Hits, err)
	}
	t.Logf("placed: %s", why)
	// Without the probe the function is right.
	tg, err := StartTrial(bin, "redzone", "10")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Kill()
	if l, err := tg.Run(); err != nil || l != "done 10 wrong 0 last 0xa" {
		t.Errorf("redzone unprobed: %q %v", l, err)
	}
}

// File offsets for a PIE, a non-PIE, a static, a stripped (dynamic symbols
// only) executable, a shared library and a Go binary: kboost's offset equals
// objdump -F's, and the kernel counts one hit per call there.
func TestLiveFileOffsets(t *testing.T) {
	rootGate(t)
	dir := built(t)
	k := runningModel(t)
	for _, c := range []struct {
		bin, file, sym, arg string
		kind                Kind
		static, gobin       bool
	}{
		{"corpus", "corpus", "k_add_rax_rcx", "add_rax_rcx", KindPIE, false, false},
		{"corpus-nopie", "corpus-nopie", "k_add_rax_rcx", "add_rax_rcx", KindExec, false, false},
		{"corpus-static", "corpus-static", "k_add_rax_rcx", "add_rax_rcx", KindExec, true, false},
		{"corpus-stripped", "corpus-stripped", "k_add_rax_rcx", "add_rax_rcx", KindPIE, false, false},
		{"corpus-lib", "libkb.so", "kb_lib", "lib", KindShared, false, false},
		{"gotarget", "gotarget", "main.work", "x", KindExec, true, true},
	} {
		file := filepath.Join(dir, c.file)
		b, err := Open(file)
		if err != nil {
			t.Fatal(err)
		}
		if b.Kind != c.kind || b.Static != c.static || b.Go != c.gobin {
			t.Errorf("%s: kind %s static %v go %v, want %s %v %v", c.file, b.Kind, b.Static, b.Go, c.kind, c.static, c.gobin)
		}
		s, _, err := Check(b, k, Request{Symbol: c.sym})
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		if c.bin == "corpus-stripped" {
			if b.SymFrom != "dynsym" {
				t.Errorf("%s: symbols from %s, want dynsym", c.file, b.SymFrom)
			}
		} else if want := objdumpFileOffset(t, file, c.sym); uint64(s.FileOffset) != want {
			t.Errorf("%s %s: kboost file offset %#x, objdump -F %#x", c.file, c.sym, uint64(s.FileOffset), want)
		}
		ks, err := probeRunIn(filepath.Join(dir, c.bin), file, uint64(s.FileOffset), false, false, 0, c.arg, "9")
		if err != nil {
			t.Fatal(err)
		}
		if ks.Errno != "" || ks.Hits != 9 {
			t.Errorf("%s %s at file %#x: kernel %q, %d hits of 9 calls", c.file, c.sym, uint64(s.FileOffset), ks.Errno, ks.Hits)
		}
		t.Logf("%-16s %-14s %s vaddr %#x file %#x: %d hits of 9, %s", c.file, c.sym, b.Kind, uint64(s.Addr), uint64(s.FileOffset), ks.Hits, s.Path)
	}
	// A uretprobe on a Go function: flagged.
	b, err := Open(filepath.Join(dir, "gotarget"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if s, _, err := Check(b, k, Request{Symbol: "main.work", Return: true}); err != nil || !slices.Contains(s.Hazards, RuleGoRet.ID) {
		t.Errorf("main.work%%return: hazards %v (%v): want %s", s.Hazards, err, RuleGoRet.ID)
	}
}

// A USDT semaphore: with ref_ctr_offset the kernel raises the semaphore and
// the gated probe fires once per call; without it the program skips it.
func TestLiveUSDTSemaphore(t *testing.T) {
	bin, b, _ := openCorpus(t)
	us, err := b.USDT()
	if err != nil {
		t.Fatal(err)
	}
	var g *USDT
	for i := range us {
		if us[i].Name == "gated" {
			g = &us[i]
		}
	}
	if g == nil || g.Semaphore == 0 {
		t.Fatalf("no gated probe with a semaphore in %v", us)
	}
	off, err := b.ExecOffset(uint64(g.Addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []uint64{0, uint64(g.SemaphoreOffset)} {
		ks, err := probeRun(bin, off, false, false, ref, "u_gated", "6")
		if err != nil {
			t.Fatal(err)
		}
		want := uint64(0)
		if ref != 0 {
			want = 6
		}
		if ks.Errno != "" || ks.Hits != want {
			t.Errorf("gated, ref_ctr_offset %#x: kernel %q, %d hits, want %d", ref, ks.Errno, ks.Hits, want)
		}
	}
}

// uprobe bench at a small scale: every probed path counts one hit per call,
// the predicted paths are the measured ones' names, and the costs are in the
// order of the paths (optimized and emulated below single-step).
func TestLiveBench(t *testing.T) {
	rootGate(t)
	k := runningModel(t)
	rows, err := Bench(t.TempDir(), 0.02, 1, k)
	if err != nil {
		t.Fatal(err)
	}
	funcs := BenchFuncsFor(k)
	by := map[string]BenchRow{}
	for i, r := range rows {
		by[r.Path] = r
		if funcs[i].Probe && r.Hits != r.Calls {
			t.Errorf("%s: %d hits of %d calls", r.Path, r.Hits, r.Calls)
		}
		t.Logf("%-10s %-11s %8d calls %10.1f ns/call %8.0fx", r.Path, r.Verdict, r.Calls, r.NsCall, r.Ratio)
	}
	if k.RedZoneCall && by["optimized"].Verdict != "optimized" || by["emulated"].Verdict != "emulated" || by["singlestep"].Verdict != "singlestep" {
		t.Errorf("predicted paths: %+v", rows)
	}
	if !(by["singlestep"].NsCall > by["emulated"].NsCall && by["singlestep"].NsCall > by["optimized"].NsCall && by["optimized"].NsCall > by["native"].NsCall) {
		t.Errorf("costs out of order: %+v", rows)
	}
}

// xchg %rax,%r8 (49 90) is opcode 0x90 with REX.B: the kernel emulates it as
// a NOP, so the exchange never happens. kboost flags it.
func TestLiveXchgR8(t *testing.T) {
	bin, b, k := openCorpus(t)
	s, _, err := Check(b, k, Request{Addr: nmSyms(t, bin)["s_xchg_r8_sem"], HasAddr: true})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := probeRun(bin, uint64(s.FileOffset), false, false, 0, "xchg_r8_sem", "5")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Hazards, RuleXchgNop.ID) || s.Path != PathEmulated {
		t.Errorf("kboost: %s %v: want emulated with %s", s.Path, s.Hazards, RuleXchgNop.ID)
	}
	// Unprobed it returns its argument (5 at the last call); probed, 0.
	if ks.Done != "done 5 wrong 0 last 0" || ks.Hits != 5 {
		t.Errorf("probed: %q, %d hits: want the exchange lost (last 0) and 5 hits", ks.Done, ks.Hits)
	}
	tg, err := StartTrial(bin, "xchg_r8_sem", "5")
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Kill()
	if l, err := tg.Run(); err != nil || l != "done 5 wrong 0 last 0x5" {
		t.Errorf("unprobed: %q %v", l, err)
	}
	t.Logf("xchg %%rax,%%r8 probed: %s, %d hits; kboost %s %v", ks.Done, ks.Hits, s.Path, s.Hazards)
}

// A uretprobe on a Go function, through the kernel: on main.work (a leaf)
// every return is counted; on main.grow, whose callee makes the runtime copy
// the goroutine's stack while the return address is the kernel's trampoline,
// the program dies in the runtime (the hazard kboost flags on both).
func TestLiveGoUretprobe(t *testing.T) {
	rootGate(t)
	dir := built(t)
	k := runningModel(t)
	bin := filepath.Join(dir, "gotarget")
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		sym, arg string
		dies     bool
	}{{"main.work", "x", false}, {"main.grow", "grow", true}} {
		s, _, err := Check(b, k, Request{Symbol: c.sym, Return: true})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(s.Hazards, RuleGoRet.ID) {
			t.Errorf("%s%%return: hazards %v, want %s", c.sym, s.Hazards, RuleGoRet.ID)
		}
		ks, err := probeRunIn(bin, bin, uint64(s.FileOffset), true, false, 0, c.arg, "9")
		if err != nil {
			t.Fatal(err)
		}
		died := ks.Died()
		first, _, _ := strings.Cut(ks.Stderr, "\n")
		t.Logf("%s%%return: errno %q, done %q, exit %v, %d hits, stderr %q", c.sym, ks.Errno, ks.Done, ks.Exit, ks.Hits, first)
		switch {
		case ks.Errno != "":
			t.Errorf("%s%%return: refused %s", c.sym, ks.Errno)
		case died != c.dies:
			t.Errorf("%s%%return: died %v (%v), want %v", c.sym, died, ks.Exit, c.dies)
		case !c.dies && ks.Hits != 9:
			t.Errorf("%s%%return: %d hits of 9 returns", c.sym, ks.Hits)
		case c.dies && !strings.Contains(ks.Stderr, "runtime:"):
			t.Errorf("%s%%return: died without a runtime message: %q", c.sym, ks.Stderr)
		}
	}
}

// livePath is what the running kernel does at site s of code: code is the
// bench workload's function (called in a loop), probed at s (perf, that
// process) while it runs; the site's bytes and the maps are read back once
// it was hit a few times (the optimization happens at the first hit).
func livePath(t *testing.T, code []byte, s *Site) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "loop")
	if err := os.WriteFile(path, BenchImage([]BenchFunc{{Code: code}}, 0, 1<<31), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	off := BenchFuncOffset(0) + s.Off
	ev, err := OpenPMU(Probe{Path: path, Offset: off, Pid: cmd.Process.Pid})
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return "refused " + boost.Errno(errno).String()
		}
		t.Fatal(err)
	}
	defer ev.Close()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if h, _ := ev.Hits(); h >= 3 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("+%#x of %s: not hit 3 times in 10 s", s.Off, SpacedHex(code))
		}
	}
	rb, err := ReadBack(cmd.Process.Pid, path, off, 8)
	if err != nil {
		t.Fatal(err)
	}
	return rb.Observed()
}

// --place cheapest under the running kernel's model, held to the running
// kernel: each site's path is read back from a process running it.
func TestLiveCheapest(t *testing.T) {
	rootGate(t)
	k := runningModel(t)
	n := checkCheapest(t, k, func(code []byte, fa *FuncAudit, s *Site) string { return livePath(t, code, s) })
	t.Logf("%s: %d starting points in %d functions, each placed at one of the running kernel's cheapest sites", k.Name, n, len(placeCodes))
}

// uprobe bench's optimized row probes the first NOP form the running kernel
// optimizes (read back from a process running each form).
func TestLiveBenchNop(t *testing.T) {
	rootGate(t)
	k := runningModel(t)
	var want []byte
	var seen []string
	for _, nop := range benchNops {
		code := append(append([]byte(nil), nop...), 0xc3)
		p := livePath(t, code, &Site{})
		seen = append(seen, SpacedHex(nop)+": "+p)
		if p == "optimized" && want == nil {
			want = nop
		}
	}
	got, ok := BenchNop(k)
	if ok != (want != nil) || ok && SpacedHex(got) != SpacedHex(want) {
		t.Errorf("%s: BenchNop %s (optimized %v); the running kernel: %v", k.Name, SpacedHex(got), ok, seen)
	}
	t.Logf("%s: bench's optimized row probes %s; the running kernel: %v", k.Name, SpacedHex(got), seen)
}

// A probe for one process (perf PMU, per-thread counters) must not break the
// target: a thread it creates afterwards is created (inherited counters made
// the kernel re-read the probe's path pointer in the target during clone:
// pthread_create failed with EFAULT). The calls on threads that existed
// before are counted; the new thread's are not.
func TestLiveThreadAfterProbe(t *testing.T) {
	rootGate(t)
	bin := filepath.Join(built(t), "threads")
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := runningModel(t)
	for _, ret := range []bool{false, true} {
		s, _, err := Check(b, k, Request{Symbol: "work", Return: ret})
		if err != nil {
			t.Fatal(err)
		}
		ks, err := probeRun(bin, uint64(s.FileOffset), ret, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ks.Done != "done created" || ks.Hits != 1 {
			t.Errorf("return %v: %q, %d hits (exit %q): want the thread created and the main thread's call counted", ret, ks.Done, ks.Hits, ks.Exit)
		}
		t.Logf("return %v: %s, %d hits", ret, ks.Done, ks.Hits)
	}
}
