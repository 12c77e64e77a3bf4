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
	// WalkTTB, when set, translates a kernel virtual address with the
	// first-level translation table at physical address ttb, reading
	// physical memory with readPhys (host reads of guest memory,
	// Config.HostMemory, for requests that name a table).
	WalkTTB func(readPhys func(pa uint64, n int) ([]byte, error), ttb, va uint64) (uint64, error)
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
		WalkTTB:     ARMShortWalk,
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

// TranslationError reports a virtual address a page-table walk found unmapped.
type TranslationError struct {
	VA, Entry uint64 // the address, and the descriptor that faulted
	Level     int
}

func (e *TranslationError) Error() string {
	return fmt.Sprintf("vm: %#x is not mapped (level-%d descriptor %#x)", e.VA, e.Level, e.Entry)
}

// ARMShortWalk translates va with an ARMv7 short-descriptor translation
// table (the non-LPAE format Linux uses; TTBCR.N = 0, so one 16 KiB
// first-level table covers the whole address space) at physical address
// ttb: a first-level entry maps a 1 MiB section, a 16 MiB supersection or
// points to a second-level table of 4 KiB small and 64 KiB large pages.
func ARMShortWalk(readPhys func(pa uint64, n int) ([]byte, error), ttb, va uint64) (uint64, error) {
	if va > 0xFFFFFFFF {
		return 0, &TranslationError{VA: va, Level: 1}
	}
	word := func(pa uint64) (uint64, error) {
		b, err := readPhys(pa, 4)
		if err != nil {
			return 0, err
		}
		if len(b) != 4 {
			return 0, fmt.Errorf("vm: reading a descriptor at %#x: %d bytes", pa, len(b))
		}
		return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24, nil
	}
	l1, err := word(ttb&^0x3FFF + (va>>20)*4)
	if err != nil {
		return 0, err
	}
	switch l1 & 3 {
	case 1: // second-level table
		l2, err := word(l1&0xFFFFFC00 + (va>>12&0xFF)*4)
		if err != nil {
			return 0, err
		}
		switch {
		case l2&2 != 0: // small page
			return l2&0xFFFFF000 | va&0xFFF, nil
		case l2&3 == 1: // large page
			return l2&0xFFFF0000 | va&0xFFFF, nil
		}
		return 0, &TranslationError{VA: va, Entry: l2, Level: 2}
	case 2:
		if l1&(1<<18) != 0 { // supersection (extended address bits ignored)
			return l1&0xFF000000 | va&0xFFFFFF, nil
		}
		return l1&0xFFF00000 | va&0xFFFFF, nil
	}
	return 0, &TranslationError{VA: va, Entry: l1, Level: 1}
}
