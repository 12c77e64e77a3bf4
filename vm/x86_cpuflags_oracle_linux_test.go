package vm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// qemu64CPUInfo is where kimage keeps the captured qemu64 /proc/cpuinfo.
const qemu64CPUInfo = "../kimage/spec/x86-cpu-qemu64.cpuinfo"

// TestOracleX86CPUFlagsQEMU64 boots Debian's 6.1 amd64 kernel on the machine
// `vm verify` uses (QEMU TCG's default CPU, qemu64) and reads /proc/cpuinfo
// in the guest: the feature set its flags and bugs name must be the one
// kboost's `--cpu qemu64` preset gives (kimage.X86NamedCPU), and boot
// patching with either must leave every byte of the kernel's text the same.
// With KBOOST_UPDATE_SPEC=1 it writes the captured text as the preset.
func TestOracleX86CPUFlagsQEMU64(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (boots Debian's 6.1 amd64 kernel under QEMU)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	deb, err := kimage.FetchDebianKernel(ctx, "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Arch: AMD64, Kernel: filepath.Join(t.TempDir(), "vmlinuz"), Timeout: 10 * time.Minute}
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := Run(ctx, cfg, guest.Step{Name: "cpuinfo"})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	got := res.Files["cpuinfo.txt"]
	t.Logf("booted %s (%v): /proc/cpuinfo %d bytes", filepath.Base(deb), time.Since(start).Round(time.Second), len(got))
	if os.Getenv("KBOOST_UPDATE_SPEC") == "1" {
		if err := os.WriteFile(qemu64CPUInfo, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: rebuild kimage", qemu64CPUInfo)
	}
	booted, notes, err := kimage.X86CPUFromFlags(string(got), dk.Version)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		t.Log("booted flags:", n)
	}
	preset, _, err := kimage.X86NamedCPU("qemu64", dk.Version)
	if err != nil {
		t.Fatal(err)
	}
	tab := kimage.X86FeatureTableFor(dk.Version)
	bf, pf := tab.Flags(&booted.Features), tab.Flags(&preset.Features)
	if !slices.Equal(bf, pf) || booted.CPUs != preset.CPUs {
		t.Fatalf("the booted qemu64 has %d CPUs and %v\nthe preset %d CPUs and %v", booted.CPUs, bf, preset.CPUs, pf)
	}
	t.Logf("qemu64: %d CPU, %d features and bugs, the same as the preset: %v", booted.CPUs, len(bf), bf)
	// The same patched text with either CPU (boot patching of the whole
	// kernel text, the input of every audit).
	ks, err := DebianKallsyms(ctx, "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	f, err := kimage.OpenMapped(deb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := kimage.LoadSymbols(ks)
	if err != nil {
		t.Fatal(err)
	}
	f.SetSymbols(st)
	xb, err := kimage.ReadX86Boot(f)
	if err != nil {
		t.Fatal(err)
	}
	sec, ok := f.Section(".text")
	if !ok {
		t.Fatal("no .text")
	}
	text, err := sec.Data()
	if err != nil {
		t.Fatal(err)
	}
	a := append([]byte(nil), text...)
	b := append([]byte(nil), text...)
	na := xb.Apply(sec.Addr, a, &booted)
	xb.Apply(sec.Addr, b, &preset)
	if string(a) != string(b) {
		t.Fatal("boot patching differs between the booted flags and the preset")
	}
	changed := 0
	for i := range a {
		if a[i] != text[i] {
			changed++
		}
	}
	t.Logf("boot patching of .text: %d sites, %d bytes changed, identical for both", na, changed)
}
