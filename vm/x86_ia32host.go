package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"time"

	"github.com/kboost/kboost/kimage"
	"github.com/kboost/kboost/vm/guest"
)

// IA32NoEmulation is the kernel parameter (Linux 6.7 and later, with
// CONFIG_IA32_EMULATION_DEFAULT_DISABLED unset) that makes an amd64 kernel
// refuse 32-bit executables: execve returns ENOEXEC.
const IA32NoEmulation = "ia32_emulation=0"

// IA32Request names the host files the "ia32-refused" step runs.
type IA32Request struct {
	Static386 string      // a static i386 executable
	Tests     []IA32Tests // compiled test binaries to run, in order
	// Files are more initramfs files (programs the tests run, test data:
	// a test's working directory is /src/ + its Dir).
	Files []File
	FuzzN int // kboost fuzz -n (0: 2000)
}

// IA32Tests is one compiled test binary (go test -c) and what to run of it.
type IA32Tests struct {
	Name   string   // the binary's name in the guest: /bin/NAME.test
	Binary string   // its host path
	Dir    string   // its package's directory in the module (the working directory)
	Run    string   // -test.run pattern
	Env    []string // added to its environment
}

// IA32Refused boots the amd64 kernel of deb with IA32NoEmulation, so that it
// refuses 32-bit executables as some hosts do, and runs the "ia32-refused"
// step (which runs the kboost binary Run packs at guest.KboostPath): the
// static i386 program, kboost's i386 sim and fuzz with --exec auto (which
// should choose qemu-i386-static, copied from the host's PATH into the
// initramfs as /usr/bin/qemu-i386-static) and the test binaries, each in
// /src/DIR with KBOOST_ORACLE=1, KBOOST_ROOT=1, TMPDIR=/tmp and its Env.
func IA32Refused(ctx context.Context, deb string, req IA32Request, cfg Config) (*guest.IA32Report, error) {
	dk, err := kimage.ReadDeb(deb)
	if err != nil {
		return nil, err
	}
	qemu, err := exec.LookPath("qemu-i386-static")
	if err != nil {
		return nil, fmt.Errorf("vm: the guest needs qemu-i386-static (apt-get install qemu-user-static): %w", err)
	}
	dir, err := os.MkdirTemp("", "kboost-ia32-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg.Kernel = filepath.Join(dir, "vmlinuz")
	if err := os.WriteFile(cfg.Kernel, dk.Vmlinuz, 0o644); err != nil {
		return nil, err
	}
	args := guest.IA32Args{Static386: "/bin/static386", FuzzN: req.FuzzN}
	if args.FuzzN == 0 {
		args.FuzzN = 2000
	}
	files := []struct{ host, guest string }{{req.Static386, args.Static386}, {qemu, "/usr/bin/qemu-i386-static"}}
	for _, tb := range req.Tests {
		g := guest.IA32Test{Binary: "/bin/" + tb.Name + ".test", Dir: path.Join("/src", tb.Dir), Run: tb.Run, Env: tb.Env}
		args.Tests = append(args.Tests, g)
		files = append(files, struct{ host, guest string }{tb.Binary, g.Binary})
		cfg.Files = append(cfg.Files, File{Name: path.Join(g.Dir, ".keep")})
	}
	for _, f := range files {
		b, err := os.ReadFile(f.host)
		if err != nil {
			return nil, err
		}
		cfg.Files = append(cfg.Files, File{Name: f.guest, Mode: 0o755, Data: b})
	}
	cfg.Files = append(cfg.Files, req.Files...)
	cfg.Files = append(cfg.Files, File{Name: "/tmp/.keep", Data: nil})
	cfg.Append = append(cfg.Append, IA32NoEmulation)
	if cfg.MemoryMB == 0 {
		cfg.MemoryMB = 1024
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Minute
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	res, err := Run(ctx, cfg, guest.Step{Name: "ia32-refused", Args: raw})
	if err != nil {
		return nil, err
	}
	if err := res.Err(); err != nil {
		return nil, err
	}
	var rep guest.IA32Report
	if err := json.Unmarshal(res.Files["ia32-refused.json"], &rep); err != nil {
		return nil, &ProtocolError{Reason: "ia32-refused.json: " + err.Error()}
	}
	return &rep, nil
}
