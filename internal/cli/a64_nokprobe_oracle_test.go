package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/kernelref"
	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/loader"
	"github.com/kboost/kboost/vm"
	"github.com/kboost/kboost/vm/guest"
)

// a64AsmNokprobe matches the assembly NOKPROBE(sym) uses (the macro of
// arch/arm64/include/asm/assembler.h: `.quad sym` into _kprobe_blacklist).
var a64AsmNokprobe = regexp.MustCompile(`(?m)^NOKPROBE\(([A-Za-z0-9_]+)\)`)

// TestOracleARM64AsmNokprobe checks the kprobe blacklist kboost reads from
// Debian's arm64 Image against the NOKPROBE uses of that version's
// arch/arm64/kernel/entry.S: every one naming a function in core or init
// text (the kernel skips the others: the trampolines) must be blacklisted.
// 7.2 relocates them through .rela.dyn while the rest of its pointers are
// RELR. When a booted verification record of the package is cached, its
// kprobes/blacklist must list the same functions.
func TestOracleARM64AsmNokprobe(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (Debian's arm64 kernels and linux-source tarballs; boots each kernel once for kallsyms when not cached)")
	}
	for _, v := range []string{"6.1", "6.12", "7.2"} {
		t.Run(v, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			start := time.Now()
			deb, err := kimage.FetchDebianKernelVersion(ctx, "linux-image-arm64", v)
			if err != nil {
				// apt may no longer list the version: a package fetched before will do
				cached, _ := filepath.Glob(filepath.Join(vm.CacheDir(), "debs", "linux-*-"+v+".*-arm64_*_arm64.deb"))
				for _, c := range cached {
					if !strings.Contains(filepath.Base(c), "linux-base-") {
						deb = c
					}
				}
				if deb == "" {
					t.Fatal(err)
				}
				t.Logf("%v; using %s from the cache", err, filepath.Base(deb))
			}
			ks, err := vm.DebKallsyms(ctx, deb, vm.Config{Arch: vm.ARM64})
			if err != nil {
				t.Fatal(err)
			}
			tarball, err := kernelref.SourceTarball(kernelref.Options{}, v)
			if err != nil {
				t.Fatal(err)
			}
			src, err := exec.Command("tar", "-xJOf", tarball, "--wildcards", "*/arch/arm64/kernel/entry.S").Output()
			if err != nil {
				t.Fatalf("tar %s: %v", tarball, err)
			}
			var names []string
			for _, m := range a64AsmNokprobe.FindAllStringSubmatch(string(src), -1) {
				names = append(names, m[1])
			}
			if len(names) < 3 {
				t.Fatalf("%s: entry.S has %d NOKPROBE uses", tarball, len(names))
			}
			f, err := openImage(deb, ks)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tabs, err := kimage.KernelTables(f)
			if err != nil {
				t.Fatal(err)
			}
			inRanges := func(rs []kimage.Range, a uint64) bool {
				for _, r := range rs {
					if a >= r.Start && a < r.End {
						return true
					}
				}
				return false
			}
			text := append(tabs.CoreText.Ranges.Ranges(), tabs.InitText.Ranges.Ranges()...)
			bl := tabs.KprobeBlacklist.Ranges.Ranges()
			var want []string
			for _, n := range names {
				s, ok := f.Symbols.ByName(n)
				if !ok {
					t.Logf("%s: not in kallsyms (the kernel skips what kallsyms cannot size)", n)
					continue
				}
				if !inRanges(text, s.Addr) {
					t.Logf("%s at %#x: outside core and init text (the kernel skips it)", n, s.Addr)
					continue
				}
				want = append(want, n)
				if !inRanges(bl, s.Addr) {
					t.Errorf("%s: NOKPROBE(%s) in entry.S, not in kboost's blacklist (%s)", v, n, tabs.KprobeBlacklist.From)
				}
			}
			if len(want) < 3 {
				t.Fatalf("%s: only %d of entry.S's NOKPROBE functions are in text", v, len(want))
			}
			t.Logf("%s: %d NOKPROBE uses in entry.S, %d in text, all checked against %d blacklisted functions (%v)", v, len(names), len(want), len(bl), time.Since(start).Round(time.Second))
			// The booted kernel's own list, when a record is cached.
			recs, _ := filepath.Glob(filepath.Join(vm.CacheDir(), "verify", strings.TrimSuffix(filepath.Base(deb), ".deb")+"-*.json"))
			for _, p := range recs {
				b, err := os.ReadFile(p)
				var rep guest.ARM64Report
				if err != nil || json.Unmarshal(b, &rep) != nil || rep.Blacklist == "" {
					continue
				}
				live := map[string]bool{}
				for _, e := range loader.ParseBlacklist([]byte(rep.Blacklist)) {
					live[e.Symbol] = true
				}
				for _, n := range want {
					if !live[n] {
						t.Errorf("%s: %s in text and in entry.S's NOKPROBE list, not in the booted kernel's blacklist (%s)", v, n, p)
					}
				}
				t.Logf("%s: the booted kernel's blacklist (%s) has all %d", v, filepath.Base(p), len(want))
			}
		})
	}
}
