package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
)

// arm64OracleFixture is Debian's arm64 kernel package, its kallsyms (from a
// nokaslr boot), the kernel's recorded kprobe decisions for 300 functions and
// the kernel log of a boot on the same QEMU machine.
type arm64OracleFixture struct {
	deb, kallsyms string
	rep           *guest.ARM64Report
	dmesg         []byte
}

// arm64OracleVersion returns the fixture of Debian's arm64 package of a
// kernel version ("6.12", "7.2"; "" is linux-image-arm64's own, 6.1).
func arm64OracleVersion(t *testing.T, version string) arm64OracleFixture {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's arm64 kernel; boots it under QEMU when the records are not cached)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	var deb, ks string
	var err error
	if version == "" {
		if deb, err = kimage.FetchDebianKernel(ctx, "linux-image-arm64"); err == nil {
			ks, err = vm.DebianKallsyms(ctx, "linux-image-arm64")
		}
	} else if deb, err = kimage.FetchDebianKernelVersion(ctx, "linux-image-arm64", version); err == nil {
		ks, err = vm.DebKallsyms(ctx, deb, vm.Config{})
	}
	if err != nil {
		t.Fatal(err)
	}
	// The same run as vm's TestOracleVerifyARM64 (300 functions, seed 1): the
	// kernel's record is cached under $KBOOST_CACHE/verify.
	vc := vm.ARM64VerifyConfig{Deb: deb, Args: guest.ARM64VerifyArgs{Sample: 300, Seed: 1, Policy: "none"}}
	if cpu := os.Getenv("KBOOST_ARM64_CPU"); cpu != "" {
		vc.VM.QEMUArgs = []string{"-cpu", cpu} // as vm's TestOracleVerifyARM64
	}
	v, err := vm.VerifyARM64(ctx, vc)
	if err != nil {
		t.Fatal(err)
	}
	if v.Cached != "" {
		t.Logf("kernel records: %s", v.Cached)
	}
	dmesg, err := arm64BootLog(ctx, t, deb, vc.VM.QEMUArgs)
	if err != nil {
		t.Fatal(err)
	}
	return arm64OracleFixture{deb: deb, kallsyms: ks, rep: &v.Report, dmesg: dmesg}
}

// arm64BootLog is the kernel log (dmesg) of deb's kernel booted on the QEMU
// machine of the verification record (vm.ARM64's machine plus qemuArgs),
// cached under $KBOOST_CACHE/verify beside the record.
func arm64BootLog(ctx context.Context, t *testing.T, deb string, qemuArgs []string) ([]byte, error) {
	machine := strings.Join(append(append([]string{}, vm.ARM64.Machine...), qemuArgs...), " ")
	h := sha256.Sum256([]byte(filepath.Base(deb) + "\n" + machine))
	cache := filepath.Join(vm.CacheDir(), "verify", fmt.Sprintf("%s-dmesg-%s.txt", strings.TrimSuffix(filepath.Base(deb), ".deb"), hex.EncodeToString(h[:8])))
	if b, err := os.ReadFile(cache); err == nil && len(b) > 0 {
		t.Logf("boot log: %s", cache)
		return b, nil
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	cfg := vm.Config{Arch: vm.ARM64, Kernel: filepath.Join(dir, "Image"), QEMUArgs: qemuArgs, MemoryMB: 1024, Timeout: 10 * time.Minute}
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return nil, err
	}
	res, err := vm.Run(ctx, cfg, guest.Step{Name: "dmesg"})
	if err != nil {
		return nil, fmt.Errorf("booting %s for its kernel log: %w", filepath.Base(deb), err)
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	b := res.Files["dmesg.txt"]
	if !bytes.Contains(b, []byte("alternatives")) {
		return nil, fmt.Errorf("the boot log of %s does not mention alternatives:\n%s", filepath.Base(deb), b)
	}
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cache, b, 0o644); err != nil {
		return nil, err
	}
	t.Logf("boot log: booted %s, kept in %s", filepath.Base(deb), cache)
	return b, nil
}

// bootLogCaps reads the cpucaps a kernel reports at boot ("CPU features:
// detected: DESC") and numbers them the way the kernel itself does: the
// Image's capability descriptors (struct arm64_cpu_capabilities in
// arm64_features[] and arm64_errata[]) hold a pointer to DESC, relocated
// through .rela.dyn (R_AARCH64_RELATIVE, addend = DESC's address; in place
// with 7.2's RELR), and the
// u16 capability 8 bytes after it. Descriptions with no such descriptor are
// returned in unmapped. stext is _stext in kallsyms of a nokaslr boot.
func bootLogCaps(img []byte, stext uint64, dmesg []byte) (caps map[uint16]string, unmapped []string, err error) {
	info, err := kimage.ParseARM64Image(img)
	if err != nil {
		return nil, nil, err
	}
	base := stext - info.StextOff // Image byte 0 is _text
	const marker = "CPU features: detected: "
	var descs []string
	for _, line := range strings.Split(string(dmesg), "\n") {
		if i := strings.Index(line, marker); i >= 0 {
			descs = append(descs, strings.TrimSpace(line[i+len(marker):]))
		}
	}
	// Image offsets of each description (NUL-terminated, possibly the tail
	// of a longer string after the linker merged them).
	want := map[uint64]int{} // Image offset -> desc index
	for i, d := range descs {
		pat := append([]byte(d), 0)
		for o := 0; ; {
			k := bytes.Index(img[o:], pat)
			if k < 0 {
				break
			}
			want[uint64(o+k)] = i
			o += k + 1
		}
	}
	caps = map[uint16]string{}
	found := make([]bool, len(descs))
	type rela struct{ off, addend uint64 }
	var relas []rela
	for o := 0; o+24 <= len(img); o += 8 {
		if binary.LittleEndian.Uint64(img[o+8:]) != 1027 || img[o+7] != 0xff || img[o+6] != 0xff {
			continue
		}
		relas = append(relas, rela{binary.LittleEndian.Uint64(img[o:]), binary.LittleEndian.Uint64(img[o+16:])})
	}
	if len(relas) < 1000 {
		// A RELR kernel (7.2): the Image holds each pointer's link-time
		// value in place; every aligned word is a candidate.
		relas = relas[:0]
		for o := 0; o+8 <= len(img); o += 8 {
			if v := binary.LittleEndian.Uint64(img[o:]); v >= base && v-base < uint64(len(img)) {
				if _, ok := want[v-base]; ok {
					relas = append(relas, rela{base + uint64(o), v})
				}
			}
		}
	}
	for _, r := range relas {
		if r.addend < base {
			continue
		}
		i, ok := want[r.addend-base]
		if !ok {
			continue
		}
		o := r.off - base + 8
		if o+2 > uint64(len(img)) {
			continue
		}
		caps[binary.LittleEndian.Uint16(img[o:])] = descs[i]
		found[i] = true
	}
	for i, d := range descs {
		if !found[i] {
			unmapped = append(unmapped, d)
		}
	}
	return caps, unmapped, nil
}

// TestOracleAuditARM64Tables checks the tables kimage locates in the Debian
// arm64 Image against the running kernel: the kprobe blacklist against
// /sys/kernel/debug/kprobes/blacklist, notrace against
// available_filter_functions, and that every table was found.
func TestOracleAuditARM64Tables(t *testing.T) { testARM64Tables(t, "") }

// TestOracleAuditARM64TablesVersions is TestOracleAuditARM64Tables for
// Debian's 6.12 arm64 package. (7.2's five entry.S NOKPROBE functions,
// relocated through its short .rela.dyn, are read since; 7.2 joins this
// list once its verification record is in .ci's cache:
// TestOracleARM64AsmNokprobe checks them against the source meanwhile.)
func TestOracleAuditARM64TablesVersions(t *testing.T) {
	for _, v := range []string{"6.12"} {
		t.Run(v, func(t *testing.T) { testARM64Tables(t, v) })
	}
}

func testARM64Tables(t *testing.T, version string) {
	fx := arm64OracleVersion(t, version)
	f, err := openImage(fx.deb, fx.kallsyms)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tabs, err := kimage.KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range tabs.All() {
		t.Log(x.String())
		if !x.Known() {
			t.Errorf("table missing: %s", x)
		}
	}
	pol, _, err := pickFilePolicy("", f)
	if err != nil {
		t.Fatal(err)
	}
	env, notes := audit.Env(f, pol, nil)
	for _, n := range notes {
		t.Log("note:", n)
	}
	// An alias: another function symbol at the same address (the kernel
	// lists one name per ftrace record).
	want := map[uint64]int{}
	for _, fn := range fx.rep.Funcs {
		want[fn.Addr] = 0
	}
	for s := range f.Symbols.All() {
		if n, ok := want[s.Addr]; ok && s.Func {
			want[s.Addr] = n + 1
		}
	}
	alias := func(fn guest.KernelFunc) bool { return want[fn.Addr] > 1 }
	checkLiveBlacklist(t, env, fx.rep, alias)
}

// a64Tally counts per-field agreement between predictions and the kernel.
type a64Tally struct {
	agree, disagree map[string]int
	probes, all     int
	lines           []string
	// fields and cmp compare a record (guest.ARM64Fields, CompareARM64);
	// optimization predicts [OPTIMIZED] (the arch has optprobes).
	fields       []string
	cmp          func(r *guest.VerifyRecord) map[string]bool
	optimization bool
	format       func(r *guest.VerifyRecord) string
}

func newA64Tally() *a64Tally {
	return &a64Tally{agree: map[string]int{}, disagree: map[string]int{},
		fields: guest.ARM64Fields, cmp: guest.CompareARM64, format: vm.FormatARM64Record}
}

// compare predicts every record of the function a audited and counts.
func (ty *a64Tally) compare(a *boost.FuncAudit, recs []*guest.VerifyRecord) error {
	for _, r := range recs {
		if r.Round < 0 {
			continue
		}
		d, err := a.At(r.Off)
		if err != nil {
			return err
		}
		p := guest.Outcome{}
		if d.Verdict == boost.Reject {
			p.Errno = d.Errno.String()
		} else {
			p.Addr = d.Addr
			p.Ftrace = d.Verdict == boost.Ftrace
			p.Optimized = ty.optimization && !p.Ftrace && d.Optimizable
			if sb := d.SlotBytes(); len(sb) > 0 {
				p.Slot = hex.EncodeToString(sb)
			}
		}
		rr := *r
		rr.Predicted = p
		rr.Verdict, rr.Rules = d.Verdict.String(), d.ReasonIDs()
		ok := true
		for field, same := range ty.cmp(&rr) {
			if same {
				ty.agree[field]++
			} else {
				ty.disagree[field]++
				ok = false
			}
		}
		ty.probes++
		if ok {
			ty.all++
		} else {
			img := ""
			if r.Boundary && r.Off+4 <= uint64(len(a.Func.Bytes)) {
				img = hex.EncodeToString(a.Func.Bytes[r.Off : r.Off+4])
			}
			ty.lines = append(ty.lines, fmt.Sprintf("DISAGREE %s audited=%s", ty.format(&rr), img))
		}
	}
	return nil
}

func (ty *a64Tally) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d probes, all fields agree on %d\n", ty.probes, ty.all)
	for _, field := range ty.fields {
		fmt.Fprintf(&b, "  %-7s compared %6d agree %6d disagree %d\n", field, ty.agree[field]+ty.disagree[field], ty.agree[field], ty.disagree[field])
	}
	return b.String()
}

// TestOracleAuditARM64 audits Debian's arm64 kernel offline, as `kboost audit
// linux-image-*-arm64.deb --symbols kallsyms --policy linux-6.1-arm64
// --cpu-caps CAPS` does (site tables located in the Image, ftrace entry NOPs
// patched as at boot, CPU alternatives applied for CAPS), and compares every
// decision with what the booted kernel did at that probe (accept or errno,
// [FTRACE], probed address, slot contents), and the audited bytes with the
// booted ones (read from /proc/kcore by the recorder).
//
// CAPS are the cpucaps the booted kernel reported in its log ("CPU features:
// detected: ..."), numbered through the Image's own capability descriptors
// (bootLogCaps), not typed in. A second comparison audits the booted bytes
// with the tables kboost found in the Image.
func TestOracleAuditARM64(t *testing.T) { testOfflineARM64(t, "") }

// TestOracleAuditARM64Versions is TestOracleAuditARM64 for Debian's 6.12 and
// 7.2 arm64 packages, each under the policy its version picks: the ftrace
// records located in the Image (6.12 and 7.2 build with
// DYNAMIC_FTRACE_WITH_CALL_OPS, whose __mcount_loc names the two NOPs before
// each function), the ftrace_ops literal ftrace_init_nop writes there, the
// jump-label and BUG tables, and the cpucaps of the boot log.
func TestOracleAuditARM64Versions(t *testing.T) {
	for _, v := range []string{"6.12", "7.2"} {
		t.Run(v, func(t *testing.T) { testOfflineARM64(t, v) })
	}
}

func testOfflineARM64(t *testing.T, version string) {
	fx := arm64OracleVersion(t, version)
	rep := fx.rep
	f, err := openImage(fx.deb, fx.kallsyms)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pol, polNote, err := pickFilePolicy("", f)
	if err != nil {
		t.Fatal(err)
	}
	if want := "linux-" + cmp.Or(version, "6.1") + "-arm64"; pol.Name != want {
		t.Fatalf("%s: policy %s picked (%s), want %s", fx.deb, pol.Name, polNote, want)
	}
	var names []string
	for _, fn := range rep.Funcs {
		names = append(names, fn.Name)
	}
	reqs, err := audit.Select(f, names)
	if err != nil {
		t.Fatal(err)
	}
	env, notes := audit.Env(f, pol, nil)
	for _, n := range notes {
		t.Log("note:", n)
	}
	byFunc := map[string][]*guest.VerifyRecord{}
	for i := range rep.Records {
		r := &rep.Records[i]
		byFunc[r.Func] = append(byFunc[r.Func], r)
	}
	kfn := map[string]guest.KernelFunc{}
	for _, fn := range rep.Funcs {
		kfn[fn.Name] = fn
	}

	// The booted CPU's capabilities, from its own boot log.
	dk, err := kimage.ReadDeb(fx.deb)
	if err != nil {
		t.Fatal(err)
	}
	stext, ok := f.Symbols.ByName("_stext")
	if !ok {
		t.Fatal("no _stext in kallsyms")
	}
	bootCaps, unmapped, err := bootLogCaps(dk.Vmlinuz, stext.Addr, fx.dmesg)
	if err != nil {
		t.Fatal(err)
	}
	if len(bootCaps) == 0 {
		t.Fatalf("the boot log reports no CPU feature the Image describes:\n%s", fx.dmesg)
	}
	tab, err := kimage.ARM64Alternatives(f)
	if err != nil {
		t.Fatal(err)
	}
	var capNames []string
	for c, desc := range bootCaps {
		n := tab.Caps.Name(kimage.A64Cap(c))
		capNames = append(capNames, n)
		t.Logf("boot log: detected %q = cpucap %d %s", desc, c, n)
	}
	for _, d := range unmapped {
		t.Logf("boot log: detected %q: no capability descriptor in the Image points at it (not an alternatives cpucap)", d)
	}
	sort.Strings(capNames)

	patch, err := kimage.NewFtraceInitPatcher(f)
	if err != nil {
		t.Fatal(err)
	}
	note, err := audit.SetCPUCaps(patch, f, strings.Join(capNames, ","))
	if err != nil {
		t.Fatal(err)
	}
	t.Log("note:", note)
	var mu sync.Mutex
	ty := newA64Tally()
	var differ, keyFlips, unlogged []string
	marked, sites := 0, 0
	st, _ := env.Sites.(*boost.StaticSites)
	if st == nil || st.JumpLabels == nil {
		t.Fatal("the Image's jump-label table was not found")
	}
	jumpLabels := st.JumpLabels
	newHandler := func() audit.Handler {
		return func(res *audit.Result) ([]byte, error) {
			a, kb, err := recordedFunc(res, kfn)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			if ab := a.Func.Bytes[:a.Func.Size]; !bytes.Equal(kb, ab) {
				for o := 0; o+4 <= len(kb); o += 4 {
					if bytes.Equal(kb[o:o+4], ab[o:o+4]) {
						continue
					}
					// A jump-label word is the state of its static key,
					// which code run at boot may have enabled: no image
					// says that. The kernel refuses probes there whatever
					// the word (the errno comparison checks it).
					at := a.Func.Addr + uint64(o)
					if hit, _ := jumpLabels.Contains(at); hit && isA64NopOrB(ab[o:o+4]) && isA64NopOrB(kb[o:o+4]) {
						keyFlips = append(keyFlips, fmt.Sprintf("%s+%#x: audited %x, booted %x", a.Func.Name, o, ab[o:o+4], kb[o:o+4]))
						continue
					}
					// A word of an alternative site whose cpucap the boot
					// log does not name (a cap detected without a
					// "detected:" line): the log is all kboost is given.
					if c, ok := unloggedCap(tab, bootCaps, at); ok {
						unlogged = append(unlogged, fmt.Sprintf("%s+%#x: audited %x, booted %x (cpucap %s)", a.Func.Name, o, ab[o:o+4], kb[o:o+4], tab.Caps.Name(c)))
						continue
					}
					differ = append(differ, fmt.Sprintf("%s+%#x: audited %x, booted %x", a.Func.Name, o, ab[o:o+4], kb[o:o+4]))
					break
				}
			}
			// Every boundary inside an alternative site names its cpucap first.
			for _, s := range tab.Sites(a.Func.Addr, a.Func.Size) {
				sites++
				for _, e := range a.Entries {
					at := a.Func.Addr + e.Off
					if at < s.Orig || at >= s.Orig+uint64(s.OrigLen) {
						continue
					}
					want := "arm64 alternative: cpucap " + tab.Caps.Name(s.Cap)
					if rs := e.Decision.Reasons; len(rs) == 0 || rs[0].Rule != audit.RuleA64Alternative || !strings.HasPrefix(rs[0].Text, want) {
						return nil, fmt.Errorf("%s+%#x: inside the alternative site of %s, reasons %v lack %q", a.Func.Name, e.Off, tab.Caps.Name(s.Cap), e.Decision.Reasons, want)
					}
					marked++
				}
			}
			return nil, ty.compare(a, byFunc[a.Func.Name])
		}
	}
	if err := audit.Run(f, pol, env, reqs, patch, 0, newHandler, func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(differ)
	t.Logf("offline audit of the Image with cpucaps %s vs kernel %s: %d functions, %d with bytes unlike the booted ones; %d alternative sites, %d boundaries marked\n%s",
		strings.Join(capNames, ","), rep.Release, len(reqs), len(differ), sites, marked, ty.table())
	for _, d := range differ {
		t.Error("bytes differ:", d)
	}
	for _, d := range unlogged {
		t.Log("alternative of a cpucap the boot log does not name:", d)
	}
	for _, d := range keyFlips {
		t.Log("jump-label site enabled at run time (not in the Image):", d)
	}
	for i, l := range ty.lines {
		if i < 50 {
			t.Error(l)
		}
	}
	if len(reqs) < 300 || ty.probes < 10000 || ty.all != ty.probes {
		t.Errorf("%d functions, %d probes compared, %d agree on every field", len(reqs), ty.probes, ty.all)
	}
	if sites == 0 || marked == 0 {
		t.Errorf("no alternative site met in %d functions", len(reqs))
	}

	// The same Image with no optional cpucaps ("--cpu-caps none"): the
	// functions the booted CPU's alternatives rewrote differ from the booted
	// bytes, so the caps above did the work.
	plain, err := kimage.NewFtraceInitPatcher(f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := audit.SetCPUCaps(plain, f, "none"); err != nil {
		t.Fatal(err)
	}
	var byCaps []string
	for _, req := range reqs {
		b, err := f.ReadAt(req.Sym.Addr, int(req.Sym.Size))
		if err != nil {
			t.Fatal(err)
		}
		b = append([]byte(nil), b...)
		plain.Patch(req.Sym.Addr, b)
		if kb, _ := hex.DecodeString(kfn[req.Sym.Name].Bytes); !bytes.Equal(kb, b) {
			byCaps = append(byCaps, req.Sym.Name)
		}
	}
	sort.Strings(byCaps)
	t.Logf("with --cpu-caps none, %d functions differ from the booted bytes: %s", len(byCaps), strings.Join(byCaps, " "))
	if len(byCaps) == 0 {
		t.Error("no function depends on the booted CPU's cpucaps: the comparison above proves nothing about alternatives")
	}

	// The booted bytes with the Image's tables: every probe.
	booted := newA64Tally()
	au := pol.NewAuditor(env)
	for _, req := range reqs {
		kf := kfn[req.Sym.Name]
		kb, _ := hex.DecodeString(kf.Bytes)
		a, err := au.Audit(boost.Func{Name: kf.Name, Addr: kf.Addr, Size: kf.Size, Bytes: kb})
		if err != nil {
			t.Fatal(err)
		}
		if err := booted.compare(a, byFunc[kf.Name]); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("booted bytes (kcore) audited with the tables found in the Image: %s", booted.table())
	for i, l := range booted.lines {
		if i < 50 {
			t.Error(l)
		}
	}
}

// isA64NopOrB reports whether w (4 bytes, little-endian) is NOP or B imm26:
// the two forms of an arm64 jump-label site.
func isA64NopOrB(w []byte) bool {
	v := binary.LittleEndian.Uint32(w)
	return v == 0xd503201f || v&0xfc000000 == 0x14000000
}

// checkLiveBlacklist compares the blacklist and ftrace state of env with
// the booted kernel's (the record's kprobes/blacklist and
// available_filter_functions): every range the kernel lists is one kboost
// computes (kboost's are the NOKPROBE_SYMBOL functions and the areas widened
// to whole functions; the kernel lists the areas function by function), and
// every kboost blacklist address of a recorded function is in the kernel's
// list. A function kboost finds traced that available_filter_functions does
// not list by its name is logged, not an error, when alias says it may be
// listed under another name (32-bit ARM's kallsyms names aliases such as
// __se_sys_msgget the filter list has under the other name; 6.12's weak
// cpu_show_* fallbacks are aliases of cpu_show_not_affected).
func checkLiveBlacklist(t *testing.T, env *boost.Env, rep *guest.ARM64Report, alias func(fn guest.KernelFunc) bool) {
	t.Helper()
	live := loader.ParseBlacklist([]byte(rep.Blacklist))
	if len(live) < 100 {
		t.Fatalf("the record's blacklist has %d entries", len(live))
	}
	bad := 0
	for _, e := range live {
		if e.Start >= e.End {
			continue
		}
		for a := e.Start; a < e.End; a += 4 {
			if _, hit, known := env.Sites.Blacklisted(a); !known || !hit {
				if bad++; bad <= 10 {
					t.Errorf("kernel blacklists %#x (%s %#x-%#x), kboost does not", a, e.Symbol, e.Start, e.End)
				}
				break
			}
		}
	}
	// And nothing else: every kboost blacklist address of a recorded
	// function is in the kernel's list.
	inLive := func(a uint64) bool {
		for _, e := range live {
			if a >= e.Start && a < e.End {
				return true
			}
		}
		return false
	}
	for _, fn := range rep.Funcs {
		for a := fn.Addr; a < fn.Addr+fn.Size; a += 4 {
			if _, hit, _ := env.Sites.Blacklisted(a); hit != inLive(a) {
				t.Errorf("%s+%#x: kboost blacklisted=%v, kernel %v", fn.Name, a-fn.Addr, hit, !hit)
				break
			}
		}
		traced, known := env.Sites.Ftrace(boost.Span{Start: fn.Addr, End: fn.Addr + fn.Size})
		if known && traced && !fn.Traced && alias(fn) {
			t.Logf("%s: an ftrace location in kboost's table, not listed under this name in available_filter_functions (an alias: the kernel lists one name per address)", fn.Name)
			continue
		}
		if !known || traced != fn.Traced {
			t.Errorf("%s: ftrace location in kboost's table %v (known %v), in available_filter_functions %v", fn.Name, traced, known, fn.Traced)
		}
	}
	t.Logf("blacklist: %d kernel entries checked, %d functions' blacklist and ftrace state compared", len(live), len(rep.Funcs))
}

// recordedFunc is the audit of a result and the bytes the kernel's record
// has for its function, which must be the kernel's (same address and size).
func recordedFunc(res *audit.Result, kfn map[string]guest.KernelFunc) (*boost.FuncAudit, []byte, error) {
	if res.Err != nil {
		return nil, nil, fmt.Errorf("%s: %w", res.Req.Symbol, res.Err)
	}
	a := res.Audit
	kf := kfn[a.Func.Name]
	if kf.Addr != a.Func.Addr || kf.Size != a.Func.Size {
		return nil, nil, fmt.Errorf("%s: kboost %#x size %#x, kernel %#x size %#x", a.Func.Name, a.Func.Addr, a.Func.Size, kf.Addr, kf.Size)
	}
	kb, err := hex.DecodeString(kf.Bytes)
	return a, kb, err
}

// unloggedCap reports the cpucap of an alternative site holding at whose cap
// is not among the boot log's.
func unloggedCap(tab *kimage.A64Alternatives, logged map[uint16]string, at uint64) (kimage.A64Cap, bool) {
	for _, s := range tab.Sites(at, 4) {
		if at >= s.Orig && at < s.Orig+uint64(s.OrigLen) {
			if _, ok := logged[uint16(s.Cap)]; !ok {
				return s.Cap, true
			}
		}
	}
	return 0, false
}
