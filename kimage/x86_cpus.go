package kimage

import (
	_ "embed"
	"fmt"
	"sort"
	"strings"
)

// x86CPUQEMU64 is /proc/cpuinfo of QEMU TCG's default x86-64 CPU (qemu64,
// one CPU) as Debian's 6.1 amd64 kernel shows it, captured in a booted guest
// by vm's TestOracleX86CPUFlagsQEMU64 (KBOOST_UPDATE_SPEC=1 rewrites it).
//
//go:embed spec/x86-cpu-qemu64.cpuinfo
var x86CPUQEMU64 string

// x86NamedCPUs are the machines `--cpu NAME` names: their /proc/cpuinfo
// and number of CPUs.
var x86NamedCPUs = map[string]struct {
	cpuinfo string
	cpus    int
	desc    string
}{
	"qemu64": {x86CPUQEMU64, 1, "qemu64 (QEMU TCG), 1 CPU"},
}

// X86CPUNames lists the names X86NamedCPU knows.
func X86CPUNames() []string {
	var out []string
	for n := range x86NamedCPUs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// X86NamedCPU is a machine kboost boots itself ("qemu64"), its feature bits
// numbered by the kernel release's table (X86FeatureTableFor).
func X86NamedCPU(name, release string) (X86CPU, []string, error) {
	c, ok := x86NamedCPUs[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return X86CPU{}, nil, fmt.Errorf("%w: x86 CPU %q (known: %s)", ErrNoKnownFlags, name, strings.Join(X86CPUNames(), ", "))
	}
	cpu, notes, err := X86CPUFromFlags(c.cpuinfo, release)
	cpu.CPUs, cpu.Name = c.cpus, c.desc
	return cpu, notes, err
}

// X86CPUFromFlags is the CPU a /proc/cpuinfo text or a flag list names
// (X86FeatureTable.ParseFlags) for the kernel release; CPUs is the number of
// "processor" entries of a cpuinfo text (1 makes the kernel patch itself to
// UP), 0 (several) for a list.
func X86CPUFromFlags(text, release string) (X86CPU, []string, error) {
	t := X86FeatureTableFor(release)
	set, notes, err := t.ParseFlags(text)
	if err != nil {
		return X86CPU{}, notes, err
	}
	cpu := X86CPU{Features: set}
	for _, l := range strings.Split(text, "\n") {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "processor" {
			cpu.CPUs++
		}
	}
	cpu.Name = fmt.Sprintf("%d CPU flags", len(t.Flags(&set)))
	if cpu.CPUs > 0 {
		cpu.Name += fmt.Sprintf(", %d CPUs", cpu.CPUs)
	}
	notes = append(notes, fmt.Sprintf("CPU feature bits numbered by %s; features /proc/cpuinfo does not show are taken as absent, except X86_FEATURE_ALWAYS", t.From))
	return cpu, notes, nil
}
