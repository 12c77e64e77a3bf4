package vm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultKernelSource is Debian's linux-source-6.1 tarball (apt-get install
// linux-source-6.1).
const DefaultKernelSource = "/usr/src/linux-source-6.1.tar.xz"

// kbuildRecipe names the build procedure; changing how BuildBoostKernel builds
// changes it, and so every cache key.
const kbuildRecipe = "kboost-kbuild-1: tinyconfig + scripts/config -e + olddefconfig; make bzImage"

// BoostKernelOptions is the configuration fragment of the boost-capable kernel:
// the options enabled on top of `make tinyconfig`. Each must be =y in the final
// .config or the build fails with a *KconfigError. PREEMPT_NONE leaves
// CONFIG_PREEMPTION off, which is what compiles kprobes' boosting in.
var BoostKernelOptions = []string{
	// The machine and the guest's needs.
	"64BIT", "PRINTK", "TTY", "SERIAL_8250", "SERIAL_8250_CONSOLE",
	"BLK_DEV_INITRD", "RD_GZIP", "BINFMT_ELF", "PROC_FS", "SYSFS", "SYSCTL",
	"PROC_SYSCTL", "DEVTMPFS", "ACPI", "MULTIUSER",
	// A static Go /init dies at start without these.
	"EVENTFD", "EPOLL", "FUTEX", "TIMERFD", "SIGNALFD",
	// Kprobes with boosting, optimization and ftrace sites.
	"MODULES", "KPROBES", "KPROBE_EVENTS", "OPTPROBES", "KPROBES_ON_FTRACE",
	"PREEMPT_NONE", "PERF_EVENTS", "DEBUG_FS", "FTRACE", "TRACING",
	"FUNCTION_TRACER", "DYNAMIC_FTRACE",
	// What the guest reads: symbols with data, kernel memory.
	"KALLSYMS", "KALLSYMS_ALL", "PROC_KCORE",
}

// boostKernelForbidden must not be =y in the final .config.
var boostKernelForbidden = []string{"PREEMPTION", "RANDOMIZE_BASE"}

// KbuildOptions tunes BuildBoostKernel; the zero value builds DefaultKernelSource
// into CacheDir()/kbuild with one job per CPU.
type KbuildOptions struct {
	Source   string    // kernel source tarball (DefaultKernelSource when "")
	CacheDir string    // cache root (CacheDir()+"/kbuild" when "")
	Jobs     int       // make -j (runtime.NumCPU() when 0)
	Log      io.Writer // build output as it happens (nil: kept only in build.log)
}

// KernelBuild is a built (or cached) boost-capable kernel.
type KernelBuild struct {
	Dir       string        // the cache entry
	BzImage   string        // Dir/bzImage: what QEMU boots
	Vmlinux   string        // Dir/vmlinux: the ELF image with symbols
	SystemMap string        // Dir/System.map
	Config    string        // Dir/config: the final .config
	Release   string        // `make kernelrelease`, e.g. "6.1.158"
	Cached    bool          // true when no build ran
	Duration  time.Duration // time spent building (0 when cached)
}

// kbuildArtifacts are the files of a cache entry: name in the entry, path in the
// build tree.
var kbuildArtifacts = [][2]string{
	{"bzImage", "arch/x86/boot/bzImage"},
	{"vmlinux", "vmlinux"},
	{"System.map", "System.map"},
	{"config", ".config"},
	{"release", "include/config/kernel.release"},
}

// KbuildKey is the cache key of a build: the SHA-256 of the recipe, the
// configuration fragment, and the source tarball's name, size and modification
// time.
func KbuildKey(source string, options []string) (string, error) {
	st, err := os.Stat(source)
	if err != nil {
		return "", &KbuildDepsError{Missing: []string{source}, Packages: []string{"linux-source-6.1"}, Err: err}
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%d\n%d\n", kbuildRecipe, filepath.Base(source), st.Size(), st.ModTime().UnixNano())
	for _, o := range options {
		fmt.Fprintf(h, "CONFIG_%s=y\n", o)
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// loadKernelBuild returns the cache entry in dir if it is complete.
func loadKernelBuild(dir string) (*KernelBuild, bool) {
	for _, a := range kbuildArtifacts {
		if st, err := os.Stat(filepath.Join(dir, a[0])); err != nil || st.Size() == 0 {
			return nil, false
		}
	}
	rel, err := os.ReadFile(filepath.Join(dir, "release"))
	if err != nil {
		return nil, false
	}
	return &KernelBuild{
		Dir:       dir,
		BzImage:   filepath.Join(dir, "bzImage"),
		Vmlinux:   filepath.Join(dir, "vmlinux"),
		SystemMap: filepath.Join(dir, "System.map"),
		Config:    filepath.Join(dir, "config"),
		Release:   strings.TrimSpace(string(rel)),
		Cached:    true,
	}, true
}

// checkKconfig returns the options of want that are not =y, and the options of
// forbid that are, in the .config text.
func checkKconfig(config string, want, forbid []string) (missing, present []string) {
	set := map[string]bool{}
	for _, line := range strings.Split(config, "\n") {
		if name, ok := strings.CutSuffix(strings.TrimSpace(line), "=y"); ok {
			set[strings.TrimPrefix(name, "CONFIG_")] = true
		}
	}
	for _, o := range want {
		if !set[o] {
			missing = append(missing, o)
		}
	}
	for _, o := range forbid {
		if set[o] {
			present = append(present, o)
		}
	}
	return missing, present
}

// KbuildDepsError reports build tools or headers that are missing.
type KbuildDepsError struct {
	Missing  []string // tools or files
	Packages []string // Debian packages providing them
	Err      error    // underlying error, if any
}

func (e *KbuildDepsError) Error() string {
	return fmt.Sprintf("vm: cannot build the boost kernel: missing %s: install them with `apt-get install %s`",
		strings.Join(e.Missing, ", "), strings.Join(e.Packages, " "))
}

func (e *KbuildDepsError) Unwrap() error { return e.Err }

// KconfigError reports a configuration that did not come out as required
// (an option's dependency is missing in this kernel version).
type KconfigError struct {
	Missing []string // required options not =y after olddefconfig
	Present []string // forbidden options that are =y
	Config  string   // path of the .config kept for inspection
}

func (e *KconfigError) Error() string {
	msg := "vm: boost kernel configuration is wrong after `make olddefconfig`:"
	if len(e.Missing) > 0 {
		msg += " not =y: CONFIG_" + strings.Join(e.Missing, ", CONFIG_") + ";"
	}
	if len(e.Present) > 0 {
		msg += " must be off: CONFIG_" + strings.Join(e.Present, ", CONFIG_") + ";"
	}
	return msg + " see " + e.Config + " (an unmet dependency: add it to BoostKernelOptions)"
}

// KbuildError reports a build step that failed.
type KbuildError struct {
	Step string   // "extract", "tinyconfig", "make bzImage", ...
	Log  string   // the full build log
	Tail []string // its last lines
	Err  error
}

func (e *KbuildError) Error() string {
	return fmt.Sprintf("vm: boost kernel build: %s: %v (log %s)\nlast lines:\n%s", e.Step, e.Err, e.Log, indent(e.Tail))
}

func (e *KbuildError) Unwrap() error { return e.Err }
