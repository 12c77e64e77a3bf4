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
// functions, seed 1, as vm's TestOracleVerifyDebian), cached as JSON under
// $KBOOST_CACHE/verify (booted under QEMU when missing).
func x86VerifyRecords(ctx context.Context, t *testing.T, deb string) *guest.VerifyReport {
	t.Helper()
	cache := filepath.Join(vm.CacheDir(), "verify", strings.TrimSuffix(filepath.Base(deb), ".deb")+"-x86-sample300-seed1.json")
	var rep guest.VerifyReport
	if b, err := os.ReadFile(cache); err == nil && json.Unmarshal(b, &rep) == nil && len(rep.Records) > 0 {
		t.Logf("kernel records: %s", cache)
		return &rep
	}
	start := time.Now()
	v, err := vm.Verify(ctx, vm.VerifyConfig{Deb: deb, Args: guest.VerifyArgs{Sample: 300, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := json.Marshal(&v.Report); err == nil && os.MkdirAll(filepath.Dir(cache), 0o755) == nil {
		_ = os.WriteFile(cache, b, 0o644)
	}
	t.Logf("kernel records: booted %s (%v), kept in %s", filepath.Base(deb), time.Since(start).Round(time.Second), cache)
	return &v.Report
}

// TestOracleAuditX86Boot audits Debian's 6.1 amd64 package offline with the
// text patching the kernel does at boot on the machine `vm verify` boots
// (QEMU TCG, qemu64, one CPU: kimage.X86Boot with the ftrace records, the
// paravirt sites, the alternatives of X86_FEATURE_ALWAYS and no Xen, the
// LOCK prefixes patched to UP; return thunks patched to ret, the CPU needing
// no retbleed mitigation) and compares each decision with what the booted
// kernel did at that probe: errno, probed address, [FTRACE], [OPTIMIZED],
// the slot and the detour buffer (the optprobe template taken from the same
// patched file). The boundaries' bytes are compared with the booted ones
// (kcore) too, except in init and exit text, which the recorder reads from
// the vmlinux.
func TestOracleAuditX86Boot(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's 6.1 amd64 kernel; boots it under QEMU when the records are not cached)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := vm.DebianKallsyms(ctx, "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	rep := x86VerifyRecords(ctx, t, deb)
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
	agree, disagree := map[string]int{}, map[string]int{}
	probes, all := 0, 0
	var lines, bytesDiffer []string
	for _, name := range names {
		s, ok := f.Symbols.ByName(name)
		if !ok {
			t.Fatalf("%s: not in kallsyms", name)
		}
		code, err := booted(s.Addr, int(s.Size))
		if err != nil {
			t.Fatal(err)
		}
		fa, err := pred.Audit(s, code)
		if err != nil {
			t.Fatal(err)
		}
		sec, _ := f.SectionAt(s.Addr)
		fileBytes := sec.Name == ".init.text" || sec.Name == ".exit.text"
		for _, r := range byFunc[name] {
			if kb, _ := hex.DecodeString(r.Bytes); r.Boundary && !fileBytes && (int(r.Off)+len(kb) > len(code) || hex.EncodeToString(code[r.Off:int(r.Off)+len(kb)]) != r.Bytes) {
				// Static calls are not modelled (static_call_init and
				// sched_dynamic_update retarget them): the kernel refuses
				// probes there whatever the target.
				l := fmt.Sprintf("%s+%#x: booted %s, offline %x", name, r.Off, r.Bytes, code[r.Off:min(len(code), int(r.Off)+len(kb))])
				if !tabs.StaticCall.Addrs.Contains(s.Addr + r.Off) {
					t.Error("bytes differ outside a static-call site:", l)
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
					agree[field]++
				} else {
					disagree[field]++
					ok = false
				}
			}
			probes++
			if ok {
				all++
			} else {
				lines = append(lines, fmt.Sprintf("%s+%#x %s: offline %+v (%s), kernel %+v", name, r.Off, r.Bytes, p, strings.Join(d.ReasonIDs(), ","), r.Kernel))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "offline audit of %s vs the booted kernel: %d functions, %d probes, all fields agree on %d\n", filepath.Base(deb), len(names), probes, all)
	for _, field := range guest.VerifyFields {
		if field == "jmpback" {
			continue
		}
		fmt.Fprintf(&b, "  %-9s compared %6d agree %6d disagree %d\n", field, agree[field]+disagree[field], agree[field], disagree[field])
	}
	fmt.Fprintf(&b, "  boundaries whose bytes are unlike kcore's: %d, all static-call sites", len(bytesDiffer))
	t.Log(b.String())
	for i, l := range lines {
		if i < 40 {
			t.Error("DISAGREE", l)
		}
	}
	for _, l := range bytesDiffer {
		t.Log("static-call site retargeted at boot:", l)
	}
	// The control: the file's bytes with only the return thunks patched
	// (today's `kboost audit --returns ret`) disagree with the booted kernel.
	plain := 0
	for _, name := range names {
		s, _ := f.Symbols.ByName(name)
		raw, err := f.ReadAt(s.Addr, int(s.Size))
		if err != nil {
			t.Fatal(err)
		}
		raw = append([]byte(nil), raw...)
		rp.Patch(s.Addr, raw)
		fa, err := pred.Audit(s, raw)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range byFunc[name] {
			d, err := fa.At(r.Off)
			if err != nil {
				t.Fatal(err)
			}
			errno := ""
			if d.Verdict == boost.Reject {
				errno = cmpOr(d.Errno.String(), "EINVAL")
			}
			opt := rep.Optimization && d.Verdict != boost.Reject && d.Verdict != boost.Ftrace && d.Optimizable
			if errno != r.Kernel.Errno || (d.Verdict == boost.Ftrace) != r.Kernel.Ftrace || opt != r.Kernel.Optimized {
				plain++
			}
		}
	}
	t.Logf("without boot patching (return thunks only), %d of %d probes differ from the kernel in errno, [FTRACE] or [OPTIMIZED]", plain, probes)
	if plain == 0 {
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
	wm, ok := f.Symbols.ByName("native_write_msr")
	if !ok {
		t.Fatal("native_write_msr not in kallsyms")
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
		t.Errorf("pt_config_buffer with --cpu qemu64: no call to native_write_msr (%#x):\n%s", wm.Addr, out)
	}
	t.Logf("pt_config_buffer with --cpu qemu64: %d direct calls to native_write_msr, none refused", calls)
	if len(names) < 300 || probes < 10000 || all != probes {
		t.Errorf("%d functions, %d probes, %d agree on every field", len(names), probes, all)
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
