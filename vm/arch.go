package vm

import (
	"fmt"
	"strings"
)

// Arch is everything that differs between guest architectures: how to build the
// guest binary, which QEMU to start and how, and where the console is.
type Arch struct {
	Name   string // kboost's name: "amd64", "386", "arm64", "arm"
	GOARCH string // the guest binary's GOARCH
	GOARM  string // GOARM for "arm", else ""
	// QEMU is the system emulator; AptPackage is the Debian package providing it.
	QEMU       string
	AptPackage string
	// Machine holds the QEMU arguments choosing machine, CPU and accelerator.
	Machine []string
	// Console is the kernel's serial console device (console=...).
	Console string
	// DebianMetas are the Debian kernel meta-packages booting on this Arch.
	DebianMetas []string
	// Ready is false for architectures whose boot is wired but not yet verified.
	Ready bool
}

func (a *Arch) String() string { return a.Name }

var (
	// AMD64 boots x86-64 kernels (Debian linux-image-amd64).
	AMD64 = &Arch{
		Name: "amd64", GOARCH: "amd64",
		QEMU: "qemu-system-x86_64", AptPackage: "qemu-system-x86",
		// /dev/kvm exists on these machines but hangs with stock QEMU: always TCG.
		Machine:     []string{"-accel", "tcg"},
		Console:     "ttyS0",
		DebianMetas: []string{"linux-image-amd64", "linux-image-cloud-amd64", "linux-image-rt-amd64"},
		Ready:       true,
	}
	// I386 boots 32-bit x86 kernels (Debian linux-image-686, -686-pae).
	I386 = &Arch{
		Name: "386", GOARCH: "386",
		QEMU: "qemu-system-i386", AptPackage: "qemu-system-x86",
		Machine:     []string{"-accel", "tcg"},
		Console:     "ttyS0",
		DebianMetas: []string{"linux-image-686", "linux-image-686-pae", "linux-image-rt-686-pae"},
		Ready:       true,
	}
	// ARM64 boots arm64 kernels (Debian linux-image-arm64: a raw Image, booted
	// as it is); verified by VerifyARM64's oracle test.
	ARM64 = &Arch{
		Name: "arm64", GOARCH: "arm64",
		QEMU: "qemu-system-aarch64", AptPackage: "qemu-system-arm",
		Machine:     []string{"-accel", "tcg", "-M", "virt", "-cpu", "cortex-a57"},
		Console:     "ttyAMA0",
		DebianMetas: []string{"linux-image-arm64", "linux-image-cloud-arm64", "linux-image-rt-arm64"},
		Ready:       true,
	}
	// ARM boots 32-bit ARM kernels (Debian linux-image-armmp: the zImage, booted
	// as it is); verified by VerifyARM's oracle test.
	ARM = &Arch{
		Name: "arm", GOARCH: "arm", GOARM: "7",
		QEMU: "qemu-system-arm", AptPackage: "qemu-system-arm",
		Machine:     []string{"-accel", "tcg", "-M", "virt", "-cpu", "cortex-a15"},
		Console:     "ttyAMA0",
		DebianMetas: []string{"linux-image-armmp", "linux-image-armmp-lpae", "linux-image-rt-armmp"},
		Ready:       true,
	}
)

// Arches lists the guest architectures.
var Arches = []*Arch{AMD64, I386, ARM64, ARM}

// LookupArch finds an Arch by name or common alias ("x86-64", "i386", "686",
// "aarch64", "armhf").
func LookupArch(name string) (*Arch, error) {
	alias := map[string]*Arch{
		"amd64": AMD64, "x86-64": AMD64, "x86_64": AMD64,
		"386": I386, "i386": I386, "i686": I386, "686": I386,
		"arm64": ARM64, "aarch64": ARM64,
		"arm": ARM, "armhf": ARM, "armv7": ARM,
	}
	if a, ok := alias[strings.ToLower(name)]; ok {
		return a, nil
	}
	return nil, fmt.Errorf("%w: %q (want amd64, 386, arm64 or arm)", ErrUnknownArch, name)
}

// ArchForDebianMeta returns the Arch that boots the kernels of a Debian
// meta-package such as linux-image-amd64 or linux-image-686 (an optional
// ":arch" suffix is ignored).
func ArchForDebianMeta(meta string) (*Arch, error) {
	name, _, _ := strings.Cut(meta, ":")
	for _, a := range Arches {
		for _, m := range a.DebianMetas {
			if m == name {
				return a, nil
			}
		}
	}
	return nil, fmt.Errorf("%w: no guest architecture for Debian package %q (want e.g. linux-image-amd64 or linux-image-686)", ErrUnknownArch, meta)
}
