package loader

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kimage"
)

func testPredictor(t *testing.T) *Predictor {
	t.Helper()
	pol, err := boost.Lookup("linux-6.1")
	if err != nil {
		t.Fatal(err)
	}
	return NewPredictorEnv(nil, pol, pol.DefaultEnv(), nil)
}

// TestDetourImage checks the predicted detour buffer field by field against
// arch_prepare_optimized_kprobe's layout, computed here from the addresses:
// the template with clac (SMAP), "mov $op,%rdi" (pointer unknown) and "call
// optimized_callback" patched in; the copied instructions with every
// RIP-relative displacement rebased (new = old + src - dst); the jmp back to
// addr + the copied length.
func TestDetourImage(t *testing.T) {
	p := testPredictor(t)
	tmpl := &OptTemplate{Entry: 0xffffffff82000000, Clac: 3, Val: 14, Call: 24, Callback: 0xffffffff81050000}
	tmpl.Bytes = bytes.Repeat([]byte{0x50}, 40) // push %rax filler
	copy(tmpl.Bytes[3:], []byte{0x0f, 0x1f, 0x00})
	copy(tmpl.Bytes[14:], []byte{0x0f, 0x1f, 0x44, 0x00, 0x00, 0x0f, 0x1f, 0x44, 0x00, 0x00})
	copy(tmpl.Bytes[24:], []byte{0x0f, 0x1f, 0x44, 0x00, 0x00})
	if tmpl.SlotSize() != 40+19+5 {
		t.Errorf("slot size %d", tmpl.SlotSize())
	}
	const addr = 0xffffffff81234560
	// push %rbp; mov 0x1234(%rip),%rax: 8 bytes, the mov 1 byte in.
	orig := []byte{0x55, 0x48, 0x8b, 0x05, 0x34, 0x12, 0x00, 0x00}
	for _, smap := range []bool{false, true} {
		tmpl.SMAP = smap
		for _, detour := range []uint64{0xffffffffa0001000, 0xffffffffc0002040} {
			img, known, err := p.DetourImage(tmpl, addr, orig, detour)
			if err != nil {
				t.Fatal(err)
			}
			if len(img) != 40+8+5 || len(known) != len(img) {
				t.Fatalf("%d bytes, %d known", len(img), len(known))
			}
			want := append([]byte(nil), tmpl.Bytes...)
			if smap {
				copy(want[3:], []byte{0x0f, 0x01, 0xca})
			}
			want[14], want[15] = 0x48, 0xbf
			want[24] = 0xe8
			binary.LittleEndian.PutUint32(want[25:], uint32(tmpl.Callback-(detour+24+5)))
			want = append(want, 0x55, 0x48, 0x8b, 0x05, 0, 0, 0, 0)
			src, dst := uint64(addr+1), detour+40+1 // where the mov was and is
			binary.LittleEndian.PutUint32(want[44:], uint32(0x1234+src-dst))
			want = append(want, 0xe9, 0, 0, 0, 0)
			binary.LittleEndian.PutUint32(want[49:], uint32(addr+8-(detour+53)))
			for i := range img {
				unknown := i >= 16 && i < 24
				if known[i] == unknown {
					t.Errorf("byte %d: known %v", i, known[i])
				}
				if !unknown && img[i] != want[i] {
					t.Errorf("smap %v detour %#x: byte %d = %#x, want %#x\n%x\n%x", smap, detour, i, img[i], want[i], img, want)
					break
				}
			}
			// The kernel's buffer: its own pointer in the unknown bytes.
			kernel := append([]byte(nil), img...)
			binary.LittleEndian.PutUint64(kernel[16:], 0xffff888003a1b2c0)
			pred := MaskedHex(img, known)
			if pred[28:48] != "48bf"+strings.Repeat(".", 16) {
				t.Errorf("masked %s", pred)
			}
			if !MaskedEqual(pred, hex.EncodeToString(kernel)) {
				t.Errorf("kernel buffer with its pointer does not match %s", pred)
			}
			kernel[45] ^= 1
			if MaskedEqual(pred, hex.EncodeToString(kernel)) {
				t.Error("a wrong displacement matches")
			}
			if MaskedEqual(pred, hex.EncodeToString(kernel[:40])) || MaskedEqual("", "") {
				t.Error("a short buffer matches")
			}
		}
	}
	if _, _, err := p.DetourImage(tmpl, addr, orig[:4], 0xffffffffa0001000); err == nil {
		t.Error("4 bytes accepted")
	}
	if _, _, err := p.DetourImage(&OptTemplate{Bytes: []byte{1, 2}}, addr, orig, 0xffffffffa0001000); err == nil {
		t.Error("a template too short for its fields accepted")
	}
	if d, ok := DetourTarget(addr, []byte{0xe9, 0xfb, 0xff, 0xff, 0xff}); !ok || d != addr {
		t.Errorf("DetourTarget %#x %v", d, ok)
	}
	if _, ok := DetourTarget(addr, []byte{0xcc, 0, 0, 0, 0}); ok {
		t.Error("int3 taken for a jmp")
	}
}

// TestExpectAddr predicts raw addresses in a synthetic kernel: an address is
// the point kallsyms resolves it to, so it gets the symbol+offset prediction,
// except that an ambiguous name does not matter; data is not text (EINVAL);
// an address in no symbol is ENOENT.
func TestExpectAddr(t *testing.T) {
	code := []byte{
		0x0f, 0x1f, 0x44, 0x00, 0x00, // ftrace nop
		0x55,             // push %rbp
		0x48, 0x89, 0xe5, // mov %rsp,%rbp
		0x85, 0xff, // test %edi,%edi
		0x5d, // pop %rbp
		0xc3, // ret
		0xcc, 0xcc, 0xcc,
	}
	const text = 0xffffffff81000000
	var img []byte
	for i := 0; i < 3; i++ {
		img = append(img, code...)
	}
	f, err := kimage.OpenBytes(MemoryELF([]MemSection{
		{Name: ".text", Addr: text, Data: img, Exec: true},
		{Name: ".data", Addr: 0xffffffff82000000, Data: make([]byte, 64)},
	}))
	if err != nil {
		t.Fatal(err)
	}
	f.SetSymbols(kimage.NewSymTab([]kimage.Symbol{
		{Name: "dup", Addr: text, Type: 't', Func: true},
		{Name: "dup", Addr: text + 16, Type: 't', Func: true},
		{Name: "uniq", Addr: text + 32, Type: 't', Func: true},
		{Name: "_etext", Addr: text + 48, Type: 'T'},
		{Name: "some_data", Addr: 0xffffffff82000000, Type: 'd'},
	}))
	p, err := NewPredictor(f, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	read := func(a uint64, n int) ([]byte, error) { return f.ReadAt(a, n) }
	expect := func(point string) Expectation {
		t.Helper()
		s, err := ParseSpec(point)
		if err != nil {
			t.Fatal(err)
		}
		x, err := p.Expect(s, read, true)
		if err != nil {
			t.Fatalf("%s: %v", point, err)
		}
		return x
	}
	if x := expect("dup+5"); x.Errno != "EADDRNOTAVAIL" {
		t.Errorf("dup+5: %+v", x)
	}
	for off := uint64(0); off < 13; off++ {
		u := expect(fmt.Sprintf("uniq+%d", off))
		for _, base := range []uint64{text, text + 16} {
			a := expect(hexs(base + off))
			if a.Resolved != fmt.Sprintf("dup+%#x", off) || a.Errno != u.Errno || a.Verdict != u.Verdict || a.Ftrace != u.Ftrace ||
				a.Optimized != u.Optimized || !bytes.Equal(a.Bytes, u.Bytes) || a.Addr-base != u.Addr-(text+32) && u.Errno == "" {
				t.Errorf("%s: %+v; uniq+%d: %+v", hexs(base+off), a, off, u)
			}
		}
	}
	if x := expect("kernel:0xffffffff82000000"); x.Errno != "EINVAL" || x.Rules[0] != "loader.not_text" {
		t.Errorf("data: %+v", x)
	}
	if x := expect("0xffffffff80000000"); x.Errno != "ENOENT" {
		t.Errorf("no symbol: %+v", x)
	}
	if x := expect(hexs(text + 5)); !x.Optimized || len(x.OptBytes) < 5 || !bytes.Equal(x.OptBytes, code[5:5+len(x.OptBytes)]) {
		t.Errorf("push: want optimizable with the bytes to copy: %+v", x)
	}
}

func hexs(v uint64) string { return fmt.Sprintf("%#x", v) }
