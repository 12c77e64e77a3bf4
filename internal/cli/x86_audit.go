package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/kimage"
)

// x86CPUOption is the CPU --cpu or --cpu-flags names for f's boot
// patching, nil when neither is given or f is no x86-64 kernel (a note).
func x86CPUOption(o auditOpts, f *kimage.File) (*kimage.X86CPU, []string, error) {
	opt, val := "--cpu", o.cpu
	switch {
	case o.cpu == "" && o.cpuFlags == "":
		return nil, nil, nil
	case o.cpu != "" && o.cpuFlags != "":
		return nil, nil, usagef("--cpu and --cpu-flags both name the CPU: give one")
	case o.cpuFlags != "":
		opt, val = "--cpu-flags", o.cpuFlags
	}
	if f.Arch != decode.X86_64 {
		return nil, []string{fmt.Sprintf("%s %s: x86-64 boot patching does not apply to %s code (option ignored)", opt, val, f.Arch.Name)}, nil
	}
	var (
		cpu   kimage.X86CPU
		notes []string
		err   error
	)
	if o.cpu != "" {
		cpu, notes, err = kimage.X86NamedCPU(o.cpu, f.KernelVersion)
		if err != nil {
			return nil, nil, usagef("--cpu %q: want %s (or --cpu-flags FILE|LIST)", o.cpu, strings.Join(kimage.X86CPUNames(), ", "))
		}
	} else {
		text := o.cpuFlags
		if fileExists(text) {
			b, err := os.ReadFile(text)
			if err != nil {
				return nil, nil, err
			}
			text = string(b)
		}
		cpu, notes, err = kimage.X86CPUFromFlags(text, f.KernelVersion)
		if errors.Is(err, kimage.ErrNoKnownFlags) {
			return nil, nil, usagef("--cpu-flags %s: %v", o.cpuFlags, err)
		} else if err != nil {
			return nil, nil, err
		}
	}
	for i, n := range notes {
		notes[i] = opt + ": " + n
	}
	return &cpu, notes, nil
}
