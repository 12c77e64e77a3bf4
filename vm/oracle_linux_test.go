//go:build linux

package vm

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

func oracleGate(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to boot Debian kernels under QEMU")
	}
}

type ksym struct {
	addr uint64
	typ  byte
}

func parseKallsyms(t *testing.T, b []byte) (map[string]ksym, int) {
	t.Helper()
	syms := map[string]ksym{}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			t.Fatalf("kallsyms line %q", sc.Text())
		}
		n++
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			t.Fatalf("kallsyms line %q: %v", sc.Text(), err)
		}
		if _, dup := syms[f[2]]; !dup {
			syms[f[2]] = ksym{a, f[1][0]}
		}
	}
	return syms, n
}

// TestOracleDebianKallsyms fetches the current Debian kernels, gets their kallsyms
// from DebianKallsyms (booting them once, then from the cache) and checks the dump
// against what the package itself says: the vmlinux's ELF sections (extracted
// from vmlinuz) and the kernel's config.
func TestOracleDebianKallsyms(t *testing.T) {
	oracleGate(t)
	for _, meta := range []string{"linux-image-amd64", "linux-image-686"} {
		t.Run(meta, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			deb, err := kimage.FetchDebianKernel(ctx, meta)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			path, err := DebianKallsyms(ctx, meta)
			if err != nil {
				t.Fatal(err)
			}
			first := time.Since(start)
			start = time.Now()
			boots := 0
			testHookStarted = func(int) { boots++ }
			path2, err := DebianKallsyms(ctx, meta)
			testHookStarted = nil
			if err != nil || path2 != path {
				t.Fatalf("second call: %q, %v (first gave %q)", path2, err, path)
			}
			if boots != 0 {
				t.Errorf("second call booted QEMU %d times, want the cache", boots)
			}
			t.Logf("DebianKallsyms: %v, then %v from the cache", first.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

			txt, recPath := KallsymsPaths(deb)
			if txt != path {
				t.Fatalf("path %q, KallsymsPaths says %q", path, txt)
			}
			var rec KallsymsRecord
			if b, err := os.ReadFile(recPath); err != nil {
				t.Fatal(err)
			} else if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s booted %s: boot-to-result %v, run %v, guest /init at %.2fs, steps done at %.2fs (guest clock), %d lines",
				rec.Release, rec.BootedAt.Format(time.RFC3339), rec.BootTime.Round(time.Millisecond),
				rec.TotalTime.Round(time.Millisecond), rec.GuestInit, rec.GuestDone, rec.Lines)

			dk, err := kimage.ReadDeb(deb)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Release != dk.Version {
				t.Errorf("guest ran %q, package holds %q", rec.Release, dk.Version)
			}
			cfg, err := kimage.ParseKConfig(dk.Config)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			syms, lines := parseKallsyms(t, b)
			if lines != rec.Lines || lines < 30000 {
				t.Errorf("%d kallsyms lines (record says %d), want tens of thousands", lines, rec.Lines)
			}

			vmlinux, err := kimage.ExtractVmlinux(dk.Vmlinuz)
			if err != nil {
				t.Fatal(err)
			}
			ef, err := elf.NewFile(bytes.NewReader(vmlinux))
			if err != nil {
				t.Fatal(err)
			}
			text := ef.Section(".text")
			if text == nil {
				t.Fatal("vmlinux has no .text")
			}
			for _, name := range []string{"_text", "_stext"} {
				if s, ok := syms[name]; !ok || s.addr != text.Addr {
					t.Errorf("%s = %#x (present %v), vmlinux .text at %#x", name, s.addr, ok, text.Addr)
				}
			}
			if s, ok := syms["vfs_read"]; !ok || (s.typ != 'T' && s.typ != 't') || s.addr < text.Addr || s.addr >= text.Addr+text.Size {
				t.Errorf("vfs_read %+v (present %v), not a function in .text [%#x,%#x)", s, ok, text.Addr, text.Addr+text.Size)
			}
			if s, ok := syms["_etext"]; !ok || s.addr > text.Addr+text.Size || s.addr <= text.Addr {
				t.Errorf("_etext %#x (present %v) outside .text [%#x,%#x]", s.addr, ok, text.Addr, text.Addr+text.Size)
			}
			// Data symbols, table bounds among them, come only with KALLSYMS_ALL.
			all := cfg.Bool("CONFIG_KALLSYMS_ALL")
			if _, ok := syms["__start___jump_table"]; ok != all {
				t.Errorf("__start___jump_table present %v, CONFIG_KALLSYMS_ALL %v", ok, all)
			}
			if all {
				for sym, sec := range map[string]string{"__start___bug_table": "__bug_table", "__start___ex_table": "__ex_table"} {
					s := ef.Section(sec)
					if s == nil {
						t.Errorf("vmlinux lacks %s", sec)
						continue
					}
					if k, ok := syms[sym]; !ok || k.addr != s.Addr {
						t.Errorf("%s = %#x (present %v), vmlinux %s at %#x", sym, k.addr, ok, sec, s.Addr)
					}
				}
			}
			// What the guest found must follow from the configuration.
			ex := rec.Features.Exists
			want := map[string]bool{
				"/sys/kernel/tracing/kprobe_events": cfg.Bool("CONFIG_KPROBE_EVENTS"),
				"/sys/kernel/debug/kprobes/list":    cfg.Bool("CONFIG_KPROBES") && cfg.Bool("CONFIG_DEBUG_FS"),
				"/proc/config.gz":                   cfg.Bool("CONFIG_IKCONFIG_PROC"),
				"/proc/kcore":                       cfg.Bool("CONFIG_PROC_KCORE"),
			}
			for p, w := range want {
				if ex[p] != w {
					t.Errorf("%s exists %v, config says %v", p, ex[p], w)
				}
			}
			if !strings.Contains(rec.Cmdline, "nokaslr") {
				t.Errorf("guest command line %q lacks nokaslr", rec.Cmdline)
			}
		})
	}
}

// debianAMD64Kernel writes the current Debian amd64 vmlinuz to a temporary file.
func debianAMD64Kernel(t *testing.T) (string, *kimage.KConfig) {
	t.Helper()
	deb, err := kimage.FetchDebianKernel(context.Background(), "linux-image-amd64")
	if err != nil {
		t.Fatal(err)
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		t.Fatal(err)
	}
	p := t.TempDir() + "/vmlinuz"
	if err := os.WriteFile(p, dk.Vmlinuz, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := kimage.ParseKConfig(dk.Config)
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg
}

// TestOracleKprobeCheck asks the Debian amd64 kernel about a few probe points.
// Expectations come from the kernel's rules and its configuration, and from what
// was seen live (machine-notes.md).
func TestOracleKprobeCheck(t *testing.T) {
	oracleGate(t)
	kernel, cfg := debianAMD64Kernel(t)
	points := []string{"vfs_read", "vfs_read+1", "kboost_no_such_symbol", "vfs_read+4", "vfs_read+5", "do_sys_openat2"}
	args, _ := json.Marshal(guest.KprobeCheckArgs{Points: points})
	res, err := Run(context.Background(), Config{Kernel: kernel}, guest.Step{Name: "kprobe-check", Args: args})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("timing %+v", res.Timing)
	var pcs []guest.ProbeCheck
	if err := json.Unmarshal(res.Files["kprobe-check.json"], &pcs); err != nil {
		t.Fatal(err)
	}
	if len(pcs) != len(points) {
		t.Fatalf("%d results for %d points", len(pcs), len(points))
	}
	by := map[string]guest.ProbeCheck{}
	for _, pc := range pcs {
		t.Logf("%-22s accepted=%-5v errno=%-7s flags=%v list=%q log=%q", pc.Point, pc.Accepted, pc.ErrnoName, pc.Flags, pc.List, pc.ErrorLog)
		by[pc.Point] = pc
		if pc.RemoveError != "" || pc.EnableError != "" {
			t.Errorf("%s: enable %q remove %q", pc.Point, pc.EnableError, pc.RemoveError)
		}
	}
	ftrace := cfg.Bool("CONFIG_KPROBES_ON_FTRACE") && cfg.Bool("CONFIG_DYNAMIC_FTRACE")
	for _, fn := range []string{"vfs_read", "do_sys_openat2"} {
		pc := by[fn]
		if !pc.Accepted || pc.List == "" {
			t.Errorf("%s: not accepted or not listed: %+v", fn, pc)
		}
		if got := strings.Contains(pc.List, "[FTRACE]"); got != ftrace {
			t.Errorf("%s: [FTRACE] %v, config says kprobes on ftrace %v", fn, got, ftrace)
		}
	}
	// The ftrace site is a 5-byte call: +1 and +4 are inside it.
	for _, p := range []string{"vfs_read+1", "vfs_read+4"} {
		if pc := by[p]; pc.Accepted || pc.ErrnoName != "EILSEQ" || !strings.Contains(pc.ErrorLog, "instruction boundary") {
			t.Errorf("%s: %+v, want EILSEQ and an instruction-boundary error_log", p, pc)
		}
	}
	if pc := by["kboost_no_such_symbol"]; pc.Accepted || pc.ErrnoName != "ENOENT" {
		t.Errorf("unknown symbol: %+v, want ENOENT", pc)
	}
	if pc := by["vfs_read+5"]; !pc.Accepted {
		t.Errorf("vfs_read+5 (after the ftrace call) refused: %+v", pc)
	}
}

// TestOracleStopPaths checks that QEMU is gone after a time-out, a cancelled
// context and a kernel panic, and that each gives its own error.
func TestOracleStopPaths(t *testing.T) {
	oracleGate(t)
	kernel, _ := debianAMD64Kernel(t)
	// Run's temporary files go here, which must be empty after each run.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var pid int
	var onStart func()
	testHookStarted = func(p int) {
		pid = p
		if onStart != nil {
			onStart()
		}
	}
	defer func() { testHookStarted = nil }()
	gone := func(what string) {
		t.Helper()
		if pid == 0 {
			t.Fatalf("%s: QEMU never started", what)
		}
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: QEMU process %d still exists (kill 0: %v)", what, pid, err)
		}
		// The process group too.
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s: QEMU process group %d still exists (kill 0: %v)", what, pid, err)
		}
		pid = 0
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("%s: temporary files left: %v", what, left)
		}
	}

	_, err := Run(context.Background(), Config{Kernel: kernel, Timeout: 1500 * time.Millisecond}, guest.Step{Name: "uname"})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Errorf("time-out: got %v", err)
	}
	gone("time-out")

	// Cancelled once QEMU runs (a fixed delay from the call raced the
	// initramfs build on a loaded machine: QEMU never started).
	ctx, cancel := context.WithCancel(context.Background())
	onStart = func() { time.AfterFunc(500*time.Millisecond, cancel) }
	_, err = Run(ctx, Config{Kernel: kernel}, guest.Step{Name: "uname"})
	onStart = nil
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: got %v", err)
	}
	gone("cancel")

	// With no /init to run and no root device, the kernel panics (VFS: unable to
	// mount root fs) and, with panic=-1 and -no-reboot, QEMU exits.
	_, err = Run(context.Background(), Config{Kernel: kernel, Append: []string{"rdinit=/kboost-missing", "root=/dev/kboost-missing"}}, guest.Step{Name: "uname"})
	var pe *KernelPanicError
	if !errors.As(err, &pe) {
		t.Fatalf("panic: got %v", err)
	}
	if !strings.Contains(pe.Message, "Kernel panic") || len(pe.Console) == 0 {
		t.Errorf("panic error lacks the message or the console: %+v", pe)
	}
	t.Logf("panic error:\n%v", err)
	gone("panic")
}
