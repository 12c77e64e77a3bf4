package decode

import "fmt"

// Arch is everything architecture-specific that the rest of kboost needs from the
// decoder: a value per instruction set, not switches spread across packages.
type Arch struct {
	Name       string // "x86-64", "i386"
	Mode       Mode
	MaxInsnLen int    // architectural maximum instruction length, bytes
	InsnAlign  int    // instruction alignment, bytes (1 for x86, 4 for A64)
	PtrSize    int    // pointer size, bytes
	ObjdumpArg string // objdump -m machine name for raw bytes ("i386:x86-64")
	// TextAddr and SlotAddr are where kboost models a kernel probe when the
	// user names no address: the first page of kernel text, and the module
	// area, where the kernel allocates kprobe slots within reach of the text.
	TextAddr, SlotAddr uint64
	// ITBlocks: an IT instruction makes the next ones conditional (Thumb-2),
	// so a sweep tracks ITState and a probe may land inside a block.
	ITBlocks bool
	// Decode decodes one instruction into inst (see DecodeInto).
	Decode func(inst *Inst, b []byte, addr uint64) error
	// Format renders a decoded instruction as GNU objdump would (see Format).
	Format func(inst *Inst, symname func(uint64) (string, uint64)) string
}

// Arches lists the supported instruction sets.
var Arches = []*Arch{X86_64, I386, ARM64, ARM, Thumb}

// LookupArch finds an Arch by name or alias ("x86-64", "amd64", "64", "i386", "32").
func LookupArch(name string) (*Arch, error) {
	m, err := ParseMode(name)
	if err != nil {
		return nil, fmt.Errorf("unknown architecture %q (want x86-64, i386, arm64, arm or thumb): %w", name, ErrMode)
	}
	for _, a := range Arches {
		if a.Mode == m {
			return a, nil
		}
	}
	return nil, fmt.Errorf("architecture %q: %w", name, ErrMode)
}

// ArchOf returns the Arch of mode m (nil for ModeInvalid or an unknown mode).
func ArchOf(m Mode) *Arch {
	for _, a := range Arches {
		if a.Mode == m {
			return a
		}
	}
	return nil
}

// WordMask masks a value to a's word (pointer) size: an address or a
// register value wraps at it.
func (a *Arch) WordMask() uint64 {
	if a.PtrSize >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*a.PtrSize) - 1
}

// SignedWord is v, truncated to a's word size, as a signed offset in a's
// address space (sign-extended from the word size).
func (a *Arch) SignedWord(v uint64) int64 {
	shift := 64 - 8*uint(a.PtrSize)
	return int64(v<<shift) >> shift
}

// Fits says v is an address of a's address space (no bits above its word).
func (a *Arch) Fits(v uint64) bool { return v&^a.WordMask() == 0 }
