package guest

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kboost/kboost/kimage"
)

const testKallsyms = `ffff800008000000 T _text
ffff800008010000 T _stext
ffff800008010000 t __do_one
ffff800008010040 T dup_name
ffff800008010080 T unique_fn
ffff8000080100c0 t dup_name
ffff800008010100 W weak_fn
ffff800008010180 T _etext
ffff800008020000 T _sinittext
ffff800008020000 t init_fn
ffff800008020040 T _einittext
ffff800008030000 D some_data
ffff800009000000 t kprobe_insn_page	[__builtin__kprobes]
ffff800009001000 t mod_fn	[ext4]
`

func TestParseKallsymsAndCoreFuncs(t *testing.T) {
	ents, err := kimage.ParseSymbolLines([]byte(testKallsyms))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 14 {
		t.Fatalf("%d entries, want 14", len(ents))
	}
	last := ents[len(ents)-1]
	if last.Name != "mod_fn" || last.Module != "ext4" || last.Type != 't' {
		t.Errorf("module line parsed as %+v", last)
	}
	funcs, count := CoreFuncs(ents)
	size := map[string]uint64{}
	for _, f := range funcs {
		if f.Name == "mod_fn" || f.Name == "kprobe_insn_page" {
			t.Errorf("module symbol %s among core functions", f.Name)
		}
		size[f.Name] = f.Size
	}
	// Sizes run to the next higher address of any core symbol, data included.
	for name, want := range map[string]uint64{"__do_one": 0x40, "unique_fn": 0x40, "weak_fn": 0x80, "init_fn": 0x40, "_einittext": 0x10000 - 0x40} {
		if size[name] != want {
			t.Errorf("size of %s = %#x, want %#x", name, size[name], want)
		}
	}
	if _, ok := size["some_data"]; ok {
		t.Error("data symbol listed as a function")
	}
	if count["dup_name"] != 2 || count["unique_fn"] != 1 {
		t.Errorf("name counts %v", count)
	}
	a, ok := SymbolAddr(ents, "_etext")
	if !ok || a != 0xffff800008010180 {
		t.Errorf("SymbolAddr(_etext) = %#x, %v", a, ok)
	}

	args := &ARM64VerifyArgs{Sample: 100}
	sel, err := SelectCoreFuncs(funcs, count, args, 0xffff800008010000, 0xffff800008010180, 0xffff800008020000, 0xffff800008020040)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range sel {
		names = append(names, s.Name)
	}
	// Not dup_name (two symbols), not markers, not init_fn (no IncludeInit).
	want := []string{"__do_one", "unique_fn", "weak_fn"}
	if len(names) != len(want) {
		t.Fatalf("selected %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("selected %v, want %v", names, want)
		}
	}
	args = &ARM64VerifyArgs{Funcs: []string{"init_fn"}}
	if sel, err := SelectCoreFuncs(funcs, count, args, 0xffff800008010000, 0xffff800008010180, 0xffff800008020000, 0xffff800008020040); err != nil || len(sel) != 1 {
		t.Errorf("init_fn by name: %v, %v", sel, err)
	}
	args = &ARM64VerifyArgs{Funcs: []string{"dup_name"}}
	if _, err := SelectCoreFuncs(funcs, count, args, 0, ^uint64(0), 0, 0); err == nil {
		t.Error("a duplicated name was accepted")
	}
	args = &ARM64VerifyArgs{Funcs: []string{"nope"}}
	if _, err := SelectCoreFuncs(funcs, count, args, 0, ^uint64(0), 0, 0); !errors.Is(err, kimage.ErrNoSymbol) {
		t.Errorf("unknown name: %v, want ErrNoSymbol", err)
	}
}

func TestProbeOffsets(t *testing.T) {
	b, o := ARM64Probes.ProbeOffsets(40, 2)
	if len(b) != 10 {
		t.Fatalf("%d boundaries in 40 bytes, want 10", len(b))
	}
	for i, off := range b {
		if off != uint64(4*i) {
			t.Errorf("boundary %d at %d", i, off)
		}
	}
	if len(o) != 2 {
		t.Fatalf("misaligned offsets %v, want 2", o)
	}
	for _, off := range o {
		if off%4 == 0 || off >= 40 {
			t.Errorf("misaligned offset %d is aligned or outside", off)
		}
	}
	if _, o := ARM64Probes.ProbeOffsets(40, -1); len(o) != 0 {
		t.Errorf("misaligned -1 gave %v", o)
	}
	// A size that is not a multiple of 4 (padding) probes only whole words.
	if b, _ := ARM64Probes.ProbeOffsets(10, 0); len(b) != 2 {
		t.Errorf("10 bytes: boundaries %v", b)
	}
}

func word(w uint32) []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], w)
	return b[:]
}

func TestSlotMatcher(t *testing.T) {
	const page = 0xffff80000a055000
	brk6 := word(0xD42000C0) // BRK #6, the arm64 single-step return
	mov := word(0xaa1e03e9)  // mov x9, x30
	stp := word(0xa9bf7bfd)  // stp x29, x30, [sp, #-16]!
	before := make([]byte, 4096)
	copy(before[0:], append(append([]byte{}, stp...), brk6...)) // stale slot 0
	after := append([]byte(nil), before...)
	copy(after[8:], append(append([]byte{}, mov...), brk6...))
	copy(after[16:], append(append([]byte{}, stp...), brk6...))
	m := SlotMatcher{Arch: ARM64Probes}
	m.Reset(map[uint64][]byte{page: before}, map[uint64][]byte{page: after})
	// The changed slot wins over the stale one with the same bytes.
	if a, b, ok := m.Claim(stp); !ok || a != page+16 || string(b[4:]) != string(brk6) {
		t.Errorf("Claim(stp) = %#x %x %v, want the changed slot at +16", a, b, ok)
	}
	if a, _, ok := m.Claim(mov); !ok || a != page+8 {
		t.Errorf("Claim(mov) = %#x %v", a, ok)
	}
	// A second stp falls back to the unchanged slot (a reused slot, same bytes).
	if a, _, ok := m.Claim(stp); !ok || a != page {
		t.Errorf("second Claim(stp) = %#x %v, want the stale slot", a, ok)
	}
	if _, _, ok := m.Claim(stp); ok {
		t.Error("a third stp found a slot")
	}
	if _, _, ok := m.Claim(word(0x94000000)); ok { // bl: never copied
		t.Error("bl found a slot")
	}
}

func TestCompareARM64(t *testing.T) {
	r := VerifyRecord{Predicted: Outcome{Errno: "EINVAL"}, Kernel: Outcome{Errno: "EINVAL"}}
	if m := CompareARM64(&r); !m["errno"] || !m["ftrace"] || len(m) != 2 {
		t.Errorf("both refuse: %v", m)
	}
	r = VerifyRecord{Predicted: Outcome{Addr: 8, Slot: "aa"}, Kernel: Outcome{Addr: 8}}
	if m := CompareARM64(&r); !m["errno"] || !m["addr"] || m["slot"] {
		t.Errorf("slot predicted, none in the kernel: %v", m)
	}
	r = VerifyRecord{Predicted: Outcome{Errno: "ENOTSUP"}, Kernel: Outcome{Errno: "EOPNOTSUPP"}}
	if m := CompareARM64(&r); !m["errno"] {
		t.Errorf("errno aliases: %v", m)
	}
}

// FuzzCoreFuncs: kimage.ParseSymbolLines refuses any text with a typed
// error or parses it, and what it parses gives functions of non-zero size.
func FuzzCoreFuncs(f *testing.F) {
	f.Add([]byte(testKallsyms))
	f.Add([]byte("0 T\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, err := kimage.ParseSymbolLines(b)
		if err != nil {
			if !errors.Is(err, kimage.ErrCorrupt) && !errors.Is(err, kimage.ErrPlaceholderMap) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		funcs, _ := CoreFuncs(ents)
		for _, s := range funcs {
			if s.Size == 0 {
				t.Fatalf("zero-size function %+v", s)
			}
		}
	})
}
