package vm

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/kboost/kboost/vm/guest"
)

const armTestBase = 0xC0008000

// armTestImage is an Image at armTestBase with two functions at +0x100 (traced:
// push {lr}; bl mcount; bx lr) and +0x200 (untraced), mcount at +0x300, and a
// 70-entry jump table at +0x400 pointing at NOPs in the first function's page.
func armTestImage() ([]byte, *guest.ARM64Report) {
	img := make([]byte, 0x1000)
	le := binary.LittleEndian
	put := func(off int, w uint32) { le.PutUint32(img[off:], w) }
	mcount := uint64(armTestBase + 0x300)
	put(0x100, 0xE52DE004) // push {lr}
	blAt := uint64(armTestBase + 0x104)
	put(0x104, 0xEB000000|uint32((int64(mcount)-int64(blAt)-8)>>2)&0xFFFFFF)
	put(0x108, 0xE12FFF1E) // bx lr
	put(0x200, 0xE320F000) // nop
	put(0x204, 0xE12FFF1E)
	for k := 0; k < 70; k++ {
		code := uint32(armTestBase + 0x200)
		put(0x400+12*k, code)
		put(0x404+12*k, armTestBase+0x204)
		put(0x408+12*k, 0xC1000000)
	}
	rep := &guest.ARM64Report{TextStart: armTestBase, TextEnd: armTestBase + 0x400,
		Symbols: map[string]uint64{"__gnu_mcount_nc": mcount}}
	rep.Funcs = []guest.KernelFunc{{Name: "f", Addr: armTestBase + 0x100, Size: 12, Traced: true}, {Name: "g", Addr: armTestBase + 0x200, Size: 8}}
	rep.Records = []guest.VerifyRecord{{Func: "f", Off: 4, Boundary: true}, {Func: "g", Off: 1}}
	return img, rep
}

func TestFillARMImage(t *testing.T) {
	img, rep := armTestImage()
	tab, err := FillARMImage(img, armTestBase, rep)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Ftrace) != 1 || tab.Ftrace[0] != armTestBase+0x104 {
		t.Errorf("ftrace %#x, want [%#x]", tab.Ftrace, armTestBase+0x104)
	}
	if want := hex.EncodeToString(img[0x104:0x108]); rep.Records[0].Bytes != want || rep.Records[1].Bytes != "" {
		t.Errorf("record bytes %q %q, want %q and none", rep.Records[0].Bytes, rep.Records[1].Bytes, want)
	}
	if len(tab.JumpLabels) != 70 || tab.JumpLabels[0] != armTestBase+0x200 {
		t.Errorf("jump labels %d, want 70 at %#x", len(tab.JumpLabels), armTestBase+0x200)
	}
	// A wrong base: the mcount calls are not where the kernel's ftrace says.
	_, rep = armTestImage()
	rep.Funcs[0].Traced = false
	rep.Funcs[1].Traced = true
	if _, err := FillARMImage(img, armTestBase, rep); err == nil {
		t.Error("no error for an Image that disagrees with available_filter_functions")
	}
}

func TestARMMnemonic(t *testing.T) {
	for w, want := range map[uint32]string{0xE12FFF1E: "bx", 0xE320F000: "nop"} {
		if got := ARMMnemonic(w); got != want {
			t.Errorf("%08x: %q, want %q", w, got, want)
		}
	}
}

func FuzzFindARMJumpLabels(f *testing.F) {
	img, _ := armTestImage()
	f.Add(img)
	f.Fuzz(func(t *testing.T, b []byte) {
		rep := &guest.ARM64Report{TextStart: armTestBase, TextEnd: armTestBase + uint64(len(b))}
		_, _ = FindARMJumpLabels(b, armTestBase, rep)
		rep.Symbols = map[string]uint64{"__gnu_mcount_nc": armTestBase}
		rep.Funcs = []guest.KernelFunc{{Name: "f", Addr: armTestBase, Size: uint64(len(b)) &^ 3}}
		_, _ = FillARMImage(b, armTestBase, rep)
	})
}
