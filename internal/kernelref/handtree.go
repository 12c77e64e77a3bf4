package kernelref

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A hand tree is a kernel version no Debian suite carries (6.18): the files an
// oracle needs, fetched by hand from a public copy of the kernel and placed at
// their tree paths under CacheDir/hand/linux-V, with a PROVENANCE file saying
// where they came from (repository, commit, how the version was proved). The
// golden tables made from one record that text and the sha256 of every input,
// so CI, which has no copy, still knows exactly what the table was compiled
// from; the tables' freshness tests run wherever the files are in place.

// ErrNoHandTree reports that the hand-fetched files of a kernel version are
// not in place.
var ErrNoHandTree = errors.New("hand-fetched kernel files not in place")

// ProvenanceFile names the provenance text in a hand tree.
const ProvenanceFile = "PROVENANCE"

// HandTree returns the hand tree of kernel version v (CacheDir/hand/linux-V)
// and its provenance text, or ErrNoHandTree when it is not in place.
func HandTree(opts Options, v string) (dir, provenance string, err error) {
	opts.Version, opts.Tarball = "", "" // only the cache directory is needed
	opts, err = opts.withDefaults()
	if err != nil {
		return "", "", err
	}
	dir = filepath.Join(opts.CacheDir, "hand", "linux-"+v)
	b, err := os.ReadFile(filepath.Join(dir, ProvenanceFile))
	if err != nil {
		return dir, "", fmt.Errorf("%s: no %s: %w", dir, ProvenanceFile, ErrNoHandTree)
	}
	return dir, string(b), nil
}

// treeSource is prepareSource for a tree already on disk: every member must be
// there (directories are not supported); the cache key hashes their contents.
func treeSource(opts Options, set sourceSet) (*source, error) {
	h := sha256.New()
	io.WriteString(h, set.keyTag)
	for _, m := range set.members {
		if strings.HasSuffix(m, "/") {
			return nil, fmt.Errorf("%s: directory member %s: a hand tree holds files only", opts.Tree, m)
		}
		b, err := os.ReadFile(filepath.Join(opts.Tree, filepath.FromSlash(m)))
		if err != nil {
			return nil, fmt.Errorf("%s: %v: %w", opts.Tree, err, ErrNoHandTree)
		}
		fmt.Fprintf(h, "%s|%d|", m, len(b))
		h.Write(b)
	}
	key := "tree-" + hex.EncodeToString(h.Sum(nil))[:16]
	version, err := kernelVersion(filepath.Join(opts.Tree, "Makefile"))
	if err != nil {
		return nil, err
	}
	return &source{tree: opts.Tree, version: version, key: key, root: filepath.Join(opts.CacheDir, "kernelref")}, nil
}

// treeInputs returns "SHA256  PATH" for each member of a tree, in members' order.
func treeInputs(tree string, members []string) ([]string, error) {
	var out []string
	for _, m := range members {
		b, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(m)))
		if err != nil {
			return nil, err
		}
		s := sha256.Sum256(b)
		out = append(out, hex.EncodeToString(s[:])+"  "+m)
	}
	return out, nil
}

// GoldenInputs is what a golden table made from a hand tree says it was
// compiled from: the provenance lines (key: value) and the sha256 of each input
// path.
type GoldenInputs struct {
	Provenance map[string]string
	SHA256     map[string]string
}

var (
	goldenProvLine  = regexp.MustCompile(`^#   ([a-z-]+): (.+)$`)
	goldenInputLine = regexp.MustCompile(`^#   ([0-9a-f]{64})  (\S+)$`)
)

// ReadGoldenInputs parses the header of a golden table made from a hand tree.
func ReadGoldenInputs(r io.Reader) (*GoldenInputs, error) {
	g := &GoldenInputs{Provenance: map[string]string{}, SHA256: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "#") {
			break
		}
		if m := goldenInputLine.FindStringSubmatch(l); m != nil {
			g.SHA256[m[2]] = m[1]
		} else if m := goldenProvLine.FindStringSubmatch(l); m != nil {
			g.Provenance[m[1]] = m[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(g.SHA256) == 0 {
		return nil, fmt.Errorf("no input sha256 lines in the header: %w", ErrSyntax)
	}
	return g, nil
}

// A64HandMembers are the kernel files an arm64 golden table made from a hand
// tree lists with their sha256.
func A64HandMembers() []string { return append([]string(nil), sourceMembersA64...) }
