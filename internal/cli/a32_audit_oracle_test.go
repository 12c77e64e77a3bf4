package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/audit"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
)

// TestOracleAuditARM audits Debian's armmp kernel package offline, as
// `kboost audit linux-image-*-armmp.deb --symbols kallsyms` does (the Image
// from the zImage, placed by its mcount calls, the ftrace locations and
// jump-label sites located in it, the policy chosen by the kernel's
// release), and compares every decision with what the booted kernel did at
// that probe in vm's TestOracleVerifyARM record (300 functions, seed 1:
// errno, probed address, [FTRACE], [OPTIMIZED], slot), and the audited
// bytes with the recorded ones (which differ where the kernel patched its
// code at boot: the ftrace call sites and phys-to-virt stubs). It also
// checks the blacklist kboost finds in the Image against the kernel's.
func TestOracleAuditARM(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's armmp kernel; boots it under QEMU when the records are not cached)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := vm.DebianKallsyms(ctx, "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	// The same run as vm's TestOracleVerifyARM: the record is cached.
	v, err := vm.VerifyARM(ctx, vm.ARMVerifyConfig{Deb: deb, Args: guest.ARM64VerifyArgs{Sample: 300, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if v.Cached != "" {
		t.Logf("kernel records: %s", v.Cached)
	}
	rep := &v.Report
	f, err := openImage(deb, ks)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Kind != kimage.KindDeb || f.Arch == nil || f.Arch.Name != "arm" {
		t.Fatalf("%s opened as %s %v", deb, f.Kind, f.Arch)
	}
	pol, note, err := pickFilePolicy("", f)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("note:", note)
	if pol.Name != "linux-6.1-arm" {
		t.Fatalf("policy %s, want linux-6.1-arm for an ARM-mode 6.1 kernel", pol.Name)
	}
	var names []string
	kfn := map[string]guest.KernelFunc{}
	for _, fn := range rep.Funcs {
		names = append(names, fn.Name)
		kfn[fn.Name] = fn
	}
	reqs, err := audit.Select(f, names)
	if err != nil {
		t.Fatal(err)
	}
	env, notes := audit.Env(f, pol, nil)
	for _, n := range notes {
		t.Log("note:", n)
	}
	checkLiveBlacklist(t, env, rep, func(guest.KernelFunc) bool { return true })
	byFunc := map[string][]*guest.VerifyRecord{}
	for i := range rep.Records {
		r := &rep.Records[i]
		byFunc[r.Func] = append(byFunc[r.Func], r)
	}
	ty := newA64Tally()
	ty.fields, ty.cmp, ty.optimization, ty.format = guest.ARMFields, v.Compare, pol.Optprobes, vm.FormatARMRecord
	var mu sync.Mutex
	var differ []string
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
					if !bytes.Equal(kb[o:o+4], ab[o:o+4]) {
						differ = append(differ, fmt.Sprintf("%s+%#x: audited %x, recorded %x", a.Func.Name, o, ab[o:o+4], kb[o:o+4]))
						break
					}
				}
			}
			return nil, ty.compare(a, byFunc[a.Func.Name])
		}
	}
	if err := audit.Run(f, pol, env, reqs, nil, 0, newHandler, func([]byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(differ)
	t.Logf("offline audit of %s vs kernel %s: %d functions, %d with bytes unlike the recorded ones\n%s",
		f.KernelVersion, rep.Release, len(reqs), len(differ), ty.table())
	for _, d := range differ {
		t.Log("bytes differ:", d)
	}
	// errno, [FTRACE] and [OPTIMIZED] must agree on every probe; a slot may
	// differ where the kernel patched the word at boot (phys-to-virt
	// stubs: the Image holds the placeholder immediate).
	for i, l := range ty.lines {
		if i < 50 {
			t.Log(l)
		}
	}
	for _, field := range []string{"errno", "ftrace", "optimized"} {
		if ty.disagree[field] > 0 || ty.agree[field] == 0 {
			t.Errorf("%s: %d agree, %d disagree", field, ty.agree[field], ty.disagree[field])
		}
	}
	if len(reqs) < 300 || ty.probes < 5000 {
		t.Errorf("%d functions, %d probes compared", len(reqs), ty.probes)
	}
}

// TestOracleAuditARMForms audits Debian's armmp kernel in the three forms a
// user has it, the package, its vmlinuz (a zImage) and the decompressed
// Image, with the booted kernel's kallsyms: every form opens as the same
// ARM Image (same sections, same tables) and `kboost audit --json` gives
// the same decisions for the package's config (--config for the bare
// forms). The Image is decompressed by xz-utils (the zImage's payload,
// found by its magic), not by kboost.
func TestOracleAuditARMForms(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (downloads Debian's armmp kernel; boots it under QEMU for kallsyms when not cached)")
	}
	ctx := context.Background()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := vm.DebianKallsyms(ctx, "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zimage, image, config := filepath.Join(dir, "vmlinuz"), filepath.Join(dir, "Image"), filepath.Join(dir, "config")
	for p, b := range map[string][]byte{zimage: dk.Vmlinuz, config: dk.Config} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The payload with an independent decompressor: xz from the first of
	// the stream magics (the decompressor's own strings hold one too) that
	// decodes.
	var raw []byte
	magic := []byte{0xFD, '7', 'z', 'X', 'Z', 0}
	for off := 0; raw == nil; {
		i := bytes.Index(dk.Vmlinuz[off:], magic)
		if i < 0 {
			t.Fatal("no xz stream in the zImage that xz decodes")
		}
		cmd := exec.Command("xz", "-dc", "--single-stream")
		cmd.Stdin = bytes.NewReader(dk.Vmlinuz[off+i:])
		if out, err := cmd.Output(); err == nil && len(out) > 0 {
			raw = out
		}
		off += i + 1
	}
	if err := os.WriteFile(image, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var sections string
	for _, p := range []string{deb, zimage, image} {
		f, err := openImage(p, ks)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range f.Sections {
			fmt.Fprintf(&b, "%s %#x+%#x exec=%v\n", s.Name, s.Addr, s.Size, s.Exec)
		}
		tabs, err := kimage.KernelTables(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range tabs.All() {
			fmt.Fprintf(&b, "%s\n", x)
		}
		f.Close()
		if sections == "" {
			sections = b.String()
			t.Logf("%s:\n%s", filepath.Base(p), sections)
		} else if b.String() != sections {
			t.Errorf("%s opens unlike the package:\n%s\nwant\n%s", filepath.Base(p), b.String(), sections)
		}
	}
	funcs := []string{"--func", "vfs_read", "--func", "user_enter_callable", "--func", "kprobe_*"}
	want, _, code := run(t, append([]string{"audit", "--json", "--symbols", ks, deb}, funcs...)...)
	if code != 0 || strings.Count(want, "\n") < 100 {
		t.Fatalf("audit of %s: exit %d, %d lines", deb, code, strings.Count(want, "\n"))
	}
	for _, p := range []string{zimage, image} {
		got, stderr, code := run(t, append([]string{"audit", "--json", "--symbols", ks, "--config", config, p}, funcs...)...)
		if code != 0 {
			t.Fatalf("audit of %s: exit %d: %s", filepath.Base(p), code, stderr)
		}
		if got != want {
			t.Errorf("audit of %s differs from the package's (%d and %d bytes)", filepath.Base(p), len(got), len(want))
		}
	}
	t.Logf("%d JSON lines the same for the package, its zImage and its Image", strings.Count(want, "\n"))
}
