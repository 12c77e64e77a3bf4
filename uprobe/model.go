package uprobe

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kboost/kboost/boost"
)

// Path is what the kernel does when a uprobe is hit.
type Path uint8

// Paths, cheapest hit first after PathRefused.
const (
	PathRefused    Path = iota // the kernel refuses the probe (Site.Errno)
	PathOptimized              // a 5-byte NOP became a call into [uprobes-trampoline]: no trap
	PathEmulated               // int3, the instruction is emulated in the handler
	PathSingleStep             // int3, the copy runs out of line in the [uprobes] XOL page with TF set
)

var pathNames = [...]string{"refused", "optimized", "emulated", "singlestep"}

func (p Path) String() string {
	if int(p) < len(pathNames) {
		return pathNames[p]
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// MarshalText writes the path's name.
func (p Path) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Kernel is one kernel's x86 uprobes as a value. Policy decides acceptance and
// the emulation of branches and pushes (arch_uprobe_analyze_insn); the flags
// are what kernels after it added on top.
type Kernel struct {
	Name   string
	Source string // where the behaviour was read or measured
	Policy *boost.Policy
	// EmulateNops: every NOP (0x90 with any prefixes, 0F 1F /0 of any length)
	// is emulated rather than single-stepped (x86 insn_is_nop in
	// branch_setup_xol_ops).
	EmulateNops bool
	// OptimizeNop5: in a 64-bit task a 5-byte NOP that does not cross a page is
	// rewritten, after its first hit, into a call to a [uprobes-trampoline]
	// page that enters the kernel with the uprobe syscall.
	OptimizeNop5 bool
	// RedZoneCall: that call pushes its return address at the probed
	// instruction's -8(%rsp), inside the System V red zone.
	RedZoneCall bool
}

var kernels = []*Kernel{
	{
		Name:   "uprobes-6.1",
		Source: "boost policy uprobes-x86 (Debian linux-source-6.1 arch/x86/kernel/uprobes.c): NOPs other than 0x90 single-stepped, no optimization",
	},
	{
		Name: "uprobes-6.18-host",
		Source: "measured on this project's host kernel 6.18.44 (x86-64): every NOP form emulated (no [uprobes] XOL page), " +
			"5-byte NOPs (0f 1f 44 00 00, 66 0f 1f 40 00) rewritten to call [uprobes-trampoline] after the first hit, " +
			"that call's return address written into the red zone; acceptance as uprobes-x86",
		EmulateNops: true, OptimizeNop5: true, RedZoneCall: true,
	},
}

func init() {
	p, err := boost.Lookup("uprobes-x86")
	if err != nil {
		panic(err)
	}
	for _, k := range kernels {
		k.Policy = p
	}
}

// Kernels returns every model.
func Kernels() []*Kernel { return append([]*Kernel(nil), kernels...) }

// Lookup finds a model by name.
func Lookup(name string) (*Kernel, error) {
	var names []string
	for _, k := range kernels {
		if k.Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return nil, fmt.Errorf("unknown uprobes model %q (known: %s)", name, strings.Join(names, ", "))
}

// WithPolicy returns a copy of k deciding instructions under p (a per-version
// boost policy, e.g. one modelled from that kernel's source).
func (k *Kernel) WithPolicy(p *boost.Policy) *Kernel {
	c := *k
	c.Policy = p
	c.Name = k.Name + "+" + p.Name
	return &c
}

// ForRelease picks the model of a kernel release ("6.18.44-fc-v857") and says
// how well it is known: the 6.18 model from 6.18 on (measured), else 6.1's.
func ForRelease(release string) (*Kernel, string) {
	maj, min, ok := parseRelease(release)
	switch {
	case !ok:
		return kernels[0], fmt.Sprintf("release %q not understood: assuming uprobes-6.1", release)
	case maj > 6 || maj == 6 && min >= 18:
		n := ""
		if maj > 6 || min > 18 {
			n = fmt.Sprintf("kernel %s is newer than the measured 6.18: its uprobes are assumed to behave like 6.18's", release)
		}
		return kernels[1], n
	case maj == 6 && min > 1:
		return kernels[0], fmt.Sprintf("kernel %s: uprobes between 6.1 and 6.18 are not modelled; assuming 6.1's (NOPs single-stepped, no optimization)", release)
	}
	return kernels[0], ""
}

func parseRelease(r string) (maj, min int, ok bool) {
	f := strings.FieldsFunc(r, func(c rune) bool { return c == '.' || c == '-' })
	if len(f) < 2 {
		return 0, 0, false
	}
	a, err1 := strconv.Atoi(f[0])
	b, err2 := strconv.Atoi(f[1])
	return a, b, err1 == nil && err2 == nil
}

// Running is the model of the running kernel, with a note when it is a guess.
func Running() (*Kernel, string) {
	rel, err := RunningRelease()
	if err != nil {
		return kernels[0], "running kernel unknown (" + err.Error() + "): assuming uprobes-6.1"
	}
	return ForRelease(rel)
}

// USDTSite decides the probe site of a USDT note (a NOP the compiler placed).
func USDTSite(b *Binary, k *Kernel, u USDT) (Site, error) {
	s, _, err := Check(b, k, Request{Addr: uint64(u.Addr), HasAddr: true})
	return s, err
}
