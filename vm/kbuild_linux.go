//go:build linux

package vm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// kbuildTools are the programs a kernel build runs, with their Debian packages.
var kbuildTools = [][2]string{
	{"tar", "tar"}, {"xz", "xz-utils"}, {"make", "make"}, {"gcc", "gcc"},
	{"ld", "binutils"}, {"perl", "perl"}, {"bc", "bc"}, {"bison", "bison"},
	{"flex", "flex"},
}

// kbuildHeaders are the headers the x86 build includes (objtool, sign-file).
var kbuildHeaders = [][2]string{
	{"/usr/include/gelf.h", "libelf-dev"},
	{"/usr/include/openssl/opensslv.h", "libssl-dev"},
}

// CheckKbuildDeps reports missing build tools and headers as a *KbuildDepsError
// naming the apt packages.
func CheckKbuildDeps() error {
	e := &KbuildDepsError{}
	for _, t := range kbuildTools {
		if _, err := exec.LookPath(t[0]); err != nil {
			e.Missing = append(e.Missing, t[0])
			e.Packages = append(e.Packages, t[1])
		}
	}
	for _, h := range kbuildHeaders {
		if _, err := os.Stat(h[0]); err != nil {
			e.Missing = append(e.Missing, h[0])
			e.Packages = append(e.Packages, h[1])
		}
	}
	if len(e.Missing) > 0 {
		return e
	}
	return nil
}

// BuildBoostKernel returns the boost-capable kernel built from opts.Source with
// BoostKernelOptions, building it unless the cache holds it. The cache entry is
// CacheDir/kbuild/<KbuildKey>/ with bzImage, vmlinux, System.map, config,
// release and build.log; a lock file next to it serializes concurrent builds. The
// source tree is unpacked in a temporary directory under the cache (never in the
// working directory) and removed afterwards.
func BuildBoostKernel(ctx context.Context, opts KbuildOptions) (*KernelBuild, error) {
	src := opts.Source
	if src == "" {
		src = DefaultKernelSource
	}
	root := opts.CacheDir
	if root == "" {
		root = filepath.Join(CacheDir(), "kbuild")
	}
	key, err := KbuildKey(src, BoostKernelOptions)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, key)
	if kb, ok := loadKernelBuild(dir); ok {
		return kb, nil
	}
	if err := CheckKbuildDeps(); err != nil {
		return nil, err
	}
	unlock, err := lockFile(dir + ".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	if kb, ok := loadKernelBuild(dir); ok { // built while we waited
		return kb, nil
	}
	t0 := time.Now()
	work, err := os.MkdirTemp(root, "build-"+key+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	logPath := filepath.Join(root, key+".build.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	var out io.Writer = logf
	if opts.Log != nil {
		out = io.MultiWriter(logf, opts.Log)
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.NumCPU()
	}
	tree := filepath.Join(work, "linux")
	if err := os.Mkdir(tree, 0o755); err != nil {
		return nil, err
	}
	run := func(step, dir string, name string, args ...string) error {
		fmt.Fprintf(out, "+ %s %s\n", name, strings.Join(args, " "))
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = out, out
		cmd.Env = append(os.Environ(), "KBUILD_BUILD_USER=kboost", "KBUILD_BUILD_HOST=kboost",
			"KBUILD_BUILD_TIMESTAMP=2024-01-01")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return &KbuildError{Step: step, Log: logPath, Err: err}
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-ctx.Done():
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			case <-done:
			}
		}()
		err := cmd.Wait()
		close(done)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			return &KbuildError{Step: step, Log: logPath, Tail: tailLines(logPath, 25), Err: err}
		}
		return nil
	}
	if err := run("extract", tree, "tar", "-xJf", src, "--strip-components=1"); err != nil {
		return nil, err
	}
	if err := run("tinyconfig", tree, "make", "tinyconfig"); err != nil {
		return nil, err
	}
	cfgArgs := []string{"--file", ".config"}
	for _, o := range BoostKernelOptions {
		cfgArgs = append(cfgArgs, "-e", o)
	}
	if err := run("scripts/config", tree, "./scripts/config", cfgArgs...); err != nil {
		return nil, err
	}
	if err := run("olddefconfig", tree, "make", "olddefconfig"); err != nil {
		return nil, err
	}
	cfgText, err := os.ReadFile(filepath.Join(tree, ".config"))
	if err != nil {
		return nil, err
	}
	if missing, present := checkKconfig(string(cfgText), BoostKernelOptions, boostKernelForbidden); len(missing)+len(present) > 0 {
		kept := filepath.Join(root, key+".config")
		_ = os.WriteFile(kept, cfgText, 0o644)
		return nil, &KconfigError{Missing: missing, Present: present, Config: kept}
	}
	if err := run("make bzImage", tree, "make", fmt.Sprintf("-j%d", jobs), "bzImage"); err != nil {
		return nil, err
	}
	// Assemble the entry beside its final place and rename it in, so a reader
	// never sees half of it.
	stage, err := os.MkdirTemp(root, "entry-"+key+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	for _, a := range kbuildArtifacts {
		if err := os.Rename(filepath.Join(tree, a[1]), filepath.Join(stage, a[0])); err != nil {
			return nil, &KbuildError{Step: "collect " + a[1], Log: logPath, Err: err}
		}
	}
	logf.Close()
	_ = copyFile(logPath, filepath.Join(stage, "build.log"))
	if err := os.Rename(stage, dir); err != nil {
		return nil, err
	}
	kb, ok := loadKernelBuild(dir)
	if !ok {
		return nil, &KbuildError{Step: "collect", Log: logPath, Err: fmt.Errorf("incomplete cache entry %s", dir)}
	}
	kb.Cached = false
	kb.Duration = time.Since(t0)
	return kb, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// tailLines returns the last n lines of the file at path.
func tailLines(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > 2*n {
			lines = append([]string(nil), lines[len(lines)-n:]...)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
