package kimage

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/kernelref"
)

// TestOracleA64CapListsSource checks each cpucap numbering kboost knows
// against arch/arm64/tools/cpucaps of that version's Debian source (the file
// the kernel's build numbers its cpucaps from, one name a line, in order).
func TestOracleA64CapListsSource(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (reads Debian's linux-source-6.1, -6.12 and -7.2 tarballs; fetches 7.2's)")
	}
	for _, v := range []string{"6.1", "6.12", "7.2"} {
		t.Run(v, func(t *testing.T) {
			tarball, err := kernelref.SourceTarball(kernelref.Options{}, v)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			out, err := exec.Command("tar", "-xJOf", tarball, "--wildcards", "*/arch/arm64/tools/cpucaps").Output()
			if err != nil {
				t.Fatalf("tar %s: %v", tarball, err)
			}
			var src []string
			for _, l := range strings.Split(string(out), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					src = append(src, l)
				}
			}
			got := A64CapList(v)
			if !slices.Equal(got, src) {
				t.Errorf("cpucaps %s: kboost has %d names, %s has %d:\n kboost %v\n source %v", v, len(got), tarball, len(src), got, src)
			}
			t.Logf("%s: %d cpucaps, as %s (%v)", v, len(src), tarball, time.Since(start).Round(time.Second))
		})
	}
}
