package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm"
	"github.com/spf13/cobra"
)

// KernelFiles are the cached files of one Debian kernel package.
type KernelFiles struct {
	Deb      string `json:"deb"`
	Version  string `json:"version"`
	Vmlinux  string `json:"vmlinux"`
	Config   string `json:"config,omitempty"`
	Kallsyms string `json:"kallsyms,omitempty"`
}

// fetchKernelFiles fetches a Debian kernel (cached; version "" the meta
// package's current one, else the newest of that version), extracts its
// vmlinux and config next to it, and unless noBoot gets its full kallsyms by
// booting it.
func fetchKernelFiles(ctx context.Context, meta, version string, noBoot bool) (*KernelFiles, error) {
	var deb string
	var err error
	if version == "" {
		deb, err = kimage.FetchDebianKernel(ctx, meta)
	} else {
		deb, err = kimage.FetchDebianKernelVersion(ctx, meta, version)
	}
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(deb), ".deb")
	dir := filepath.Join(kimage.CacheDir(), "vmlinux")
	kf := &KernelFiles{Deb: deb, Vmlinux: filepath.Join(dir, base+".elf"), Config: filepath.Join(dir, base+".config")}
	// An arm64 package's kernel is an Image, audited as it is.
	if image := filepath.Join(dir, base+".Image"); fileExists(image) {
		kf.Vmlinux = image
	}
	if !fileExists(kf.Vmlinux) {
		dk, err := kimage.ReadDeb(deb)
		if err != nil {
			return nil, err
		}
		elf := dk.Vmlinuz
		if kimage.IsARM64Image(elf) {
			kf.Vmlinux = filepath.Join(dir, base+".Image")
		} else if elf, err = kimage.ExtractVmlinux(dk.Vmlinuz); err != nil {
			return nil, fmt.Errorf("%s: %w", deb, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if dk.Config != nil {
			if err := writeAtomic(kf.Config, dk.Config); err != nil {
				return nil, err
			}
		}
		if err := writeAtomic(kf.Vmlinux, elf); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(kf.Config); err != nil {
		kf.Config = ""
	}
	if f, err := kimage.Open(kf.Vmlinux); err == nil {
		kf.Version = f.KernelVersion
		f.Close()
	}
	if !noBoot {
		arch, err := vm.ArchForDebianMeta(meta)
		if err != nil {
			return nil, err
		}
		if kf.Kallsyms, err = vm.DebKallsyms(ctx, deb, vm.Config{Arch: arch}); err != nil {
			return nil, fmt.Errorf("kallsyms of %s: %w", meta, err)
		}
	}
	return kf, nil
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp" + fmt.Sprint(os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func newKernelCmd(s Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kernel",
		Short: "Fetch Debian kernels for offline audits (vmlinux, config, full kallsyms)",
	}
	var jsonOut, shell, noBoot bool
	var version string
	fetch := &cobra.Command{
		Use:   "fetch META",
		Short: "Download a Debian kernel package, extract vmlinux and config, get kallsyms by booting it",
		Long: `Download the current kernel of a Debian meta package (linux-image-amd64,
linux-image-686) with apt-get, extract its vmlinux and config, and boot it once
under QEMU with nokaslr to read its full /proc/kallsyms (Debian ships no real
System.map). Everything is cached in $KBOOST_CACHE (default ~/.cache/kboost).
--version 6.12 (or 7.2, or a full 6.12.117) fetches the newest package of
that version instead: from the system's apt sources, else from Debian trixie,
else unstable, read through apt configurations kept in $KBOOST_CACHE/apt (the
system's sources stay untouched). Debian 7.x splits a kernel into packages:
the image comes from linux-binary-<release>, the config from linux-base-<release>.
Then: kboost audit VMLINUX --symbols KALLSYMS --config CONFIG.`,
		Example: "  kboost kernel fetch linux-image-amd64\n  kboost kernel fetch linux-image-arm64 --version 7.2 --no-boot\n  eval \"$(kboost kernel fetch linux-image-amd64 --shell)\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			kf, err := fetchKernelFiles(ctx, args[0], version, noBoot)
			switch {
			case errors.Is(err, kimage.ErrUnknownPackage):
				return &UsageError{Msg: err.Error()}
			case err != nil && ctx.Err() != nil:
				return interrupted("kernel fetch")
			case err != nil:
				return err
			}
			switch {
			case jsonOut:
				return json.NewEncoder(s.Out).Encode(kf)
			case shell:
				fmt.Fprintf(s.Out, "KBOOST_DEB=%s\nKBOOST_VMLINUX=%s\nKBOOST_CONFIG=%s\nKBOOST_KALLSYMS=%s\n",
					shellQuote(kf.Deb), shellQuote(kf.Vmlinux), shellQuote(kf.Config), shellQuote(kf.Kallsyms))
			default:
				fmt.Fprintf(s.Out, "deb:      %s\nversion:  %s\nvmlinux:  %s\nconfig:   %s\nkallsyms: %s\n", kf.Deb, kf.Version, kf.Vmlinux, kf.Config, kf.Kallsyms)
			}
			return nil
		},
	}
	fetch.Flags().BoolVar(&jsonOut, "json", false, "print the paths as JSON")
	fetch.Flags().BoolVar(&shell, "shell", false, "print KBOOST_VMLINUX=... lines for eval")
	fetch.Flags().StringVar(&version, "version", "", "kernel version to fetch (6.12, 7.2, 6.12.117; default: the meta package's current kernel)")
	fetch.Flags().BoolVar(&noBoot, "no-boot", false, "do not boot the kernel for kallsyms")
	cmd.AddCommand(fetch)
	return cmd
}
