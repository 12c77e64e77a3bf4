package vm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// UprobeTrialBin is where UprobeTrials puts the probed program in the guest.
const UprobeTrialBin = "/bin/kboost-uprobe-trial"

// UprobeTrials boots the kernel of the Debian package deb with the
// "uprobe-trial" step: bin (a static program of uprobe's trial protocol,
// copied into the initramfs as UprobeTrialBin) is probed at every point of
// args, one process each, and the guest reports what its kernel did (errno,
// the site's bytes, the [uprobes] and [uprobes-trampoline] mappings, hits).
// args.Bin is set; cfg.Arch (AMD64 when nil) must be the package's.
func UprobeTrials(ctx context.Context, deb, bin string, args guest.UprobeArgs, cfg Config) (*guest.UprobeReport, Timing, error) {
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		return nil, Timing{}, err
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return nil, Timing{}, err
	}
	dir, err := os.MkdirTemp("", "kboost-uprobe-trial-")
	if err != nil {
		return nil, Timing{}, err
	}
	defer os.RemoveAll(dir)
	cfg.Kernel = filepath.Join(dir, "vmlinuz")
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return nil, Timing{}, err
	}
	args.Bin = UprobeTrialBin
	cfg.Files = append(cfg.Files, File{Name: args.Bin, Mode: 0o755, Data: prog}, File{Name: "/tmp/.keep"})
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Minute
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, Timing{}, err
	}
	res, err := Run(ctx, cfg, guest.Step{Name: "uprobe-trial", Args: raw})
	if err != nil {
		return nil, Timing{}, err
	}
	if err := res.Err(); err != nil {
		return nil, res.Timing, err
	}
	var rep guest.UprobeReport
	if err := json.Unmarshal(res.Files["uprobe-trial.json"], &rep); err != nil {
		return nil, res.Timing, &ProtocolError{Reason: "uprobe-trial.json: " + err.Error()}
	}
	return &rep, res.Timing, nil
}
