package kimage

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// ParseFlags: /proc/cpuinfo keeps the features every CPU has; a list
// takes commas or spaces; unknown names are a note; none known an error.
func TestX86ParseFlags(t *testing.T) {
	tab := X86FeatureTableFor("6.1.192")
	cpuinfo := "processor\t: 0\nflags\t\t: fpu sse2 smap rep_good\nbugs\t\t: spectre_v1 swapgs\n\nprocessor\t: 1\nflags\t\t: fpu sse2 rep_good newthing\nbugs\t\t: spectre_v1\n"
	set, notes, err := tab.ParseFlags(cpuinfo)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(tab.Flags(&set), " ")
	if got != "fpu sse2 rep_good X86_FEATURE_ALWAYS spectre_v1" {
		t.Errorf("cpuinfo: %q", got)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "newthing") {
		t.Errorf("notes %q", notes)
	}
	// bit numbers as cpufeatures.h has them
	for name, bit := range map[string]uint16{"fpu": 0, "sse2": 26, "smap": 9*32 + 20, "rep_good": 3*32 + 16, "X86_FEATURE_ALWAYS": X86FeatureAlways, "xenpv": X86FeatureXenPV} {
		if b, ok := tab.Lookup(name); !ok || b != bit {
			t.Errorf("Lookup(%s) = %d %v, want %d", name, b, ok, bit)
		}
	}
	set, _, err = tab.ParseFlags("fpu, smap,sse2")
	if err != nil || !set.Has(9*32+20) || !set.Has(0) || !set.Has(X86FeatureAlways) {
		t.Errorf("list: %v %v", tab.Flags(&set), err)
	}
	if _, _, err := tab.ParseFlags("bogus nothing"); !errors.Is(err, ErrNoKnownFlags) {
		t.Errorf("no known flag: %v", err)
	}
	// 6.1 hides XENPV ("" comment); 6.12 does not name it at all
	if tab.Name(X86FeatureXenPV) != "X86_FEATURE_XENPV" {
		t.Errorf("XENPV shown as %q", tab.Name(X86FeatureXenPV))
	}
	if f := X86FeatureTableFor("6.18.3"); !strings.Contains(f.From, "6.12") || !strings.Contains(f.From, "nearest older") {
		t.Errorf("6.18 uses %s", f.From)
	}
	if f := X86FeatureTableFor("5.10.1"); !strings.Contains(f.From, "6.1.") {
		t.Errorf("5.10 uses %s", f.From)
	}
}

// The host's /proc/cpuinfo parses under the table of its own kernel's
// version, every flag known, or named only by a newer kernel kboost has a
// table of (the host runs a kernel between two modelled versions).
func TestX86HostCPUInfo(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		t.Skip("the host is not x86: its /proc/cpuinfo has no x86 flags")
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(u.Release[:])
	cpu, notes, err := X86CPUFromFlags(string(b), release)
	if err != nil {
		t.Fatal(err)
	}
	tab := X86FeatureTableFor(release)
	unknown := 0
	done := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if k = strings.TrimSpace(k); (k != "flags" && k != "bugs") || done[k] {
			continue // one CPU's lines
		}
		done[k] = true
		for _, name := range strings.Fields(v) {
			if _, ok := tab.Lookup(name); ok {
				continue
			}
			newer := ""
			for _, s := range x86FeatureSpecs {
				if _, ok := (&X86FeatureTable{spec: s}).Lookup(name); ok && versionLess(tab.spec.version, s.version) {
					newer = s.version
				}
			}
			if newer == "" {
				t.Errorf("host flag %q: in no cpufeatures.h kboost has (host kernel %s)", name, release)
			}
			unknown++
			t.Logf("%s: not in %s, named by Linux %s", name, tab.From, newer)
		}
	}
	t.Logf("host %s: %s; %d flags and bugs not in %s, all named by a newer modelled kernel; notes %q", release, cpu.Name, unknown, tab.From, notes)
}

// Every named CPU's cpuinfo parses, every flag known, under each table.
func TestX86NamedCPUs(t *testing.T) {
	for _, name := range X86CPUNames() {
		for _, s := range x86FeatureSpecs {
			cpu, notes, err := X86NamedCPU(name, s.version)
			if err != nil {
				t.Fatalf("%s under %s: %v", name, s.version, err)
			}
			if len(notes) != 1 || cpu.CPUs != 1 || !cpu.Features.Has(X86FeatureAlways) || cpu.Features.Has(X86FeatureXenPV) {
				t.Errorf("%s under %s: %+v, notes %q", name, s.version, cpu, notes)
			}
		}
	}
	q := QEMU64()
	tab := X86FeatureTableFor("6.1")
	if f := strings.Join(tab.Flags(&q.Features), " "); !strings.Contains(f, "sse2") || !strings.Contains(f, "rep_good") || strings.Contains(f, "smap") {
		t.Errorf("qemu64: %s", f)
	}
}
