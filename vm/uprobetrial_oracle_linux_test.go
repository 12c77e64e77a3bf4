//go:build linux

package vm

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/uprobe"
	"github.com/kboost/kboost/vm/guest"
)

// Issue 12's uprobes side of the booted kernels, run by
// TestOracleVerifyVersions in the boot of each kernel it verifies (the
// uprobe-trial step after kboost-verify): uprobe's oracle corpus probed
// inside Debian's 7.2 and 6.12 kernels, one process per site, compared with
// the uprobes model of the guest's release: refused with the errno or
// accepted, the path read back from the site's bytes and the guest's maps
// (int3 or BRK with or without the [uprobes] XOL page, the call into
// [uprobes-trampoline]), and the hits equal to the calls.
//
// amd64: uprobe/testdata/corpus.c built static with gcc; the guest's CPU is
// QEMU's max (the corpus holds AVX instructions). arm64:
// uprobe/testdata/corpus_a64.c built by clang against Debian's arm64 cross
// libc (gcc-aarch64-linux-gnu cannot be installed beside gcc-multilib,
// which the i386 corpora need), on the verification's cortex-a57.

// uprobeGuestArch is one architecture's corpus and the QEMU arguments its
// guest needs.
type uprobeGuestArch struct {
	src   string
	cc    []string // the compiler command
	qemu  []string
	least int // sites the corpus must have
}

var (
	uprobeAMD64 = uprobeGuestArch{"corpus.c", []string{"gcc"}, []string{"-cpu", "max"}, 300}
	uprobeARM64 = uprobeGuestArch{"corpus_a64.c", []string{"clang", "--target=aarch64-linux-gnu"}, nil, 150}
)

// uprobeCalls is how many times each run point's function is called.
const uprobeCalls = 7

// uprobeCorpus is one architecture's built corpus and its points.
type uprobeCorpus struct {
	bin   string
	b     *uprobe.Binary
	pts   []guest.UprobePoint
	addrs []uint64
}

// buildUprobeCorpus compiles ga's corpus into dir and lists its points.
func buildUprobeCorpus(t *testing.T, ga uprobeGuestArch, dir string) *uprobeCorpus {
	t.Helper()
	if _, err := exec.LookPath(ga.cc[0]); err != nil {
		t.Fatalf("%s: %v (scripts/setup.sh installs it)", ga.cc[0], err)
	}
	bin := filepath.Join(dir, "corpus")
	src, _ := filepath.Abs("../uprobe/testdata/" + ga.src)
	cc := append(append([]string{}, ga.cc...), "-O1", "-static", "-o", bin, src)
	if out, err := exec.Command(cc[0], cc[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cc, " "), err, out)
	}
	b, err := uprobe.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	pts, addrs := uprobeCorpusPoints(t, b, bin, ga.least)
	return &uprobeCorpus{bin, b, pts, addrs}
}

// request is the uprobe-trial request of the corpus.
func (c *uprobeCorpus) request() *UprobeTrialRequest {
	return &UprobeTrialRequest{Bin: c.bin, Args: guest.UprobeArgs{Calls: uprobeCalls, Points: c.pts}}
}

// checkUprobeReport requires every point of the corpus to agree with the
// model the guest's release picks (uprobes-<version>), but for the single-
// stepped pause where this guest's CPU is measured to lose the trap after it.
func checkUprobeReport(t *testing.T, c *uprobeCorpus, rep *guest.UprobeReport, version string) {
	t.Helper()
	if rep == nil {
		t.Fatal("no uprobe-trial report")
	}
	k, note := uprobe.ForRelease(rep.Release)
	t.Logf("guest %s %s: model %s (%s) %s; %d points in %.0f s inside the guest",
		rep.Release, rep.Machine, k.Name, k.PolicyFor(c.b.Arch).Name, note, len(rep.Records), rep.Seconds)
	if want := "uprobes-" + version; k.Name != want {
		t.Fatalf("release %s picks %s, want %s", rep.Release, k.Name, want)
	}
	if len(rep.Records) != len(c.pts) {
		t.Fatalf("%d records for %d points", len(rep.Records), len(c.pts))
	}
	lost := trapLostAfterPause(t, c.bin, c.pts, rep)
	count := map[string]int{}
	bad, qemu := 0, 0
	for i, r := range rep.Records {
		p := c.pts[i]
		if r.Err != "" {
			bad++
			t.Errorf("%s: %s", p.Name, r.Err)
			continue
		}
		s, _, err := uprobe.Check(c.b, k, uprobe.Request{Addr: c.addrs[i], HasAddr: true})
		if err != nil {
			t.Fatal(err)
		}
		got := r.Result.Outcome(p.NoRun)
		count[got]++
		if lost && s.Path == uprobe.PathSingleStep && s.Asm == "pause" && got == "died: signal: segmentation fault" && r.Result.Hits == 1 {
			qemu++
			t.Logf("%s %s (%s): kboost %s; the process died at the first hit: this guest's CPU does not trap after a pause with TF set (k_tfpause), so the copy in the XOL page runs on", p.Name, uprobe.SpacedHex(s.Bytes), s.Asm, s.Path)
			continue
		}
		if ok, why := uprobe.TrialAgrees(&s, &r.Result, p.NoRun, uprobeCalls, 8); !ok {
			bad++
			t.Errorf("%s %s (%s): %s", p.Name, uprobe.SpacedHex(s.Bytes), s.Asm, why)
		} else if testing.Verbose() {
			t.Logf("%-22s %-32s %-26s %s, %d hits", p.Name, uprobe.SpacedHex(s.Bytes), s.Asm, got, r.Result.Hits)
		}
	}
	n := len(rep.Records)
	t.Logf("%s: %d sites, %v; %d agree (%.1f%%), %d disagree, %d explained by QEMU TCG (single-stepped pause)", rep.Release, n, count, n-bad-qemu, 100*float64(n-bad-qemu)/float64(n), bad, qemu)
}

// trapLostAfterPause reports whether the guest's CPU loses the single-step
// trap after pause: the corpus's k_tfpause (TF set, then pause; it returns
// how far past the pause the trap came) returns on this host's CPU what the
// CPU manual says (2, right after it), and in the guest something else, while
// k_tfnop (the same over a nop) agrees. QEMU's TCG does this: it ends the
// translation block at pause without the trap-flag check (qemu-devel,
// "Re: [PATCH] target/i386: always go through gen_eob*()", 2024-05-25). A
// kernel single-stepping pause out of line then never regains control.
func trapLostAfterPause(t *testing.T, bin string, pts []guest.UprobePoint, rep *guest.UprobeReport) bool {
	t.Helper()
	guestDone := map[string]string{}
	for i, p := range pts {
		guestDone[p.Arg] = rep.Records[i].Result.Done
	}
	if guestDone["tfpause"] == "" {
		return false // not the x86-64 corpus
	}
	same := true
	for _, f := range []string{"tfpause", "tfnop"} {
		cmd := exec.Command(bin, f, "7")
		cmd.Stdin = strings.NewReader("xy")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s %s on the host: %v", bin, f, err)
		}
		host := strings.TrimSpace(strings.TrimPrefix(string(out), "ready\n"))
		t.Logf("%s: host CPU %q, guest %q", f, host, guestDone[f])
		if f == "tfpause" && host != "done 7 wrong 0 last 0x2" {
			t.Fatalf("the host CPU traps after pause at %q: want right after it (last 0x2)", host)
		}
		if f == "tfpause" {
			same = host == guestDone[f]
		} else if host != guestDone[f] {
			t.Errorf("%s: the guest's CPU traps elsewhere than the host's after a nop: %q, host %q", f, guestDone[f], host)
		}
	}
	return !same
}

// uprobeCorpusPoints is every s_NAME and n_NAME site of the corpus (nm gives
// the addresses) and its USDT sites but the semaphore-gated one, with the
// file offsets the kernel wants, sorted by name; and each point's address.
func uprobeCorpusPoints(t *testing.T, b *uprobe.Binary, bin string, least int) ([]guest.UprobePoint, []uint64) {
	t.Helper()
	out, err := exec.Command("nm", bin).Output()
	if err != nil {
		t.Fatalf("nm %s: %v", bin, err)
	}
	type pt struct {
		p    guest.UprobePoint
		addr uint64
	}
	var all []pt
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			continue
		}
		if n, ok := strings.CutPrefix(f[2], "s_"); ok {
			all = append(all, pt{guest.UprobePoint{Name: f[2], Arg: n}, a})
		}
		if _, ok := strings.CutPrefix(f[2], "n_"); ok {
			all = append(all, pt{guest.UprobePoint{Name: f[2], NoRun: true}, a})
		}
	}
	usdt, err := b.USDT()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range usdt {
		if u.Name != "gated" {
			all = append(all, pt{guest.UprobePoint{Name: "usdt:" + u.Provider + ":" + u.Name, Arg: "u_" + u.Name}, uint64(u.Addr)})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].p.Name < all[j].p.Name })
	run := "" // a function for the never-run points' processes to name
	for _, x := range all {
		if !x.p.NoRun && run == "" {
			run = x.p.Arg
		}
	}
	for i := range all {
		if all[i].p.NoRun {
			all[i].p.Arg = run
		}
	}
	if len(all) < least {
		t.Fatalf("the corpus has %d sites, want >= %d", len(all), least)
	}
	var pts []guest.UprobePoint
	var addrs []uint64
	for _, x := range all {
		fo, err := b.ExecOffset(x.addr)
		if err != nil {
			t.Fatal(err)
		}
		x.p.Offset = fo
		pts = append(pts, x.p)
		addrs = append(addrs, x.addr)
	}
	return pts, addrs
}
