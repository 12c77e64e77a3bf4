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

// MonitorTrialBin is where MonitorTrial puts the traced program in the
// guest, and MonitorTrialDeny the file whose openat its policy denies.
const (
	MonitorTrialBin  = "/bin/kboost-monitor-trial"
	MonitorTrialDeny = "/tmp/kboost-monitor-deny"
)

// MonitorTrial boots the kernel of the Debian package deb with the
// "monitor-trial" step (package vm/guest/clistep, which cmd/kboost-guest
// links): bin, a static program for cfg.Arch, runs natively and under
// kboost's reference monitor, built for the guest's architecture, and the
// guest reports both outputs, the monitor's records and what was left
// running. bt holds command lines of programs already in cfg.Files (with
// the libraries they load) that the step then runs under the monitor with
// backtraces, in the same boot (guest.MonitorArgs.Backtrace).
func MonitorTrial(ctx context.Context, deb, bin string, bt [][]string, cfg Config) (*guest.MonitorReport, Timing, error) {
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		return nil, Timing{}, err
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return nil, Timing{}, err
	}
	dir, err := os.MkdirTemp("", "kboost-monitor-trial-")
	if err != nil {
		return nil, Timing{}, err
	}
	defer os.RemoveAll(dir)
	cfg.Kernel = filepath.Join(dir, "vmlinuz")
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return nil, Timing{}, err
	}
	cfg.Files = append(cfg.Files, File{Name: MonitorTrialBin, Mode: 0o755, Data: prog},
		File{Name: MonitorTrialDeny, Mode: 0o644, Data: []byte("denied\n")})
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Minute
	}
	raw, err := json.Marshal(guest.MonitorArgs{Bin: MonitorTrialBin, Deny: MonitorTrialDeny, Backtrace: bt})
	if err != nil {
		return nil, Timing{}, err
	}
	res, err := Run(ctx, cfg, guest.Step{Name: "monitor-trial", Args: raw})
	if err != nil {
		return nil, Timing{}, err
	}
	if err := res.Err(); err != nil {
		return nil, res.Timing, err
	}
	var rep guest.MonitorReport
	if err := json.Unmarshal(res.Files["monitor-trial.json"], &rep); err != nil {
		return nil, res.Timing, &ProtocolError{Reason: "monitor-trial.json: " + err.Error()}
	}
	return &rep, res.Timing, nil
}
