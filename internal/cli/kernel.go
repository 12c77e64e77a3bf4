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

// fetchKernelFiles fetches a Debian kernel (cached), extracts its vmlinux and
// config next to it, and unless noBoot gets its full kallsyms by booting it.
func fetchKernelFiles(ctx context.Context, meta string, noBoot bool) (*KernelFiles, error) {
	deb, err := kimage.FetchDebianKernel(ctx, meta)
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(filepath.Base(deb), ".deb")
	dir := filepath.Join(kimage.CacheDir(), "vmlinux")
	kf := &KernelFiles{Deb: deb, Vmlinux: filepath.Join(dir, base+".elf"), Config: filepath.Join(dir, base+".config")}
	if _, err := os.Stat(kf.Vmlinux); err != nil {
		dk, err := kimage.ReadDeb(deb)
		if err != nil {
			return nil, err
		}
		elf, err := kimage.ExtractVmlinux(dk.Vmlinuz)
		if err != nil {
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
		if kf.Kallsyms, err = vm.DebianKallsyms(ctx, meta); err != nil {
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
	fetch := &cobra.Command{
		Use:   "fetch META",
		Short: "Download a Debian kernel package, extract vmlinux and config, get kallsyms by booting it",
		Long: `Download the current kernel of a Debian meta package (linux-image-amd64,
linux-image-686) with apt-get, extract its vmlinux and config, and boot it once
under QEMU with nokaslr to read its full /proc/kallsyms (Debian ships no real
System.map). Everything is cached in $KBOOST_CACHE (default ~/.cache/kboost).
Then: kboost audit VMLINUX --symbols KALLSYMS --config CONFIG.`,
		Example: "  kboost kernel fetch linux-image-amd64\n  eval \"$(kboost kernel fetch linux-image-amd64 --shell)\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			kf, err := fetchKernelFiles(ctx, args[0], noBoot)
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
	fetch.Flags().BoolVar(&noBoot, "no-boot", false, "do not boot the kernel for kallsyms")
	cmd.AddCommand(fetch)
	return cmd
}
