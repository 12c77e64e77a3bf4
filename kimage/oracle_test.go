//go:build linux

package kimage

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The oracle tests need the network to Debian's archive (once; packages are
// cached), xz-utils, binutils and file. Run with KBOOST_ORACLE=1.

func oracleGate(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to fetch Debian kernels and compare with xz/readelf/file")
	}
}

var oracleKernels = []struct {
	meta     string
	arch     string // decode.Arch name
	fileDesc string // what file(1) must say
}{
	{"linux-image-amd64", "x86-64", "ELF 64-bit LSB executable, x86-64"},
	{"linux-image-686", "i386", "ELF 32-bit LSB executable, Intel 80386"},
}

func TestOracleDebianKernels(t *testing.T) {
	oracleGate(t)
	for _, k := range oracleKernels {
		t.Run(k.meta, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			deb, err := FetchDebianKernel(ctx, k.meta)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("package %s", deb)
			dk, err := ReadDeb(deb)
			if err != nil {
				t.Fatal(err)
			}

			// 1. ReadDeb agrees with dpkg-deb's own extraction.
			root := t.TempDir()
			run(t, "", needTool(t, "dpkg-deb"), "-x", deb, root)
			want, err := os.ReadFile(filepath.Join(root, "boot", "vmlinuz-"+dk.Version))
			if err != nil || !bytes.Equal(want, dk.Vmlinuz) {
				t.Fatalf("vmlinuz-%s differs from dpkg-deb -x (%v)", dk.Version, err)
			}
			wantCfg, _ := os.ReadFile(filepath.Join(root, "boot", "config-"+dk.Version))
			if !bytes.Equal(wantCfg, dk.Config) {
				t.Errorf("config differs from dpkg-deb -x")
			}
			wantMap, _ := os.ReadFile(filepath.Join(root, "boot", "System.map-"+dk.Version))
			if bytes.Contains(wantMap, []byte("The real System.map")) != (dk.SystemMap == nil) {
				t.Errorf("System.map placeholder detection wrong (file %d bytes, got %d)", len(wantMap), len(dk.SystemMap))
			}

			// 2. Decompression agrees with xz(1) on the same payload, found here
			// independently by its magic.
			t0 := time.Now()
			var ru0 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			vml, err := ExtractVmlinux(dk.Vmlinuz)
			var ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			wall := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
			t.Logf("ExtractVmlinux: %d -> %d bytes in %v wall, %v CPU", len(dk.Vmlinuz), len(vml), wall.Round(time.Millisecond), cpu.Round(time.Millisecond))
			i := bytes.Index(dk.Vmlinuz, xzMagic)
			if i < 0 {
				t.Fatal("no xz magic in vmlinuz")
			}
			cmd := exec.Command(needTool(t, "xz"), "-dc", "--single-stream")
			cmd.Stdin = bytes.NewReader(dk.Vmlinuz[i:])
			t1 := time.Now()
			ref, err := cmd.Output()
			if err != nil {
				t.Fatalf("xz -dc: %v", err)
			}
			t.Logf("xz -dc --single-stream: %v wall", time.Since(t1).Round(time.Millisecond))
			if !bytes.Equal(ref, vml) {
				t.Fatalf("ExtractVmlinux (%d bytes) differs from xz -dc (%d bytes)", len(vml), len(ref))
			}

			// 3. file(1) and readelf agree on what the vmlinux is.
			vpath := filepath.Join(t.TempDir(), "vmlinux")
			if err := os.WriteFile(vpath, vml, 0o644); err != nil {
				t.Fatal(err)
			}
			desc := string(run(t, "", needTool(t, "file"), "-b", vpath))
			if !strings.HasPrefix(desc, k.fileDesc) {
				t.Errorf("file says %q, want %q", desc, k.fileDesc)
			}
			f, err := Open(vpath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Arch.Name != k.arch || f.KernelVersion == "" {
				t.Errorf("arch %v version %q", f.Arch, f.KernelVersion)
			}
			re := readelfSections(t, vpath)
			if len(re) != len(f.Sections) {
				t.Fatalf("%d sections, readelf shows %d", len(f.Sections), len(re))
			}
			for j, r := range re {
				s := f.Sections[j]
				if s.Name != r.Name || s.Addr != r.Addr || s.Size != r.Size || s.Offset != r.Off || s.Exec != strings.Contains(r.Flags, "X") {
					t.Errorf("section %d: %s %#x %#x; readelf %s %#x %#x %q", j, s.Name, s.Addr, s.Size, r.Name, r.Addr, r.Size, r.Flags)
				}
			}

			// 4. The tables, read from the package (config included), point at
			// the right instructions.
			fd, err := Open(deb)
			if err != nil {
				t.Fatal(err)
			}
			if fd.KernelVersion != dk.Version || fd.Config == nil {
				t.Errorf("Open(deb): version %q config %v", fd.KernelVersion, fd.Config != nil)
			}
			tb, err := KernelTables(fd)
			if err != nil {
				t.Fatal(err)
			}
			for _, tab := range tb.All() {
				t.Logf("%v", tab)
			}
			for _, a := range tb.Bug.Addrs.Addrs() {
				b, err := fd.ReadAt(a, 2)
				if err != nil || b[0] != 0x0F || b[1] != 0x0B {
					t.Fatalf("BUG site %#x: % x %v, want ud2 (0f 0b)", a, b, err)
				}
			}
			for _, a := range tb.ExTable.Addrs.Addrs() {
				if s, ok := fd.SectionAt(a); !ok || !s.Exec {
					t.Fatalf("exception-table insn %#x not in executable code", a)
				}
			}
			for _, r := range tb.Alternatives.Ranges.Ranges() {
				s, ok := fd.SectionAt(r.Start)
				if !ok || !s.Exec || !s.Contains(r.End-1) {
					t.Fatalf("alternative %#x..%#x not inside one executable section", r.Start, r.End)
				}
			}
			if tb.Bug.Len() < 1000 || tb.ExTable.Len() < 100 || tb.Alternatives.Len() < 100 {
				t.Errorf("implausibly small tables: bug %d ex %d alt %d", tb.Bug.Len(), tb.ExTable.Len(), tb.Alternatives.Len())
			}
			if tb.JumpLabel.Known() || !strings.Contains(tb.JumpLabel.Note, "no symbols") {
				t.Errorf("jump labels without symbols: %v", &tb.JumpLabel)
			}

			// 4b. With the kernel's own /proc/kallsyms (cached by the vm package's
			// DebianKallsyms, booted with nokaslr) the symbol-located tables are
			// read too, and their sites hold the instructions the kernel patches.
			ks := filepath.Join(CacheDir(), "kallsyms", strings.TrimSuffix(filepath.Base(deb), ".deb")+".txt")
			if st, err := LoadSymbols(ks); err != nil {
				t.Logf("no kallsyms dump (%v): symbol-located tables not checked", err)
			} else {
				if slide := fd.SetSymbols(st); slide != 0 {
					t.Errorf("kallsyms of a nokaslr boot slid by %#x", slide)
				}
				tb, err := KernelTables(fd)
				if err != nil {
					t.Fatal(err)
				}
				for _, tab := range tb.All() {
					t.Logf("with kallsyms: %v", tab)
				}
				all := fd.Config.Bool("KALLSYMS_ALL")
				for _, tab := range []*Table{&tb.JumpLabel, &tb.StaticCall, &tb.KprobeBlacklist, &tb.EntryText, &tb.NoinstrText, &tb.InitText} {
					if tab.Known() != (all || tab.Ranges.Len() > 0) {
						t.Errorf("%v (KALLSYMS_ALL=%v)", tab, all)
					}
				}
				nop5 := []byte{0x0F, 0x1F, 0x44, 0x00, 0x00}
				for _, a := range tb.JumpLabel.Addrs.Addrs() {
					b, err := fd.ReadAt(a, 5)
					if err != nil || !(bytes.HasPrefix(b, []byte{0x66, 0x90}) || bytes.Equal(b, nop5) || b[0] == 0xEB || b[0] == 0xE9) {
						t.Fatalf("jump-label site %#x: % x %v, want a 2/5-byte nop or jmp", a, b, err)
					}
				}
				for _, a := range tb.StaticCall.Addrs.Addrs() {
					b, err := fd.ReadAt(a, 5)
					if err != nil || (b[0] != 0xE8 && b[0] != 0xE9) {
						t.Fatalf("static-call site %#x: % x %v, want call/jmp rel32", a, b, err)
					}
				}
				for _, r := range tb.KprobeBlacklist.Ranges.Ranges() {
					// Names may repeat (static functions), so look up by address.
					if s, off, ok := fd.Symbols.Lookup(r.Start); !ok || off != 0 || s.Addr+s.Size < r.End {
						t.Fatalf("blacklist range %s %#x..%#x is not a whole function", r.Name, r.Start, r.End)
					}
				}
			}

			// 5. Peak memory, each in a fresh process.
			vsize := int64(len(vml))
			for _, c := range []struct {
				what  string
				path  string
				limit int64
			}{
				{"audit-style read of the vmlinux", vpath, 2 * vsize},
				// The .deb adds the fixed cost of the data.tar.xz decoder.
				{"open of the .deb (extraction included)", deb, 2*vsize + 16<<20},
			} {
				peak := childPeakRSS(t, c.path)
				t.Logf("peak RSS, %s: %d MiB (vmlinux %d MiB)", c.what, peak>>20, vsize>>20)
				if peak > c.limit {
					t.Errorf("peak RSS %d MiB for %s exceeds %d MiB", peak>>20, c.what, c.limit>>20)
				}
			}
		})
	}
}

// childPeakRSS runs TestOracleMemChild in a new process on path and returns its
// peak resident set size in bytes.
func childPeakRSS(t *testing.T, path string) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestOracleMemChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "KIMAGE_MEM_CHILD="+path)
	out, err := cmd.CombinedOutput()
	i := bytes.Index(out, []byte("MEMCHILD-OK "))
	if err != nil || i < 0 {
		t.Fatalf("memory child: %v\n%s", err, out)
	}
	// wait4's ru_maxrss would include the parent's pages from before exec, so
	// the child reports its own high-water mark.
	f := strings.Fields(string(out[i:]))
	kb, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("memory child output %q", out[i:])
	}
	return kb * 1024
}

// vmHWM returns this process's peak resident set size in KiB (Linux).
func vmHWM(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// TestOracleMemChild is the child of childPeakRSS: open a file, read every
// executable section and the kernel tables, as an audit does.
func TestOracleMemChild(t *testing.T) {
	p := os.Getenv("KIMAGE_MEM_CHILD")
	if p == "" {
		return // only meaningful as the helper process of TestOracleDebianKernels
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, s := range f.ExecSections() {
		d, err := s.Data()
		if err != nil {
			t.Fatal(err)
		}
		n += len(d)
	}
	tb, err := KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("MEMCHILD-OK", vmHWM(t), n, tb.Bug.Len(), f.Symbols.Len())
}
