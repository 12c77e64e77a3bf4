package kernelref

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kboost/kboost/decode"
)

//go:embed csrc/kref.c
var krefC []byte

// DefaultTarball is where Debian's linux-source-6.1 package installs the source.
const DefaultTarball = "/usr/src/linux-source-6.1.tar.xz"

// ErrNoSource reports that the kernel source tarball is missing.
var ErrNoSource = errors.New("kernel source tarball not found (install it: apt-get install linux-source-6.1)")

// ErrTool reports that a host tool (tar, xz, awk, gcc) failed or is missing.
var ErrTool = errors.New("host tool failed")

// Options says where the source is and where to cache what is built from it.
type Options struct {
	// Tarball is the kernel source archive (.tar.xz); default $KBOOST_LINUX_SOURCE,
	// then DefaultTarball.
	Tarball string
	// Version, when Tarball is empty, names Debian's linux-source-Version
	// instead (found or fetched by SourceTarball).
	Version string
	// CacheDir holds the extracted files and the built oracle; default
	// $KBOOST_CACHE, then $HOME/.cache/kboost.
	CacheDir string
	// Tree, when set, is a kernel tree already on disk holding the files the
	// oracle needs at their paths (a hand tree, see HandTree); Tarball and
	// Version are then not used. Source sets with directory members (x86)
	// refuse one.
	Tree string
}

func (o Options) withDefaults() (Options, error) {
	if o.Tarball == "" && o.Version != "" && o.Tree == "" {
		t, err := SourceTarball(o, o.Version)
		if err != nil {
			return o, err
		}
		o.Tarball = t
	}
	if o.Tarball == "" {
		o.Tarball = os.Getenv("KBOOST_LINUX_SOURCE")
	}
	if o.Tarball == "" {
		o.Tarball = DefaultTarball
	}
	if o.CacheDir == "" {
		o.CacheDir = os.Getenv("KBOOST_CACHE")
	}
	if o.CacheDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return o, fmt.Errorf("no cache directory: set KBOOST_CACHE: %w", err)
		}
		o.CacheDir = filepath.Join(home, ".cache", "kboost")
	}
	return o, nil
}

// Build is a built oracle: where its files are and what kernel they came from.
type Build struct {
	Dir     string // holds kref64, kref32 and the generated sources
	Version string // kernel version from the top Makefile, e.g. "6.1.192"
	Tarball string
}

// Prepare extracts the needed kernel files (once per tarball) and builds the
// oracle programs (once per tarball and harness version), caching both.
func Prepare(opts Options) (*Build, error) {
	src, err := prepareSource(opts, x86Source)
	if err != nil {
		return nil, err
	}
	tree, version, srcKey, root := src.tree, src.version, src.key, src.root
	buildKey := shortHash(srcKey + "|" + string(krefC) + "|" + specFingerprint())
	dir := filepath.Join(root, "build-"+srcKey+"-"+buildKey)
	if err := ensureDir(dir, func(tmp string) error { return build(tree, tmp) }); err != nil {
		return nil, err
	}
	// Builds made by other harness versions from this tree are stale.
	old, _ := filepath.Glob(filepath.Join(root, "build-"+srcKey+"-*"))
	for _, o := range old {
		if o != dir && !strings.Contains(filepath.Base(o), ".tmp") {
			os.RemoveAll(o)
		}
	}
	return &Build{Dir: dir, Version: version, Tarball: src.tarball}, nil
}

// sourceSet names the part of the kernel tarball one oracle needs.
type sourceSet struct {
	keyTag  string   // prefix of the cache key
	dirTag  string   // prefix of the extraction directory under CacheDir/kernelref
	members []string // paths below the tree's top directory; a trailing "/" takes a directory
	anchor  string   // a member whose presence locates the tree
}

var x86Source = sourceSet{keyTag: "", dirTag: "src-", members: sourceMembers, anchor: "arch/x86/kernel/kprobes/core.c"}

// source is an extracted kernel tree.
type source struct {
	tree    string // top directory of the kernel tree
	version string // from its Makefile
	key     string // cache key of the tarball (name, size, mtime)
	root    string // CacheDir/kernelref
	tarball string
}

// prepareSource extracts set's members of opts.Tarball once per tarball
// into the cache and returns the tree.
func prepareSource(opts Options, set sourceSet) (*source, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if opts.Tree != "" {
		return treeSource(opts, set)
	}
	st, err := os.Stat(opts.Tarball)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Tarball, ErrNoSource)
	}
	// The members are part of the key: a tree extracted for a shorter list lacks files.
	key := shortHash(fmt.Sprintf("%s%s|%d|%d|%s", set.keyTag, opts.Tarball, st.Size(), st.ModTime().UnixNano(), strings.Join(set.members, ",")))
	root := filepath.Join(opts.CacheDir, "kernelref")
	srcDir := filepath.Join(root, set.dirTag+key)
	if err := ensureDir(srcDir, func(tmp string) error { return extractMembers(opts.Tarball, tmp, set.members) }); err != nil {
		return nil, err
	}
	m, _ := filepath.Glob(filepath.Join(srcDir, "*", filepath.FromSlash(set.anchor)))
	if len(m) != 1 {
		return nil, fmt.Errorf("%s: want one kernel tree with %s, found %d", srcDir, set.anchor, len(m))
	}
	tree := strings.TrimSuffix(m[0], string(filepath.Separator)+filepath.FromSlash(set.anchor))
	version, err := kernelVersion(filepath.Join(tree, "Makefile"))
	if err != nil {
		return nil, err
	}
	return &source{tree: tree, version: version, key: key, root: root, tarball: opts.Tarball}, nil
}

// fingerprint describes how gens cut the tree, for build cache keys.
func fingerprint(gens []genFile) string {
	var b strings.Builder
	for _, g := range gens {
		b.WriteString(g.name)
		for _, p := range g.pieces {
			fmt.Fprintf(&b, "|%s %d %s %s %d %v %v", p.file, p.kind, p.name, p.end, p.nth, p.fix != nil, p.optional)
		}
	}
	return b.String()
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:8])
}

func specFingerprint() string {
	return fingerprint(generated) + strings.Join(sourceMembers, ",")
}

// ensureDir creates dir by running fill on a temporary sibling and renaming it,
// so that concurrent or interrupted runs never see a half-made directory.
func ensureDir(dir string, fill func(tmp string) error) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp")
	if err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if _, serr := os.Stat(dir); serr == nil {
			return nil // another process made it first
		}
		return err
	}
	return nil
}

func run(dir string, stdout *os.File, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stdout = stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v: %s: %w", name, strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()), ErrTool)
	}
	return nil
}

// extractMembers unpacks members (under whatever top directory the archive
// has); a member ending in "/" is a directory.
func extractMembers(tarball, dir string, members []string) error {
	args := []string{"-xJf", tarball, "-C", dir, "--wildcards"}
	for _, m := range members {
		if strings.HasSuffix(m, "/") {
			args = append(args, "*/"+m+"*")
		} else {
			args = append(args, "*/"+m)
		}
	}
	return run(dir, nil, "tar", args...)
}

var makeVar = regexp.MustCompile(`(?m)^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION) = ?(.*)$`)

func kernelVersion(makefile string) (string, error) {
	b, err := os.ReadFile(makefile)
	if err != nil {
		return "", err
	}
	v := map[string]string{}
	for _, m := range makeVar.FindAllStringSubmatch(string(b), 4) {
		v[m[1]] = strings.TrimSpace(m[2])
	}
	if v["VERSION"] == "" || v["PATCHLEVEL"] == "" {
		return "", fmt.Errorf("%s: no VERSION/PATCHLEVEL", makefile)
	}
	s := v["VERSION"] + "." + v["PATCHLEVEL"]
	if v["SUBLEVEL"] != "" {
		s += "." + v["SUBLEVEL"]
	}
	return s + v["EXTRAVERSION"], nil
}

// checkSync verifies that the tools/ copies compiled here are the kernel's own.
func checkSync(tree string) error {
	for _, p := range syncPairs {
		a, err := syncLines(filepath.Join(tree, p[0]))
		if err != nil {
			return err
		}
		b, err := syncLines(filepath.Join(tree, p[1]))
		if err != nil {
			return err
		}
		if len(a) != len(b) {
			return fmt.Errorf("%s and %s differ in length", p[0], p[1])
		}
		for i := range a {
			if a[i] != b[i] {
				return fmt.Errorf("%s and %s differ at line %d", p[0], p[1], i+1)
			}
		}
	}
	return nil
}

func syncLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.Contains(l, "__ignore_sync_check__") {
			lines[i] = ""
		}
	}
	return lines, nil
}

// Generate writes the ex_*.{c,h} files cut from the kernel tree into dir.
func Generate(tree, dir string) error { return generateFiles(tree, dir, generated) }

// generateFiles writes the cut-out files of gens into dir: each piece cut
// from its kernel file, fixed by its fix, or noted as absent when optional.
func generateFiles(tree, dir string, gens []genFile) error {
	cache := map[string]string{}
	for _, g := range gens {
		var out strings.Builder
		out.WriteString("/* Cut from the kernel tree by kboost/internal/kernelref at build time. */\n")
		for _, p := range g.pieces {
			src, ok := cache[p.file]
			if !ok {
				b, err := os.ReadFile(filepath.Join(tree, p.file))
				if err != nil {
					return err
				}
				src = string(b)
				cache[p.file] = src
			}
			text, err := p.cut(src)
			if err != nil && p.optional && strings.Contains(err.Error(), "not found") {
				fmt.Fprintf(&out, "\n/* %s: %s: not in this kernel */\n", p.file, p.name)
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p.file, err)
			}
			if p.fix != nil {
				text = p.fix(text)
			}
			fmt.Fprintf(&out, "\n/* %s: %s */\n%s", p.file, p.name, text)
		}
		if err := os.WriteFile(filepath.Join(dir, g.name), []byte(out.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func build(tree, dir string) error {
	if err := checkSync(tree); err != nil {
		return err
	}
	if err := Generate(tree, dir); err != nil {
		return err
	}
	tables, err := os.Create(filepath.Join(dir, "inat-tables.c"))
	if err != nil {
		return err
	}
	err = run(tree, tables, "awk", "-f", "tools/arch/x86/tools/gen-insn-attr-x86.awk",
		"tools/arch/x86/lib/x86-opcode-map.txt")
	if cerr := tables.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "kref.c"), krefC, 0o644); err != nil {
		return err
	}
	common := []string{"-O1", "-Wall", "-Werror=implicit-function-declaration", "-Werror=incompatible-pointer-types", "-Wno-unused-function", "-Wno-unused-variable",
		"-I", dir,
		"-I", filepath.Join(tree, "tools/arch/x86/lib"),
		"-I", filepath.Join(tree, "tools/arch/x86/include"),
		"-I", filepath.Join(tree, "tools/include"),
	}
	variants := map[string][]string{
		"kref64": {"-DCONFIG_X86_64=1", "-DCONFIG_IA32_EMULATION=1"},
		"kref32": {"-DCONFIG_X86_32=1"},
	}
	for name, defs := range variants {
		args := append(append(append([]string{}, common...), defs...), "-o", filepath.Join(dir, name), filepath.Join(dir, "kref.c"))
		if err := run(dir, nil, "gcc", args...); err != nil {
			return err
		}
	}
	return nil
}

// errNotSupported reports that the running system cannot do what was asked (not
// Linux, or no uprobes).
var errNotSupported = fmt.Errorf("kernelref: %w", decode.ErrNotSupported)

// genFile is one source file the oracle build cuts from the kernel tree.
type genFile struct {
	name   string  // file name in the build directory
	pieces []piece // what goes into it, in order
}

// sourceName is the package-like name of a source tarball: its base name
// without .tar.xz.
func sourceName(tarball string) string {
	return strings.TrimSuffix(filepath.Base(tarball), ".tar.xz")
}
