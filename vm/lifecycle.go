package vm

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// ProbeLifecycle boots the kernel of deb with the "probe-lifecycle" step: the
// loader's live predictions for points against the kernel's answers, the perf
// PMU path, and killing a watcher (perf and tracefs) followed by a sweep. With
// args.CLI it then runs the "probe-cli" step in the same boot (kboost's probe
// commands, the kboost binary run in the guest: Run packs it at
// guest.KboostPath) and fills in Lifecycle.CLI.
func ProbeLifecycle(ctx context.Context, deb string, args guest.LifecycleArgs, cfg Config) (*guest.Lifecycle, error) {
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		return nil, err
	}
	vml, err := kimage.ExtractVmlinux(dk.Vmlinuz)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kboost-lifecycle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg.Kernel = dir + "/vmlinuz"
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return nil, err
	}
	args.Vmlinux = "/boot/vmlinux-" + dk.Version
	args.Config = "/boot/config-" + dk.Version
	cfg.Files = append(append([]File{}, cfg.Files...),
		File{Name: args.Vmlinux, Data: vml},
		File{Name: args.Config, Data: dk.Config})
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Minute
		if args.CLI != nil {
			cfg.Timeout = 20 * time.Minute
		}
	}
	cfg.Append = append(cfg.Append, "rcupdate.rcu_expedited=1")
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	steps := []guest.Step{{Name: "probe-lifecycle", Args: raw}}
	if args.CLI != nil {
		c := *args.CLI
		c.Config = args.Config
		craw, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		steps = append(steps, guest.Step{Name: "probe-cli", Args: craw})
	}
	res, err := Run(ctx, cfg, steps...)
	if err != nil {
		return nil, err
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	var lc guest.Lifecycle
	if err := json.Unmarshal(res.Files["probe-lifecycle.json"], &lc); err != nil {
		return nil, &ProtocolError{Reason: "probe-lifecycle.json: " + err.Error()}
	}
	if args.CLI != nil {
		lc.CLI = new(guest.CLIReport)
		if err := json.Unmarshal(res.Files["probe-cli.json"], lc.CLI); err != nil {
			return nil, &ProtocolError{Reason: "probe-cli.json: " + err.Error()}
		}
	}
	return &lc, nil
}
