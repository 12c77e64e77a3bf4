package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/internal/audit"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
)

// arm64OracleFixture is Debian's arm64 kernel package, its kallsyms (from a
// nokaslr boot) and the kernel's recorded kprobe decisions for 300 functions.
type arm64OracleFixture struct {
	deb, kallsyms string
	rep           *guest.ARM64Report
}

func arm64Oracle(t *testing.T) arm64OracleFixture {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's arm64 kernel; boots it under QEMU when the records are not cached)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-arm64")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := vm.DebianKallsyms(ctx, "linux-image-arm64")
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
	return arm64OracleFixture{deb: deb, kallsyms: ks, rep: &v.Report}
}

// TestOracleAuditARM64Tables checks the tables kimage locates in the Debian
// arm64 Image against the running kernel: the kprobe blacklist against
// /sys/kernel/debug/kprobes/blacklist, notrace against
// available_filter_functions, and that every table was found.
func TestOracleAuditARM64Tables(t *testing.T) {
	fx := arm64Oracle(t)
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
	// The blacklist: every range the kernel lists is one kboost computes
	// (kboost's are the NOKPROBE_SYMBOL functions and the areas widened to
	// whole functions; the kernel lists the areas function by function).
	pol, _ := boost.Lookup("linux-6.1-arm64")
	env, notes := audit.Env(f, pol, nil)
	for _, n := range notes {
		t.Log("note:", n)
	}
	live := guest.ParseBlacklist([]byte(fx.rep.Blacklist))
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
	for _, fn := range fx.rep.Funcs {
		for a := fn.Addr; a < fn.Addr+fn.Size; a += 4 {
			if _, hit, _ := env.Sites.Blacklisted(a); hit != inLive(a) {
				t.Errorf("%s+%#x: kboost blacklisted=%v, kernel %v", fn.Name, a-fn.Addr, hit, !hit)
				break
			}
		}
		traced, known := env.Sites.Ftrace(boost.Span{Start: fn.Addr, End: fn.Addr + fn.Size})
		if !known || traced != fn.Traced {
			t.Errorf("%s: ftrace location in kboost's table %v (known %v), in available_filter_functions %v", fn.Name, traced, known, fn.Traced)
		}
	}
	t.Logf("blacklist: %d kernel entries checked, %d functions' blacklist and ftrace state compared", len(live), len(fx.rep.Funcs))
}

// a64Tally counts per-field agreement between predictions and the kernel.
type a64Tally struct {
	agree, disagree map[string]int
	probes, all     int
	lines           []string
}

func newA64Tally() *a64Tally {
	return &a64Tally{agree: map[string]int{}, disagree: map[string]int{}}
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
			if sb := d.SlotBytes(); len(sb) > 0 {
				p.Slot = hex.EncodeToString(sb)
			}
		}
		rr := *r
		rr.Predicted = p
		rr.Verdict, rr.Rules = d.Verdict.String(), d.ReasonIDs()
		ok := true
		for field, same := range guest.CompareARM64(&rr) {
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
			ty.lines = append(ty.lines, fmt.Sprintf("DISAGREE %s audited=%s", vm.FormatARM64Record(&rr), img))
		}
	}
	return nil
}

func (ty *a64Tally) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d probes, all fields agree on %d\n", ty.probes, ty.all)
	for _, field := range guest.ARM64Fields {
		fmt.Fprintf(&b, "  %-7s compared %6d agree %6d disagree %d\n", field, ty.agree[field]+ty.disagree[field], ty.agree[field], ty.disagree[field])
	}
	return b.String()
}

// TestOracleAuditARM64 audits Debian's arm64 kernel offline, as `kboost audit
// linux-image-*-arm64.deb --symbols kallsyms --policy linux-6.1-arm64` does
// (site tables located in the Image, ftrace entry NOPs patched as at boot),
// and compares every decision with what the booted kernel did at that probe
// (accept or errno, [FTRACE], probed address, slot contents).
//
// The Image's bytes are not quite the booted kernel's: CPU-dependent
// alternatives rewrite some instructions at boot (on QEMU's Cortex-A57,
// erratum 832075 turns readl's LDR into LDAR). Two comparisons are strict:
// every probe of a function whose audited bytes equal the booted ones, and
// every probe when the booted bytes (read from /proc/kcore by the recorder)
// are audited with the tables kboost found in the Image. The probes of
// alternative-patched functions, audited from the Image, are reported.
func TestOracleAuditARM64(t *testing.T) {
	fx := arm64Oracle(t)
	rep := fx.rep
	f, err := openImage(fx.deb, fx.kallsyms)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pol, err := pickPolicy("linux-6.1-arm64", f.Arch)
	if err != nil {
		t.Fatal(err)
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
	patch, err := audit.NewFtraceInitPatcher(f)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	same, patched := newA64Tally(), newA64Tally()
	var patchedFuncs []string
	newHandler := func() audit.Handler {
		return func(res *audit.Result) ([]byte, error) {
			if res.Err != nil {
				return nil, fmt.Errorf("%s: %w", res.Req.Symbol, res.Err)
			}
			a := res.Audit
			kf := kfn[a.Func.Name]
			if kf.Addr != a.Func.Addr || kf.Size != a.Func.Size {
				return nil, fmt.Errorf("%s: kboost %#x size %#x, kernel %#x size %#x", a.Func.Name, a.Func.Addr, a.Func.Size, kf.Addr, kf.Size)
			}
			kb, err := hex.DecodeString(kf.Bytes)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			ty := same
			if !bytes.Equal(kb, a.Func.Bytes[:a.Func.Size]) {
				ty = patched
				patchedFuncs = append(patchedFuncs, a.Func.Name)
			}
			return nil, ty.compare(a, byFunc[a.Func.Name])
		}
	}
	if err := audit.Run(f, pol, env, reqs, patch, newHandler, func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(patchedFuncs)
	t.Logf("offline audit of the Image vs kernel %s:\nfunctions whose audited bytes are the booted ones (%d): %sfunctions patched by CPU alternatives at boot (%d: %s): %s",
		rep.Release, len(reqs)-len(patchedFuncs), same.table(), len(patchedFuncs), strings.Join(patchedFuncs, " "), patched.table())
	for i, l := range patched.lines {
		if i < 20 {
			t.Log("alternatives:", l)
		}
	}
	for i, l := range same.lines {
		if i < 50 {
			t.Error(l)
		}
	}
	if len(reqs) < 300 || same.probes+patched.probes < 10000 {
		t.Errorf("only %d functions, %d probes compared", len(reqs), same.probes+patched.probes)
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
