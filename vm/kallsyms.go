package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// KallsymsSteps is the "kallsyms" scenario: what a booted kernel says about itself.
var KallsymsSteps = []guest.Step{{Name: "uname"}, {Name: "features"}, {Name: "kallsyms"}, {Name: "config"}}

// KernelInfo is what the kallsyms scenario learns from a booted kernel.
type KernelInfo struct {
	Uname    guest.Uname
	Features guest.Features
	Kallsyms []byte // /proc/kallsyms as root, booted with nokaslr
	ConfigGz []byte // /proc/config.gz, nil when the kernel has none
	Guest    guest.GuestReport
	Timing   Timing
}

// KallsymsError reports a kallsyms dump that cannot be right.
type KallsymsError struct {
	Reason string
}

func (e *KallsymsError) Error() string { return "vm: implausible /proc/kallsyms: " + e.Reason }

// BootKallsyms boots cfg's kernel and runs KallsymsSteps.
func BootKallsyms(ctx context.Context, cfg Config) (*KernelInfo, error) {
	res, err := Run(ctx, cfg, KallsymsSteps...)
	if err != nil {
		return nil, err
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	ki := &KernelInfo{Kallsyms: res.Files["kallsyms.txt"], ConfigGz: res.Files["config.gz"], Guest: res.Guest, Timing: res.Timing}
	if err := json.Unmarshal(res.Files["uname.json"], &ki.Uname); err != nil {
		return nil, &ProtocolError{Reason: "uname.json: " + err.Error()}
	}
	if err := json.Unmarshal(res.Files["features.json"], &ki.Features); err != nil {
		return nil, &ProtocolError{Reason: "features.json: " + err.Error()}
	}
	if err := CheckKallsyms(ki.Kallsyms); err != nil {
		return nil, err
	}
	return ki, nil
}

// CheckKallsyms rejects text that is not a plausible full /proc/kallsyms: fewer
// than 1000 lines, lines kimage does not parse (the parser the audits and the
// guest read kallsyms with), or no non-zero address for _text or _stext.
func CheckKallsyms(b []byte) error {
	syms, err := kimage.ParseSymbolLines(b)
	if err != nil {
		return &KallsymsError{Reason: err.Error()}
	}
	text := false
	for _, s := range syms {
		if (s.Name == "_text" || s.Name == "_stext") && s.Addr != 0 {
			text = true
		}
	}
	if len(syms) < 1000 {
		return &KallsymsError{Reason: fmt.Sprintf("only %d lines", len(syms))}
	}
	if !text {
		return &KallsymsError{Reason: "no _text or _stext with a real address (addresses hidden?)"}
	}
	return nil
}

// KallsymsRecord is the JSON stored next to a cached kallsyms dump.
type KallsymsRecord struct {
	Deb       string         `json:"deb"`     // the package file the kernel came from
	Release   string         `json:"release"` // uname -r in the guest
	Version   string         `json:"version"` // uname -v
	Machine   string         `json:"machine"` // uname -m
	Lines     int            `json:"lines"`   // kallsyms lines
	ConfigGz  bool           `json:"config_gz"`
	Features  guest.Features `json:"features"`
	BootedAt  time.Time      `json:"booted_at"`
	BootTime  time.Duration  `json:"boot_ns"`  // QEMU start to result begin
	TotalTime time.Duration  `json:"total_ns"` // the whole run
	// GuestInit and GuestDone are the guest's uptime (seconds, guest clock) when
	// /init started and when its steps were done.
	GuestInit float64 `json:"guest_init_s"`
	GuestDone float64 `json:"guest_done_s"`
	Cmdline   string  `json:"cmdline"` // as the guest saw it
}

// KallsymsPaths returns where DebianKallsyms caches the dump for a package file:
// $KBOOST_CACHE/kallsyms/<package file name without .deb>.txt, with the
// KallsymsRecord in the .json beside it.
func KallsymsPaths(deb string) (txt, record string) {
	base := strings.TrimSuffix(filepath.Base(deb), ".deb")
	dir := filepath.Join(CacheDir(), "kallsyms")
	return filepath.Join(dir, base+".txt"), filepath.Join(dir, base+".json")
}

// DebianKallsyms returns the path of the full /proc/kallsyms of the current kernel
// of a Debian meta-package (linux-image-amd64, linux-image-686): it fetches the
// package with kimage.FetchDebianKernel, boots its kernel under QEMU with nokaslr,
// and caches the dump (see KallsymsPaths), so the addresses match the package's
// vmlinux. A cached dump is returned without booting.
func DebianKallsyms(ctx context.Context, meta string) (string, error) {
	arch, err := ArchForDebianMeta(meta)
	if err != nil {
		return "", err
	}
	deb, err := kimage.FetchDebianKernel(ctx, meta)
	if err != nil {
		return "", err
	}
	return DebKallsyms(ctx, deb, Config{Arch: arch})
}

// DebKallsyms is DebianKallsyms for a given package file; cfg chooses the
// architecture and QEMU settings, its Kernel is filled in from the package.
// A nil cfg.Arch is the package's own (its file name's _<arch>.deb), not
// AMD64: an arm64 Image given to qemu-system-x86_64 fails with "linux kernel
// too old to load a ram disk".
func DebKallsyms(ctx context.Context, deb string, cfg Config) (string, error) {
	if cfg.Arch == nil {
		cfg.Arch = debFileArch(deb)
	}
	txt, rec := KallsymsPaths(deb)
	if st, err := os.Stat(txt); err == nil && st.Size() > 0 {
		return txt, nil
	}
	unlock, err := lockFile(strings.TrimSuffix(txt, ".txt") + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if st, err := os.Stat(txt); err == nil && st.Size() > 0 {
		return txt, nil // another process booted it while we waited
	}
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "kboost-kernel-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cfg.Kernel = filepath.Join(dir, "vmlinuz-"+dk.Version)
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return "", err
	}
	started := time.Now()
	ki, err := BootKallsyms(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("booting %s: %w", filepath.Base(deb), err)
	}
	if dk.Version != "" && ki.Uname.Release != dk.Version {
		return "", fmt.Errorf("vm: booted %s but the guest says it runs %q", dk.Version, ki.Uname.Release)
	}
	r := KallsymsRecord{
		Deb: filepath.Base(deb), Release: ki.Uname.Release, Version: ki.Uname.Version,
		Machine: ki.Uname.Machine, Lines: bytes.Count(ki.Kallsyms, []byte("\n")),
		ConfigGz: ki.ConfigGz != nil, Features: ki.Features, BootedAt: started.UTC(),
		BootTime: ki.Timing.Boot, TotalTime: ki.Timing.Total,
		GuestInit: ki.Guest.UptimeStart, GuestDone: ki.Guest.UptimeEnd,
		Cmdline: ki.Guest.Cmdline,
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := writeFileAtomic(rec, append(j, '\n'), 0o644); err != nil {
		return "", err
	}
	if err := writeFileAtomic(txt, ki.Kallsyms, 0o644); err != nil {
		return "", err
	}
	return txt, nil
}

// debFileArch is the Arch of a package file named <name>_<version>_<arch>.deb,
// nil (AMD64) when the name says no known architecture.
func debFileArch(deb string) *Arch {
	base := strings.TrimSuffix(filepath.Base(deb), ".deb")
	a, err := LookupArch(base[strings.LastIndex(base, "_")+1:])
	if err != nil {
		return nil
	}
	return a
}
