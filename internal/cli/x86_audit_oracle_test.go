package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
)

// x86VerifyRecords is the booted kernel's record of `vm verify` for deb (300
// functions, seed 1, every boundary: as vm's TestOracleVerifyDebian), from
// vm.Verify's record cache when that run (or an earlier one) made it, else
// booted under QEMU. The log says which, and what it cost.
func x86VerifyRecords(ctx context.Context, t *testing.T, deb string) *guest.VerifyReport {
	t.Helper()
	start := time.Now()
	v, err := vm.Verify(ctx, vm.VerifyConfig{Deb: deb, Args: guest.VerifyArgs{Sample: 300, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Cached != "" {
		t.Logf("kernel records: cached %s (%v)", v.Cached, time.Since(start).Round(time.Millisecond))
	} else {
		t.Logf("kernel records: booted %s (%v)", filepath.Base(deb), time.Since(start).Round(time.Second))
	}
	return &v.Report
}

// x86BootCases are the Debian amd64 kernels TestOracleAuditX86Boot audits:
// the current linux-image-amd64 (6.1) and the newest package of 6.12 and
// 7.2. msrWrite is the function pv_ops.cpu.write_msr starts as (paravirt.c).
var x86BootCases = []struct {
	version   string // "" the meta package's current kernel
	release   string // the booted release's prefix
	minProbes int
	msrWrite  string
}{
	{"", "6.1.", 10000, "native_write_msr"},
	{"6.12", "6.12.", 8000, "native_write_msr"},
	{"7.2", "7.2.", 7500, "native_write_msr"},
}

// TestOracleAuditX86Boot audits Debian's amd64 packages (6.1, 6.12, 7.2)
// offline with the text patching each kernel does at boot on the machine
// `vm verify` boots (QEMU TCG, qemu64, one CPU: kimage.X86Boot with the
// ftrace records, the paravirt sites (6.1: .parainstructions; 6.12 and
// later: direct-call alternatives), the alternatives of X86_FEATURE_ALWAYS
// and no Xen, the LOCK prefixes patched to UP, the sealed ENDBRs; return
// thunks patched to ret, the CPU needing no retbleed mitigation) and compares
// each decision with what the booted kernel did at that probe: errno, probed
// address, [FTRACE], [OPTIMIZED], the slot and the detour buffer (the
// optprobe template taken from the same patched file). The boundaries' bytes
// are compared with the booted ones (kcore) too, except in init and exit
// text, which the recorder reads from the vmlinux. Every field must agree on
// every probe; the file's own bytes (return thunks only) must not.
func TestOracleAuditX86Boot(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's 6.1, 6.12 and 7.2 amd64 kernels; boots them under QEMU when the records are not cached)")
	}
	for _, tc := range x86BootCases {
		t.Run(cmpOr(tc.version, "6.1"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
			defer cancel()
			var deb string
			var err error
			if tc.version == "" {
				deb, err = kimage.FetchDebianKernel(ctx, "linux-image-amd64")
			} else {
				deb, err = kimage.FetchDebianKernelVersion(ctx, "linux-image-amd64", tc.version)
			}
			if err != nil {
				t.Fatal(err)
			}
			ks, err := vm.DebKallsyms(ctx, deb, vm.Config{Arch: vm.AMD64})
			if err != nil {
				t.Fatal(err)
			}
			rep := x86VerifyRecords(ctx, t, deb)
			if !strings.HasPrefix(rep.Release, tc.release) {
				t.Fatalf("booted release %q, want %s*", rep.Release, tc.release)
			}
			auditX86Boot(t, deb, ks, rep, tc.minProbes, tc.msrWrite)
		})
	}
}

// x86Agreement counts, field by field, how the offline predictions agree
// with a booted kernel's records.
type x86Agreement struct {
	agree, disagree map[string]int
	probes, all     int
	lines           []string
}

func auditX86Boot(t *testing.T, deb, ks string, rep *guest.VerifyReport, minProbes int, msrWrite string) {
	f, err := openImage(deb, ks)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pol, polNote, err := pickFilePolicy("", f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("policy %s (%s), kernel %s", pol.Name, polNote, rep.Release)
	pred, err := loader.NewPredictor(f, nil, pol.Name)
	if err != nil {
		t.Fatal(err)
	}
	xb, err := kimage.ReadX86Boot(f)
	if err != nil {
		t.Fatal(err)
	}
	rp, err := kimage.NewReturnPatcher(f)
	if err != nil {
		t.Fatal(err)
	}
	cpu := kimage.QEMU64()
	t.Logf("boot patching: %s, %d ftrace records, %d LOCK prefixes; machine %s", xb.From, len(xb.Fentry), len(xb.SMPLocks), cpu)
	if xb.Partial != "" {
		t.Errorf("boot patching incomplete: %s", xb.Partial)
	}
	booted := func(addr uint64, n int) ([]byte, error) {
		b, err := f.ReadAt(addr, n)
		if err != nil {
			return nil, err
		}
		b = append([]byte(nil), b...)
		xb.Apply(addr, b, &cpu)
		rp.Patch(addr, b)
		return b, nil
	}
	// The control: the file's bytes with only the return thunks patched
	// (today's `kboost audit --returns ret`).
	plain := func(addr uint64, n int) ([]byte, error) {
		b, err := f.ReadAt(addr, n)
		if err != nil {
			return nil, err
		}
		b = append([]byte(nil), b...)
		rp.Patch(addr, b)
		return b, nil
	}
	tmpl, err := x86OptTemplate(f, booted)
	if err != nil {
		t.Fatal(err)
	}
	tabs, err := kimage.KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	if !tabs.StaticCall.Known() {
		t.Fatalf("no static-call table: %s", tabs.StaticCall.String())
	}
	// retargeted: a site (5 bytes at most) the kernel rewrites at boot
	// without kboost modelling it covers addr.
	retargeted := func(name string, addr uint64) bool {
		return strings.HasPrefix(name, "__SCT__") || tabs.StaticCall.Addrs.Any(addr-4, addr+1) || tabs.JumpLabel.Addrs.Any(addr-4, addr+1)
	}
	byFunc := map[string][]*guest.VerifyRecord{}
	var names []string
	for i := range rep.Records {
		r := &rep.Records[i]
		if r.Round < 0 {
			continue
		}
		if byFunc[r.Func] == nil {
			names = append(names, r.Func)
		}
		byFunc[r.Func] = append(byFunc[r.Func], r)
	}
	sort.Strings(names)
	var bytesDiffer []string
	compare := func(read func(uint64, int) ([]byte, error), checkBytes bool) *x86Agreement {
		a := &x86Agreement{agree: map[string]int{}, disagree: map[string]int{}}
		for _, name := range names {
			s, ok := f.Symbols.ByName(name)
			if !ok {
				t.Fatalf("%s: not in kallsyms", name)
			}
			code, err := read(s.Addr, int(s.Size))
			if err != nil {
				t.Fatal(err)
			}
			fa, err := pred.Audit(s, code)
			if err != nil {
				t.Fatal(err)
			}
			sec, _ := f.SectionAt(s.Addr)
			// Init and exit text: the recorder reads the vmlinux's bytes.
			// Data the sample picked (7.2's kallsyms types static-call keys,
			// dynamic-debug and syscall metadata t/T, and its .data is
			// linked WAX): the kernel writes it as it runs.
			fileBytes := sec.Name == ".init.text" || sec.Name == ".exit.text" || !sec.Exec || sec.Write
			for _, r := range byFunc[name] {
				if kb, _ := hex.DecodeString(r.Bytes); checkBytes && r.Boundary && !fileBytes && (int(r.Off)+len(kb) > len(code) || hex.EncodeToString(code[r.Off:int(r.Off)+len(kb)]) != r.Bytes) {
					// Static calls and jump labels are not modelled
					// (static_call_init, sched_dynamic_update and the LSM
					// hooks retarget the call sites and the __SCT__
					// trampolines; static keys enabled at boot turn NOPs
					// into jumps): the kernel refuses probes there whatever
					// the bytes.
					l := fmt.Sprintf("%s+%#x: booted %s, offline %x", name, r.Off, r.Bytes, code[r.Off:min(len(code), int(r.Off)+len(kb))])
					if !retargeted(name, s.Addr+r.Off) {
						t.Error("bytes differ outside a static-call or jump-label site:", l)
					}
					bytesDiffer = append(bytesDiffer, l)
				}
				d, err := fa.At(r.Off)
				if err != nil {
					t.Fatal(err)
				}
				p := guest.Outcome{}
				if d.Verdict == boost.Reject {
					p.Errno = cmpOr(d.Errno.String(), "EINVAL")
				} else {
					p.Addr = d.Addr
					p.Ftrace = d.Verdict == boost.Ftrace
					p.Optimized = rep.Optimization && !p.Ftrace && d.Optimizable
					at := d.Addr - s.Addr
					if r.Kernel.Slot != "" && d.Len > 0 && at+uint64(d.Len) <= uint64(len(code)) {
						p.Slot = hex.EncodeToString(pred.SlotImage(&d, code[at:at+uint64(d.Len)], r.Kernel.SlotAddr))
					}
					if p.Optimized && r.Kernel.OptAddr != 0 && at+uint64(d.OptLen) <= uint64(len(code)) {
						img, known, err := pred.DetourImage(tmpl, d.Addr, code[at:at+uint64(d.OptLen)], r.Kernel.OptAddr)
						if err != nil {
							t.Fatal(err)
						}
						p.OptSlot = strings.ReplaceAll(loader.MaskedHex(img, known), " ", "")
					}
				}
				rr := *r
				rr.Predicted = p
				rr.Verdict = d.Verdict.String()
				ok := true
				for field, same := range rr.Compare() {
					if field == "jmpback" {
						continue // boosting: compiled out of Debian's amd64 kernels
					}
					if same {
						a.agree[field]++
					} else {
						a.disagree[field]++
						ok = false
					}
				}
				a.probes++
				if ok {
					a.all++
				} else {
					a.lines = append(a.lines, fmt.Sprintf("%s+%#x %s: offline %+v (%s), kernel %+v", name, r.Off, r.Bytes, p, strings.Join(d.ReasonIDs(), ","), r.Kernel))
				}
			}
		}
		return a
	}
	a := compare(booted, true)
	var b strings.Builder
	fmt.Fprintf(&b, "offline audit of %s vs the booted kernel: %d functions, %d probes, all fields agree on %d\n", filepath.Base(deb), len(names), a.probes, a.all)
	for _, field := range guest.VerifyFields {
		if field == "jmpback" {
			continue
		}
		fmt.Fprintf(&b, "  %-9s compared %6d agree %6d disagree %d\n", field, a.agree[field]+a.disagree[field], a.agree[field], a.disagree[field])
	}
	fmt.Fprintf(&b, "  boundaries whose bytes are unlike kcore's: %d, all in static-call or jump-label sites", len(bytesDiffer))
	t.Log(b.String())
	for i, l := range a.lines {
		if i < 40 {
			t.Error("DISAGREE", l)
		}
	}
	for _, l := range bytesDiffer {
		t.Log("static-call or jump-label site rewritten at boot:", l)
	}
	c := compare(plain, false)
	var cf []string
	for _, field := range guest.VerifyFields {
		if c.disagree[field] > 0 {
			cf = append(cf, fmt.Sprintf("%s %d", field, c.disagree[field]))
		}
	}
	t.Logf("without boot patching (return thunks only), %d of %d probes differ from the kernel (%s)", c.probes-c.all, c.probes, strings.Join(cf, ", "))
	if c.all == c.probes {
		t.Error("the file's own bytes already agree: the comparison says nothing about boot patching")
	}
	// The case: pt_config_buffer's wrmsr, `call *pv_ops+0xc0(%rip)`
	// in the file (EOPNOTSUPP), is a direct call to native_write_msr once
	// booted (pv_ops.cpu.write_msr's initialiser in paravirt.c), which
	// kprobes emulate.
	out, stderr, code := run(t, "audit", deb, "--symbols", ks, "--func", "pt_config_buffer", "--cpu", "qemu64", "--json")
	if code != 0 {
		t.Fatalf("audit --cpu qemu64: exit %d: %s", code, stderr)
	}
	wm, ok := f.Symbols.ByName(msrWrite)
	if !ok {
		t.Fatalf("%s not in kallsyms", msrWrite)
	}
	calls := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Asm, Verdict string
		}
		if json.Unmarshal([]byte(l), &e) == nil && strings.Contains(e.Asm, fmt.Sprintf("%#x", wm.Addr)) {
			calls++
			if e.Verdict == "reject" {
				t.Errorf("pt_config_buffer: %s refused with --cpu qemu64", e.Asm)
			}
		}
	}
	if calls == 0 {
		t.Errorf("pt_config_buffer with --cpu qemu64: no call to %s (%#x):\n%s", msrWrite, wm.Addr, out)
	}
	t.Logf("pt_config_buffer with --cpu qemu64: %d direct calls to %s, none refused", calls, msrWrite)
	if len(names) < 300 || a.probes < minProbes || a.all != a.probes {
		t.Errorf("%d functions, %d probes, %d agree on every field", len(names), a.probes, a.all)
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// x86OptTemplate is the optprobe template (optprobe_template_entry.._end,
// field offsets from their kallsyms symbols) read through read, for a CPU
// without SMAP.
func x86OptTemplate(f *kimage.File, read func(uint64, int) ([]byte, error)) (*loader.OptTemplate, error) {
	addr := map[string]uint64{}
	for _, n := range []string{"optprobe_template_entry", "optprobe_template_clac", "optprobe_template_val", "optprobe_template_call", "optprobe_template_end", "optimized_callback"} {
		s, ok := f.Symbols.ByName(n)
		if !ok {
			return nil, fmt.Errorf("%s not in kallsyms", n)
		}
		addr[n] = s.Addr
	}
	e := addr["optprobe_template_entry"]
	t := &loader.OptTemplate{Entry: e, Clac: int(addr["optprobe_template_clac"] - e), Val: int(addr["optprobe_template_val"] - e),
		Call: int(addr["optprobe_template_call"] - e), Callback: addr["optimized_callback"]}
	b, err := read(e, int(addr["optprobe_template_end"]-e))
	if err != nil {
		return nil, err
	}
	t.Bytes = b
	return t, t.Check()
}
