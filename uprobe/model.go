package uprobe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/decode"
)

// Path is what the kernel does when a uprobe is hit.
type Path uint8

// Paths, cheapest hit first after PathRefused.
const (
	PathRefused    Path = iota // the kernel refuses the probe (Site.Errno)
	PathOptimized              // a NOP became a call into [uprobes-trampoline] (6.18: 5-byte, 7.2: 10-byte): no trap
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

// Kernel is one kernel version's uprobes as a value. Policy (x86) and the
// policy of each other architecture (PolicyFor) decide acceptance,
// emulation (arm64: simulation) and which NOP sites the kernel optimizes
// (boost's per-version uprobes policies, Decision.Optimizable); the flags are
// what the optimized path does to the process, which no policy models.
type Kernel struct {
	Name   string
	Source string        // where the behaviour was read or measured
	Policy *boost.Policy // x86-64 and i386 tasks
	// arch holds the policies of the other architectures.
	arch map[*decode.Arch]*boost.Policy
	// RedZoneCall: the optimized call pushes its return address at the probed
	// instruction's -8(%rsp), inside the System V red zone (6.18's 5-byte
	// form; 7.2 moves %rsp down 128 bytes first).
	RedZoneCall bool

	major, minor int
}

var kernels = []*Kernel{
	{Name: "uprobes-6.1", major: 6, minor: 1,
		Source: "boost policy uprobes-x86 (Debian linux-source-6.1 arch/x86/kernel/uprobes.c): only 0x90 NOPs emulated, no optimization"},
	{Name: "uprobes-6.12", major: 6, minor: 12,
		Source: "boost policy uprobes-6.12 (Debian linux-source-6.12): 6.1's decision code with the 6.12 decoder, no optimization"},
	{Name: "uprobes-6.18", major: 6, minor: 18, RedZoneCall: true,
		Source: "boost policy uprobes-6.18 (upstream 6.18, measured on this project's host kernel 6.18.44): x86_nops and 5-byte NOPs emulated, " +
			"5-byte NOPs rewritten to call [uprobes-trampoline] after the first hit, that call's return address written into the red zone"},
	{Name: "uprobes-7.2", major: 7, minor: 2,
		Source: "boost policy uprobes-7.2 (Debian linux-source-7.2): insn_is_nop() forms emulated, the 10-byte NOP 66 2e 0f 1f 84 optimized behind lea -0x80(%rsp),%rsp (red zone kept)"},
}

// kernelPolicy names each model's boost policies: x86, then arm64.
var kernelPolicy = map[string][2]string{
	"uprobes-6.1":  {"uprobes-x86", "uprobes-arm64"},
	"uprobes-6.12": {"uprobes-6.12", "uprobes-6.12-arm64"},
	"uprobes-6.18": {"uprobes-6.18", "uprobes-6.18-arm64"},
	"uprobes-7.2":  {"uprobes-7.2", "uprobes-7.2-arm64"},
}

func init() {
	for _, k := range kernels {
		names := kernelPolicy[k.Name]
		p, err := boost.Lookup(names[0])
		if err != nil {
			panic(err)
		}
		a, err := boost.Lookup(names[1])
		if err != nil {
			panic(err)
		}
		k.Policy, k.arch = p, map[*decode.Arch]*boost.Policy{decode.ARM64: a}
	}
}

// PolicyFor is the policy deciding instructions of arch under k.
func (k *Kernel) PolicyFor(arch *decode.Arch) *boost.Policy {
	if p, ok := k.arch[arch]; ok {
		return p
	}
	return k.Policy
}

// Kernels returns every model.
func Kernels() []*Kernel { return append([]*Kernel(nil), kernels...) }

// Lookup finds a model by name (or by its boost policy's name).
func Lookup(name string) (*Kernel, error) {
	var names []string
	for _, k := range kernels {
		if k.Name == name || k.Policy.Name == name || k.arch[decode.ARM64].Name == name {
			return k, nil
		}
		names = append(names, k.Name)
	}
	return nil, fmt.Errorf("unknown uprobes model %q (known: %s)", name, strings.Join(names, ", "))
}

// WithPolicy returns a copy of k deciding instructions under p (a per-version
// boost policy, e.g. one modelled from that kernel's source) for the
// architectures whose mode p decides.
func (k *Kernel) WithPolicy(p *boost.Policy) *Kernel {
	c := *k
	c.arch = map[*decode.Arch]*boost.Policy{}
	for a, ap := range k.arch {
		c.arch[a] = ap
		if slices.Contains(p.Modes, a.Mode) {
			c.arch[a] = p
		}
	}
	if !slices.Contains(p.Modes, decode.ModeA64) {
		c.Policy = p
	}
	c.Name = k.Name + "+" + p.Name
	return &c
}

// ForRelease picks the model of a kernel release ("6.18.44-fc-v857"): the
// modelled version with the same major.minor, else the nearest older one, with
// a note when it is not exact.
func ForRelease(release string) (*Kernel, string) {
	maj, min, ok := parseRelease(release)
	if !ok {
		return kernels[0], fmt.Sprintf("release %q not understood: assuming %s", release, kernels[0].Name)
	}
	pick := kernels[0]
	for _, k := range kernels {
		if k.major < maj || k.major == maj && k.minor <= min {
			pick = k
		}
	}
	switch {
	case pick.major == maj && pick.minor == min:
		return pick, ""
	case maj < 6 || maj == 6 && min < 1:
		return pick, fmt.Sprintf("kernel %s is older than every modelled version: %s used instead", release, pick.Name)
	}
	return pick, fmt.Sprintf("kernel %s is not modelled: %s (the nearest older modelled version, %d.%d) used instead", release, pick.Name, pick.major, pick.minor)
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
		return kernels[0], "running kernel unknown (" + err.Error() + "): assuming " + kernels[0].Name
	}
	return ForRelease(rel)
}

// USDTSite decides the probe site of a USDT note (a NOP the compiler placed).
func USDTSite(b *Binary, k *Kernel, u USDT) (Site, error) {
	s, _, err := Check(b, k, Request{Addr: uint64(u.Addr), HasAddr: true})
	return s, err
}
