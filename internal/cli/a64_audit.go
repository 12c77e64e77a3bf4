package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

// a64CPUFeaturesOption reads --cpu-features, the kernel log of the machine an
// arm64 kernel booted on: o.cpuCaps becomes it (read as a kernel log with
// the other CPU caps), or a note when f is no arm64 code.
func a64CPUFeaturesOption(o *auditOpts, f *kimage.File) ([]string, error) {
	if o.cpuFeats == "" {
		return nil, nil
	}
	if !strings.EqualFold(strings.TrimSpace(o.cpuCaps), "none") {
		return nil, usagef("--cpu-features and --cpu-caps both name the arm64 CPU: give one")
	}
	if err := inputFile("--cpu-features", o.cpuFeats); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(o.cpuFeats)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Arch != decode.ARM64:
		return []string{fmt.Sprintf("--cpu-features %s: arm64 CPU alternatives do not apply to %s code (option ignored)", o.cpuFeats, f.Arch.Name)}, nil
	case !strings.Contains(string(b), kimage.BootLogMarker):
		return nil, usagef("--cpu-features %s: no %q line: give the kernel log (dmesg) of the machine", o.cpuFeats, kimage.BootLogMarker+"...")
	}
	o.cpuCaps = o.cpuFeats // read as a kernel log below
	return nil, nil
}
