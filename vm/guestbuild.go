package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kboost/kboost/vm/guest"
)

// DefaultGuestPackage is the Go package built as the guest's /init.
const DefaultGuestPackage = "github.com/kboost/kboost/cmd/kboost-guest"

// DefaultKboostPackage is the kboost command, built for the guest when a step
// runs it (guest.NeedsKboost).
const DefaultKboostPackage = "github.com/kboost/kboost/cmd/kboost"

// kboostFiles is the kboost binary at guest.KboostPath when one of steps
// runs it, else nothing: the guest's /init does not link the CLI.
func kboostFiles(ctx context.Context, cfg *Config, arch *Arch, steps []guest.Step) ([]File, error) {
	if !slices.ContainsFunc(steps, func(s guest.Step) bool { return guest.NeedsKboost(s.Name) }) {
		return nil, nil
	}
	p := cfg.KboostBinary
	if p == "" {
		p = os.Getenv("KBOOST_GUEST_KBOOST")
	}
	if p == "" {
		var err error
		if p, err = BuildGuest(ctx, DefaultKboostPackage, arch); err != nil {
			return nil, err
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("vm: kboost binary for the guest: %w", err)
	}
	return []File{{Name: guest.KboostPath, Mode: 0o755, Data: b}}, nil
}

// GoBuildError reports a failed `go list` or `go build` of the guest.
type GoBuildError struct {
	Package string
	Arch    string
	Output  string
	Err     error
}

func (e *GoBuildError) Error() string {
	return fmt.Sprintf("vm: building guest %s for %s: %v\n%s\n(run inside the kboost module, or set Config.GuestBinary to a prebuilt static binary)",
		e.Package, e.Arch, e.Err, strings.TrimSpace(e.Output))
}

func (e *GoBuildError) Unwrap() error { return e.Err }

// BuildGuest builds pkg as a static Linux binary for arch (CGO_ENABLED=0) and
// returns its path in the cache. The cache key hashes the Go version, the target and
// every non-standard-library source file pkg depends on, so an unchanged guest is
// not rebuilt. The go command runs in the current directory, which must be inside
// a module that provides pkg.
func BuildGuest(ctx context.Context, pkg string, arch *Arch) (string, error) {
	goBin, err := goTool()
	if err != nil {
		return "", &GoBuildError{Package: pkg, Arch: arch.Name, Err: err}
	}
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch.GOARCH)
	if arch.GOARM != "" {
		env = append(env, "GOARM="+arch.GOARM)
	}
	key, err := guestKey(ctx, goBin, env, pkg, arch)
	if err != nil {
		return "", err
	}
	out := filepath.Join(CacheDir(), "guest", fmt.Sprintf("%s-%s-%s", path.Base(pkg), arch.Name, key[:20]))
	if st, err := os.Stat(out); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp := out + fmt.Sprintf(".tmp%d", os.Getpid())
	defer os.Remove(tmp)
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", tmp, pkg)
	cmd.Env = env
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", &GoBuildError{Package: pkg, Arch: arch.Name, Output: string(b), Err: err}
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	pruneGuests(out)
	return out, nil
}

// pruneGuests removes builds of the same package and architecture older than a
// day, so that the cache does not grow with every change to the guest's sources.
func pruneGuests(keep string) {
	prefix := keep[:strings.LastIndexByte(keep, '-')+1]
	old, _ := filepath.Glob(prefix + "*")
	for _, p := range old {
		if st, err := os.Stat(p); err == nil && p != keep && time.Since(st.ModTime()) > 24*time.Hour {
			os.Remove(p)
		}
	}
}

func goTool() (string, error) {
	p, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("go command not found in PATH")
	}
	return p, nil
}

type listedPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	SFiles     []string
	EmbedFiles []string
	Module     *struct{ Path, Version, GoMod string }
}

func guestKey(ctx context.Context, goBin string, env []string, pkg string, arch *Arch) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, "list", "-deps", "-json=ImportPath,Dir,Standard,GoFiles,SFiles,EmbedFiles,Module", pkg)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", &GoBuildError{Package: pkg, Arch: arch.Name, Output: stderr.String(), Err: err}
	}
	ver, err := exec.CommandContext(ctx, goBin, "env", "GOVERSION").Output()
	if err != nil {
		return "", &GoBuildError{Package: pkg, Arch: arch.Name, Err: err}
	}
	h := sha256.New()
	fmt.Fprintf(h, "kboost-guest v1\n%s\n%s %s %s\n", bytes.TrimSpace(ver), arch.GOARCH, arch.GOARM, pkg)
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return "", &GoBuildError{Package: pkg, Arch: arch.Name, Err: err}
		}
		if p.Standard {
			continue // fixed by GOVERSION
		}
		fmt.Fprintf(h, "pkg %s\n", p.ImportPath)
		if p.Module != nil && p.Module.Version != "" {
			fmt.Fprintf(h, "mod %s %s\n", p.Module.Path, p.Module.Version)
			continue // a versioned module is immutable
		}
		files := append(append(append([]string{}, p.GoFiles...), p.SFiles...), p.EmbedFiles...)
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				return "", &GoBuildError{Package: pkg, Arch: arch.Name, Err: err}
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(h, "file %s %s\n", f, hex.EncodeToString(sum[:]))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
