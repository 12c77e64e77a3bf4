package vm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// UprobeTrialBin is where UprobeTrials puts the probed program in the guest.
const UprobeTrialBin = "/bin/kboost-uprobe-trial"

// UprobeTrialRequest asks for the "uprobe-trial" step: Bin (a static program
// of uprobe's trial protocol for the guest's architecture, on the host) is
// copied into the initramfs as UprobeTrialBin and probed at every point of
// Args (Args.Bin is set). A verification runs it after its own step, in the
// same boot (VerifyConfig.Uprobes, ARM64VerifyConfig.Uprobes).
type UprobeTrialRequest struct {
	Bin  string
	Args guest.UprobeArgs
}

// step adds the program to cfg's files and returns the guest step.
func (u *UprobeTrialRequest) step(cfg *Config) (guest.Step, error) {
	prog, err := os.ReadFile(u.Bin)
	if err != nil {
		return guest.Step{}, err
	}
	args := u.Args
	args.Bin = UprobeTrialBin
	raw, err := json.Marshal(args)
	if err != nil {
		return guest.Step{}, err
	}
	cfg.Files = append(append([]File{}, cfg.Files...), File{Name: args.Bin, Mode: 0o755, Data: prog}, File{Name: "/tmp/.keep"})
	return guest.Step{Name: "uprobe-trial", Args: raw}, nil
}

// cacheKey names the request for a records cache: the program's SHA-256
// and the points (what the guest's kernel is asked; the model that judges
// its answers is applied on every use).
func (u *UprobeTrialRequest) cacheKey() ([]byte, error) {
	prog, err := os.ReadFile(u.Bin)
	if err != nil {
		return nil, err
	}
	args := u.Args
	args.Bin = UprobeTrialBin
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256(prog)
	return fmt.Appendf(nil, "uprobe-trial %x %s", h, raw), nil
}

// uprobeReport decodes the step's uprobe-trial.json from a run's result
// and checks that it comes from the kernel release that booted.
func uprobeReport(res *Result, release string) (*guest.UprobeReport, error) {
	b, ok := res.Files["uprobe-trial.json"]
	if !ok {
		return nil, &ProtocolError{Reason: "no uprobe-trial.json in the result"}
	}
	var rep guest.UprobeReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, &ProtocolError{Reason: "uprobe-trial.json: " + err.Error()}
	}
	if release != "" && rep.Release != release {
		return nil, &ProtocolError{Reason: fmt.Sprintf("uprobe-trial.json from release %q, the boot's is %q", rep.Release, release)}
	}
	return &rep, nil
}

// uprobeTimeout is what the uprobe-trial step adds to a run's default
// timeout (one process per point under TCG).
const uprobeTimeout = 15 * time.Minute

// UprobeTrials boots the kernel of the Debian package deb with the
// "uprobe-trial" step alone: bin is probed at every point of args, one
// process each, and the guest reports what its kernel did (errno, the
// site's bytes, the [uprobes] and [uprobes-trampoline] mappings, hits).
// cfg.Arch (AMD64 when nil) must be the package's. A verification of the
// same kernel runs the step in its own boot instead (VerifyConfig.Uprobes).
func UprobeTrials(ctx context.Context, deb, bin string, args guest.UprobeArgs, cfg Config) (*guest.UprobeReport, Timing, error) {
	dk, err := kimage.ReadDeb(deb)
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
	step, err := (&UprobeTrialRequest{Bin: bin, Args: args}).step(&cfg)
	if err != nil {
		return nil, Timing{}, err
	}
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = uprobeTimeout + 5*time.Minute
	}
	res, err := Run(ctx, cfg, step)
	if err != nil {
		return nil, Timing{}, err
	}
	if err := res.Err(); err != nil {
		return nil, res.Timing, err
	}
	rep, err := uprobeReport(res, "")
	if err != nil {
		return nil, res.Timing, err
	}
	return rep, res.Timing, nil
}
