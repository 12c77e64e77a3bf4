package decode

import "testing"

// Word arithmetic follows the pointer size: i386 and 32-bit ARM wrap at
// 2^32, x86-64 and AArch64 not below 2^64.
func TestArchWord(t *testing.T) {
	for _, c := range []struct {
		a      *Arch
		mask   uint64
		signed int64 // of 0xffff_fffe
	}{
		{X86_64, 0xffff_ffff_ffff_ffff, 0xffff_fffe},
		{ARM64, 0xffff_ffff_ffff_ffff, 0xffff_fffe},
		{I386, 0xffff_ffff, -2},
		{ARM, 0xffff_ffff, -2},
		{Thumb, 0xffff_ffff, -2},
	} {
		if got := c.a.WordMask(); got != c.mask {
			t.Errorf("%s: WordMask %#x, want %#x", c.a.Name, got, c.mask)
		}
		if got := c.a.SignedWord(0xffff_fffe); got != c.signed {
			t.Errorf("%s: SignedWord(0xfffffffe) %d, want %d", c.a.Name, got, c.signed)
		}
		if got := c.a.SignedWord(0x1_0000_0005); c.a.PtrSize == 4 && got != 5 {
			t.Errorf("%s: SignedWord(0x100000005) %d, want 5 (truncated)", c.a.Name, got)
		}
		if c.a.Fits(0x1_0000_0000) != (c.a.PtrSize == 8) || !c.a.Fits(0xffff_ffff) {
			t.Errorf("%s: Fits wrong at the 32-bit boundary", c.a.Name)
		}
		if ArchOf(c.a.Mode) != c.a {
			t.Errorf("ArchOf(%v) is not %s", c.a.Mode, c.a.Name)
		}
	}
	if ArchOf(ModeInvalid) != nil {
		t.Error("ArchOf(ModeInvalid) is not nil")
	}
}
