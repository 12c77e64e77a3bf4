package kimage

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kboost/kboost/internal/kernelref"
	"github.com/kboost/kboost/kimage/internal/cpuspec"
)

// cpuSources are the files of a kernel tree the CPU table oracles read.
// (tar reports a pattern matching only members an earlier one took as not
// found: each file once.)
var cpuSources = []string{"Makefile", "arch/arm64/tools/cpucaps", "arch/arm64/kernel/cpufeature.c", "arch/arm64/kernel/cpu_errata.c",
	"arch/x86/include/asm/*features*.h", "arch/x86/kernel/cpu/mkcapflags.sh"}

var cpuTrees struct {
	sync.Mutex
	dirs map[string][2]string
}

// cpuSourceTree unpacks cpuSources of Debian's linux-source-v once per test
// binary (each tarball takes a minute to decompress) and returns the
// tarball and the directory.
func cpuSourceTree(t *testing.T, v string) (tarball, dir string) {
	t.Helper()
	cpuTrees.Lock()
	defer cpuTrees.Unlock()
	if d, ok := cpuTrees.dirs[v]; ok {
		return d[0], d[1]
	}
	tarball, err := kernelref.SourceTarball(kernelref.Options{}, v)
	if err != nil {
		t.Fatal(err)
	}
	// Kept in the cache, keyed by the tarball's size and time.
	st, err := os.Stat(tarball)
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(CacheDir(), "cpusrc", fmt.Sprintf("linux-source-%s-%d-%d", v, st.Size(), st.ModTime().Unix()))
	if _, err := os.Stat(filepath.Join(dir, "Makefile")); err != nil {
		start := time.Now()
		tmp := dir + ".tmp"
		os.RemoveAll(tmp)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := cpuspec.Unpack(tarball, tmp, cpuSources...); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatal(err)
		}
		t.Logf("unpacked %s into %s (%v)", tarball, dir, time.Since(start).Round(time.Second))
	}
	if cpuTrees.dirs == nil {
		cpuTrees.dirs = map[string][2]string{}
	}
	cpuTrees.dirs[v] = [2]string{tarball, dir}
	return tarball, dir
}

// TestOracleCPUSpecsFromSource derives each spec file again from that
// version's Debian source (the checked-in spec must be what the extractor
// makes of it).
func TestOracleCPUSpecsFromSource(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (reads Debian's linux-source-6.1, -6.12 and -7.2 tarballs; fetches 7.2's)")
	}
	for _, v := range []string{"6.1", "6.12", "7.2"} {
		for _, arch := range []string{"arm64", "x86"} {
			t.Run(v+"/"+arch, func(t *testing.T) {
				tarball, dir := cpuSourceTree(t, v)
				s, err := cpuspec.ExtractDir(dir, arch)
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				s.Write(&b)
				name := "spec/a64-cpucaps-" + v + ".spec"
				if arch == "x86" {
					name = "spec/x86-cpufeatures-" + v + ".spec"
				}
				have, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(have, b.Bytes()) {
					t.Errorf("%s differs from what %s gives: run `go run ./internal/cpuspec/cpugen -extract %s -arch %s -o %s` and `go generate ./kimage`", name, tarball, tarball, arch, name)
				}
			})
		}
	}
}

// TestOracleX86FeaturesCompiled checks every x86 feature table against the
// kernel's own build of it: the version's mkcapflags.sh writes the
// x86_cap_flags[]/x86_bug_flags[] arrays /proc/cpuinfo prints, the C
// compiler evaluates cpufeatures.h's bit numbers, and the program prints
// each name and each X86_FEATURE_*/X86_BUG_* value kboost's table has.
func TestOracleX86FeaturesCompiled(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (reads Debian's linux-source tarballs, compiles with gcc)")
	}
	for _, spec := range x86FeatureSpecs {
		v := kernelMajorMinor(spec.version)
		t.Run(v, func(t *testing.T) {
			start := time.Now()
			_, src := cpuSourceTree(t, v)
			dir := t.TempDir()
			if out, err := exec.Command("cp", "-r", filepath.Join(src, "arch"), dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v: %s", err, out)
			}
			inc := filepath.Join(dir, "arch/x86/include")
			capflags := filepath.Join(dir, "capflags.c")
			if out, err := exec.Command("sh", filepath.Join(dir, "arch/x86/kernel/cpu/mkcapflags.sh"), capflags,
				filepath.Join(inc, "asm/cpufeatures.h"), filepath.Join(inc, "asm/vmxfeatures.h")).CombinedOutput(); err != nil {
				t.Fatalf("mkcapflags.sh: %v: %s", err, out)
			}
			var c strings.Builder
			c.WriteString("#include <stdio.h>\n#include \"capflags.c\"\nint main(void) {\n")
			c.WriteString("\tfor (int i = 0; i < NCAPINTS*32; i++) if (x86_cap_flags[i]) printf(\"F %d %s\\n\", i, x86_cap_flags[i]);\n")
			c.WriteString("\tfor (int i = 0; i < NBUGINTS*32; i++) if (x86_bug_flags[i]) printf(\"F %d %s\\n\", NCAPINTS*32 + i, x86_bug_flags[i]);\n")
			c.WriteString("\tprintf(\"W %d %d\\n\", NCAPINTS, NBUGINTS);\n")
			for _, b := range spec.bits {
				m := "X86_FEATURE_" + b.name
				if b.bug {
					m = "X86_BUG_" + b.name
				}
				fmt.Fprintf(&c, "#ifdef %s\n\tprintf(\"M %s %%d\\n\", (int)(%s));\n#else\n\tprintf(\"U %s\\n\");\n#endif\n", m, m, m, m)
			}
			c.WriteString("\treturn 0;\n}\n")
			prog := filepath.Join(dir, "feat.c")
			if err := os.WriteFile(prog, []byte(c.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(dir, "feat")
			if out, err := exec.Command("gcc", "-I", inc, "-o", bin, prog).CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v: %s", err, out)
			}
			res, err := exec.Command(bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			names := map[int]string{}
			vals := map[string]int{}
			var undefined []string
			for _, l := range strings.Split(string(res), "\n") {
				f := strings.Fields(l)
				switch {
				case len(f) == 3 && f[0] == "F":
					n, _ := strconv.Atoi(f[1])
					names[n] = f[2]
				case len(f) == 3 && f[0] == "M":
					n, _ := strconv.Atoi(f[2])
					vals[f[1]] = n
				case len(f) == 3 && f[0] == "W":
					if f[1] != strconv.Itoa(spec.ncapints) || f[2] != strconv.Itoa(spec.nbugints) {
						t.Errorf("NCAPINTS, NBUGINTS = %s, %s; kboost %d, %d", f[1], f[2], spec.ncapints, spec.nbugints)
					}
				case len(f) == 2 && f[0] == "U":
					undefined = append(undefined, f[1])
				}
			}
			shown := 0
			for _, b := range spec.bits {
				m := "X86_FEATURE_" + b.name
				if b.bug {
					m = "X86_BUG_" + b.name
				}
				if n, ok := vals[m]; ok && n != int(b.bit) {
					t.Errorf("%s = %d in the compiled header, kboost %d", m, n, b.bit)
				}
				if _, ok := vals[m]; ok && names[int(b.bit)] != b.flag {
					t.Errorf("%s (bit %d): /proc/cpuinfo name %q by mkcapflags.sh, kboost %q", m, b.bit, names[int(b.bit)], b.flag)
				}
				if b.flag != "" {
					shown++
				}
			}
			// every name the kernel prints is in kboost's table
			flags := map[string]bool{}
			for _, b := range spec.bits {
				flags[b.flag] = true
			}
			for n, name := range names {
				if !flags[name] {
					t.Errorf("bit %d: the kernel prints %q, kboost's table lacks it", n, name)
				}
			}
			if len(undefined) > 0 {
				t.Logf("defined only under a configuration (not compiled here): %s", strings.Join(undefined, " "))
			}
			t.Logf("%s: %d bits (%d shown in /proc/cpuinfo), %d names printed by the kernel's arrays, agree (%v)", spec.version, len(spec.bits), shown, len(names), time.Since(start).Round(time.Millisecond))
		})
	}
}
