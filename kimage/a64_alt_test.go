package kimage

import (
	"encoding/binary"
	"errors"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"golang.org/x/arch/arm64/arm64asm"
)

// The synthetic Image of a64_image_test.go, with an alternatives table as
// Linux 6.1 lays it out: alt_instr entries, replacement code in the text, a
// const alt_region {__alt_instructions, __alt_instructions_end} of two
// relocated pointers loaded by __apply_alternatives_multi_stop, and one
// capability descriptor (struct arm64_cpu_capabilities) naming its cpucap.

const (
	synAltTab    = 0x28000
	synAltRegion = 0x29000
	synAltRepl   = 0x1e000
	synCapDesc   = 0x3a000 // "ARM erratum 832075"
	synCapStruct = 0x3b000
)

type synAlt struct {
	orig    uint64 // Image offset
	repl    []uint32
	cb      string // callback symbol, "" for a replacement
	cap     string
	origLen int // 0: len(repl)*4
}

// synAlts are the test's sites; Image offsets of fnN are 0x10000+0x40*N.
var synAlts = []synAlt{
	{orig: 0x10048, repl: []uint32{0x88DFFC42}, cap: "WORKAROUND_DEVICE_LOAD_ACQUIRE"}, // ldr w2,[x2] -> ldar w2,[x2]
	// A B leaving the sequence and a CBZ to its own end (inclusive bound).
	{orig: 0x10090, repl: []uint32{0x14000000 | 0x40, 0xB4000000 | 1<<5}, cap: "HAS_LSE_ATOMICS"}, // cbz x0, .+4
	// An ADRP, moved from the replacement's page.
	{orig: 0x100d4, repl: []uint32{0}, cap: "HAS_PAN"},
	{orig: 0x1010c, cb: "alt_cb_patch_nops", cap: "HAS_LSE_ATOMICS", origLen: 8},
	{orig: 0x1014c, cb: "spectre_bhb_patch_wa3", cap: "ALWAYS_SYSTEM", origLen: 4},
	{orig: 0x10188, repl: []uint32{0x58000040}, cap: "HAS_PAN"}, // ldr x0, literal: the kernel BUGs
	{orig: 0x101c8, repl: []uint32{0xD503201F}, cap: "SVE"},     // absent from the tests' caps
	{orig: 0x1020c, cb: "kvm_update_va_mask", cap: "ALWAYS_SYSTEM", origLen: 20},
}

// withAlternatives adds synAlts to s, numbering cpucaps with names and
// describing "ARM erratum 832075" as cpucap descCap (-1: no descriptor).
func withAlternatives(t testing.TB, s *synImage, names []string, descCap int) {
	t.Helper()
	num := func(n string) uint16 {
		i := slices.Index(names, n)
		if i < 0 {
			t.Fatalf("no cpucap %s", n)
		}
		return uint16(i)
	}
	s.anchor(0x11400, "__apply_alternatives_multi_stop", synAltRegion, synAltRegion+8)
	s.sym(0x11500, "T", "alt_cb_patch_nops")
	s.put32(0x11500, 0xD65F03C0)
	s.sym(0x11600, "T", "spectre_bhb_patch_wa3")
	s.put32(0x11600, 0xD65F03C0)
	s.sym(0x11700, "T", "kvm_update_va_mask")
	s.put32(0x11700, 0xD65F03C0)
	s.sym(0x11800, "t", "after_callbacks")
	repl := uint64(synAltRepl)
	for i, a := range synAlts {
		e := uint64(synAltTab + a64AltEntry*i)
		s.put32(e, uint32(int32(int64(a.orig)-int64(e))))
		feat := num(a.cap)
		olen := a.origLen
		if a.cb != "" {
			cb := map[string]uint64{"alt_cb_patch_nops": 0x11500, "spectre_bhb_patch_wa3": 0x11600, "kvm_update_va_mask": 0x11700}[a.cb]
			s.put32(e+4, uint32(int32(int64(cb)-int64(e+4))))
			feat |= A64CapCallback
		} else {
			words := a.repl
			if i == 2 { // ADRP x3 to the page 2 pages after the replacement's
				words = []uint32{a64ADRP(3, synBase+repl, synBase+repl+0x2000)}
			}
			s.put32(e+4, uint32(int32(int64(repl)-int64(e+4))))
			for k, w := range words {
				s.put32(repl+uint64(4*k), w)
			}
			olen = 4 * len(words)
			s.b[e+11] = byte(olen)
			repl += uint64(4 * len(words))
		}
		binary.LittleEndian.PutUint16(s.b[e+8:], feat)
		s.b[e+10] = byte(olen)
	}
	// The alt_region and its relocations, after the existing ones.
	s.relas = append(s.relas,
		[2]uint64{synBase + synAltRegion, synBase + synAltTab},
		[2]uint64{synBase + synAltRegion + 8, synBase + synAltTab + uint64(a64AltEntry*len(synAlts))})
	if descCap >= 0 {
		copy(s.b[synCapDesc:], "ARM erratum 832075\x00")
		binary.LittleEndian.PutUint16(s.b[synCapStruct+8:], uint16(descCap))
		s.relas = append(s.relas, [2]uint64{synBase + synCapStruct, synBase + synCapDesc})
	}
	for i, r := range s.relas {
		e := uint64(synRela + a64RelaEntry*i)
		binary.LittleEndian.PutUint64(s.b[e:], r[0])
		binary.LittleEndian.PutUint64(s.b[e+8:], a64RRelative)
		binary.LittleEndian.PutUint64(s.b[e+16:], r[1])
	}
}

func TestARM64Alternatives(t *testing.T) {
	old := a64Caps61Old()
	s := newSynImage()
	withAlternatives(t, s, old, slices.Index(old, "WORKAROUND_DEVICE_LOAD_ACQUIRE"))
	f := s.open(t)
	tab, err := ARM64Alternatives(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(tab.From, "; ", tab.Caps.From)
	if len(tab.Alts) != len(synAlts) {
		t.Fatalf("%d alternatives, want %d", len(tab.Alts), len(synAlts))
	}
	if !slices.Equal(tab.Caps.Names, old) {
		t.Fatalf("numbering %s, want the older 6.1 one (the descriptor says cpucap %d)", tab.Caps.From, slices.Index(old, "WORKAROUND_DEVICE_LOAD_ACQUIRE"))
	}
	for i, a := range tab.Alts {
		if a.Orig != synBase+synAlts[i].orig || tab.Caps.Name(a.Cap) != synAlts[i].cap || a.Callback != (synAlts[i].cb != "") {
			t.Errorf("entry %d: %+v (%s), want %+v", i, a, tab.Caps.Name(a.Cap), synAlts[i])
		}
		if a.Callback && tab.Callback(&tab.Alts[i]) != synAlts[i].cb {
			t.Errorf("entry %d: callback %s, want %s", i, tab.Callback(&tab.Alts[i]), synAlts[i].cb)
		}
	}
	caps, err := tab.Caps.ParseCaps("workaround_device_load_acquire, ARM64_HAS_LSE_ATOMICS,HAS_PAN")
	if err != nil {
		t.Fatal(err)
	}
	var ce *CapError
	if _, err := tab.Caps.ParseCaps("HAS_LSE_ATOMICS,NO_SUCH_CAP"); !errors.As(err, &ce) || ce.Name != "NO_SUCH_CAP" {
		t.Errorf("unknown cpucap: %v", err)
	}
	pac, _ := tab.Caps.ParseCaps("HAS_ADDRESS_AUTH_ARCH_QARMA5")
	if c, _ := tab.Caps.Lookup("HAS_ADDRESS_AUTH"); !pac.Has(c) {
		t.Errorf("HAS_ADDRESS_AUTH_ARCH_QARMA5 does not imply HAS_ADDRESS_AUTH: %v", pac.Caps())
	}
	none, _ := tab.Caps.ParseCaps("none")
	if got := len(none.Caps()); got != len(A64CapsAlways) {
		t.Errorf("none holds %d cpucaps, want the %d always-on ones", got, len(A64CapsAlways))
	}

	// Patch the functions fn1..fn7 whole and check each site.
	start := uint64(synBase + 0x10040)
	orig, _ := f.ReadAt(start, 0x1c0)
	b := append([]byte(nil), orig...)
	sites := tab.Apply(start, b, &caps)
	want := []A64AltStatus{AltApplied, AltApplied, AltApplied, AltNops, AltCallbackUnmodelled, AltUnpatchable, AltNotApplied}
	if len(sites) != len(want) {
		t.Fatalf("%d sites met, want %d", len(sites), len(want))
	}
	word := func(bb []byte, a uint64) uint32 { return binary.LittleEndian.Uint32(bb[a-start:]) }
	for i, st := range sites {
		if st.Status != want[i] {
			t.Errorf("site %d at %#x: %s, want %s", i, st.Alt.Orig, st.Status, want[i])
		}
		switch st.Status {
		case AltNotApplied, AltCallbackUnmodelled, AltUnpatchable:
			for k := 0; k < st.Alt.OrigLen; k += 4 {
				if a := st.Alt.Orig + uint64(k); word(b, a) != word(orig, a) {
					t.Errorf("site %d (%s): word at %#x changed", i, st.Status, a)
				}
			}
		case AltNops:
			for k := 0; k < st.Alt.OrigLen; k += 4 {
				if w := word(b, st.Alt.Orig+uint64(k)); w != a64NOP {
					t.Errorf("site %d: %#08x, want NOP", i, w)
				}
			}
		}
	}
	if w := word(b, synBase+0x10048); w != 0x88DFFC42 {
		t.Errorf("LDAR site: %#08x", w)
	}
	// The branches and the ADRP, checked with golang.org/x/arch: the B
	// leaving the sequence keeps its target, the CBZ aimed at the end of the
	// sequence is copied as it is, the ADRP keeps its page.
	target := func(w uint32, pc uint64) uint64 {
		_, to := xarchPCRel(t, w, pc)
		return to
	}
	replB := uint64(synBase + synAltRepl + 4)
	if got, w := target(word(b, synBase+0x10090), synBase+0x10090), target(0x14000040, replB); got != w {
		t.Errorf("B: aims at %#x after patching, %#x before", got, w)
	}
	if w := word(b, synBase+0x10094); w != 0xB4000020 {
		t.Errorf("CBZ inside the sequence rewritten: %#08x", w)
	}
	replADRP := uint64(synBase + synAltRepl + 12)
	adrp := a64ADRP(3, replADRP, replADRP+0x2000)
	if got, w := target(word(b, synBase+0x100d4), synBase+0x100d4), target(adrp, replADRP); got != w {
		t.Errorf("ADRP: page %#x after patching, %#x before", got, w)
	}

	// kvm_update_va_mask writes NOPs on a VHE system only.
	fn8 := uint64(synBase + 0x10200)
	for _, c := range []struct {
		caps string
		want A64AltStatus
	}{{"HAS_VIRT_HOST_EXTN", AltNops}, {"HAS_PAN", AltCallbackUnmodelled}} {
		cs, err := tab.Caps.ParseCaps(c.caps)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := f.ReadAt(fn8, 0x40)
		w := append([]byte(nil), o...)
		st := tab.Apply(fn8, w, &cs)
		if len(st) != 1 || st[0].Status != c.want {
			t.Fatalf("kvm_update_va_mask with %s: %+v, want %s", c.caps, st, c.want)
		}
		for k := 0xc; k < 0x20; k += 4 {
			if got := binary.LittleEndian.Uint32(w[k:]); (got == a64NOP) != (c.want == AltNops) {
				t.Errorf("kvm_update_va_mask with %s: word +%#x = %#08x", c.caps, k, got)
			}
		}
	}

	// A window cutting a site in half patches only its part.
	half := append([]byte(nil), orig[0x54:0x54+4]...)
	tab.Apply(start+0x54, half, &caps)
	if got := binary.LittleEndian.Uint32(half); got != word(b, start+0x54) {
		t.Errorf("window patch %#08x, whole patch %#08x", got, word(b, start+0x54))
	}
}

// The newer numbering is chosen when the descriptor says so.
func TestARM64AlternativesNumbering(t *testing.T) {
	for _, c := range []struct {
		names []string
		what  string
	}{{a64Caps61, "6.1.192"}, {a64Caps61Old(), "older"}} {
		s := newSynImage()
		withAlternatives(t, s, c.names, slices.Index(c.names, "WORKAROUND_DEVICE_LOAD_ACQUIRE"))
		tab, err := ARM64Alternatives(s.open(t))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tab.Caps.Names, c.names) {
			t.Errorf("%s numbering: got %s", c.what, tab.Caps.From)
		}
	}
	// No descriptor: the newest list, marked unchecked.
	s := newSynImage()
	withAlternatives(t, s, a64Caps61, -1)
	tab, err := ARM64Alternatives(s.open(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.Caps.Names, a64Caps61) {
		t.Errorf("no descriptor: %s", tab.Caps.From)
	}
}

func TestARM64AlternativesMissing(t *testing.T) {
	s := newSynImage() // no alternatives table, no anchor
	if _, err := ARM64Alternatives(s.open(t)); !errors.Is(err, ErrNoSymbol) {
		t.Errorf("an Image without __apply_alternatives_multi_stop: %v, want ErrNoSymbol", err)
	}
	s = newSynImage()
	withAlternatives(t, s, a64Caps61, -1)
	s.b[synAltTab+10] = 3 // orig_len not a multiple of 4
	if _, err := ARM64Alternatives(s.open(t)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a malformed table: %v, want ErrCorrupt", err)
	}
}

func TestParseA64Alternatives(t *testing.T) {
	ent := func(orig, alt int32, feat uint16, ol, al byte) []byte {
		e := make([]byte, 12)
		binary.LittleEndian.PutUint32(e, uint32(orig))
		binary.LittleEndian.PutUint32(e[4:], uint32(alt))
		binary.LittleEndian.PutUint16(e[8:], feat)
		e[10], e[11] = ol, al
		return e
	}
	const at = 0xffff800009000000
	alts, err := ParseA64Alternatives(append(ent(-0x1000, -0x800, 78, 8, 8), ent(-0x100c, 0x40, 26|A64CapCallback, 4, 0)...), at)
	if err != nil {
		t.Fatal(err)
	}
	want := []A64Alt{
		{Entry: at, Orig: at - 0x1000, Repl: at + 4 - 0x800, Cap: 78, OrigLen: 8, AltLen: 8},
		{Entry: at + 12, Orig: at + 12 - 0x100c, Repl: at + 16 + 0x40, Cap: 26, Callback: true, OrigLen: 4},
	}
	if !slices.Equal(alts, want) {
		t.Errorf("got %+v\nwant %+v", alts, want)
	}
	// orig_len 0 patches nothing (__apply_alternatives: nr_inst 0); Debian's
	// 7.2 Image has such entries.
	if _, err := ParseA64Alternatives(ent(0, 0, 1, 0, 0), at); err != nil {
		t.Errorf("orig_len 0: %v, want accepted", err)
	}
	for name, b := range map[string][]byte{
		"short":            ent(0, 0, 1, 4, 4)[:11],
		"orig_len 6":       ent(0, 0, 1, 6, 6),
		"unaligned":        ent(2, 0, 1, 4, 4),
		"alt_len mismatch": ent(0, 0, 1, 8, 4),
		"callback alt_len": ent(0, 0, 1|A64CapCallback, 4, 4),
	} {
		_, err := ParseA64Alternatives(b, at)
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want a *FormatError wrapping ErrCorrupt", name, err)
		}
	}
}

// A64AltInsn keeps every PC-relative target that leaves the sequence, as
// golang.org/x/arch decodes the words before and after; targets inside the
// sequence and other instructions are copied as they are.
func TestA64AltInsnMatchesXArch(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	forms := []struct {
		base, field uint32
		bits        uint
		shift       uint
	}{
		{0x14000000, 0, 26, 0}, {0x94000000, 0, 26, 0}, // B, BL
		{0x54000000, 0xF, 19, 5}, {0xB4000000, 0x1F, 19, 5}, {0x35000000, 0x1F, 19, 5}, // B.cond, CBZ, CBNZ
		{0x36000000, 0x1F | 0x1F<<19 | 1<<31, 14, 5}, {0x37000000, 0x1F, 14, 5}, // TBZ, TBNZ
	}
	checked := 0
	for i := 0; i < 20000; i++ {
		alt := uint64(0xffff800009000000) + uint64(r.Intn(1<<20))*4
		altLen := 4 * (1 + r.Intn(4))
		from := alt + uint64(4*r.Intn(altLen/4))
		var w uint32
		var span int64
		if i%8 == 7 { // ADRP
			imm := uint32(r.Intn(1 << 21))
			w = 0x90000000 | (imm&3)<<29 | (imm>>2)<<5 | uint32(r.Intn(31))
			span = 1 << 31
		} else {
			fm := forms[r.Intn(len(forms))]
			w = fm.base | uint32(r.Int63())&fm.field | (uint32(r.Int63())&(1<<fm.bits-1))<<fm.shift
			span = 1 << (fm.bits + 1)
		}
		// The new place is near enough for the field to hold the distance.
		to := uint64(int64(from) + (r.Int63n(span/2)-span/4)&^3)
		got, ok := A64AltInsn(w, to, from, alt, altLen)
		if !ok {
			t.Fatalf("%#08x refused", w)
		}
		in0, t0 := xarchPCRel(t, w, from)
		in1, t1 := xarchPCRel(t, got, to)
		if in0.Op != in1.Op {
			t.Fatalf("%v became %v", in0, in1)
		}
		inside := in0.Op != arm64asm.ADRP && t0 >= alt && t0 <= alt+uint64(altLen)
		if d := int64(t0 - to); in0.Op != arm64asm.ADRP && (d >= span/2 || d < -span/2) || in0.Op == arm64asm.ADRP && (d >= 1<<31 || d < -1<<31) {
			continue // the field cannot hold the new distance (the kernel truncates it)
		}
		checked++
		switch {
		case inside && got != w:
			t.Fatalf("%v at %#x aims inside [%#x,+%d] but was rewritten to %#08x", in0, from, alt, altLen, got)
		case !inside && t1 != t0:
			t.Fatalf("%v at %#x (target %#x) moved to %#x: %v targets %#x", in0, from, t0, to, in1, t1)
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d of 20000 words checked", checked)
	}
	for _, w := range []uint32{0x18000040, 0x58000040, 0x98000040, 0x10000040, 0xD8000040} { // LDR lit, LDRSW lit, ADR, PRFM lit
		if _, ok := A64AltInsn(w, 0x1000, 0x2000, 0x2000, 4); ok {
			t.Errorf("%#08x: a literal access was moved", w)
		}
	}
	if got, ok := A64AltInsn(0xD503201F, 0x1000, 0x2000, 0x2000, 4); !ok || got != 0xD503201F {
		t.Errorf("NOP: %#08x %v", got, ok)
	}
}

func FuzzParseA64Alternatives(f *testing.F) {
	s := newSynImage()
	withAlternatives(f, s, a64Caps61, -1)
	f.Add(append([]byte(nil), s.b[synAltTab:synAltTab+a64AltEntry*len(synAlts)]...), uint64(synBase+synAltTab))
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, addr uint64) {
		alts, err := ParseA64Alternatives(b, addr)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(alts) != len(b)/a64AltEntry {
			t.Fatalf("%d entries from %d bytes", len(alts), len(b))
		}
	})
}

// FuzzARM64AlternativesApply: any table content (located through the
// synthetic Image's alt_region) parses or fails cleanly, and patching any
// window never panics.
func FuzzARM64AlternativesApply(f *testing.F) {
	s := newSynImage()
	withAlternatives(f, s, a64Caps61, -1)
	f.Add(append([]byte(nil), s.b[synAltTab:synAltTab+a64AltEntry*len(synAlts)]...), uint64(0x40), uint16(0x1c0))
	f.Fuzz(func(t *testing.T, tab []byte, off uint64, n uint16) {
		img := append([]byte(nil), s.b...)
		copy(img[synAltTab:synAltTab+a64AltEntry*len(synAlts)], tab)
		fi, err := OpenBytes(img)
		if err != nil {
			t.Fatal(err)
		}
		fi.SetSymbols(s.symtab(t, 0))
		at, err := ARM64Alternatives(fi)
		if err != nil {
			return
		}
		var all A64CapSet
		for c := 0; c < a64NoCapsMax; c++ {
			all.Add(A64Cap(c))
		}
		addr := uint64(synBase+0x10000) + off%0x1000
		b := make([]byte, int(n)%0x400)
		at.Apply(addr, b, &all)
	})
}

// xarchPCRel decodes w at pc with golang.org/x/arch and returns it with the
// address its PC-relative operand names (ADRP: the 4 KiB page); a word
// x/arch cannot decode, or one without such an operand, fails the test.
func xarchPCRel(t *testing.T, w uint32, pc uint64) (arm64asm.Inst, uint64) {
	t.Helper()
	var x [4]byte
	binary.LittleEndian.PutUint32(x[:], w)
	in, err := arm64asm.Decode(x[:])
	if err != nil {
		t.Fatalf("x/arch: %#08x: %v", w, err)
	}
	for _, a := range in.Args {
		if rel, ok := a.(arm64asm.PCRel); ok {
			if in.Op == arm64asm.ADRP {
				return in, (pc &^ 0xFFF) + uint64(int64(rel))
			}
			return in, pc + uint64(int64(rel))
		}
	}
	t.Fatalf("x/arch: %v has no PC-relative operand", in)
	return in, 0
}

// The kernel logs "CPU features: detected: ARM erratum 832075" for
// WORKAROUND_DEVICE_LOAD_ACQUIRE (arch/arm64/kernel/cpu_errata.c); the
// synthetic Image's descriptor carries that description.
func TestARM64CapsFromBootLog(t *testing.T) {
	old := a64Caps61Old()
	s := newSynImage()
	withAlternatives(t, s, old, slices.Index(old, "WORKAROUND_DEVICE_LOAD_ACQUIRE"))
	tab, err := ARM64Alternatives(s.open(t))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tab.Caps.Lookup("WORKAROUND_DEVICE_LOAD_ACQUIRE")
	lse, _ := tab.Caps.Lookup("HAS_LSE_ATOMICS")
	log := "[    0.000000] Booting Linux on physical CPU 0x0000000000 [0x411fd070]\n" +
		"[    0.100000] CPU features: detected: ARM erratum 832075\n" +
		"[    0.100001] CPU features: detected: Some feature this Image does not describe\n"
	for _, in := range []string{log, "ARM erratum 832075", "HAS_LSE_ATOMICS, ARM erratum 832075"} {
		caps, err := tab.Caps.ParseCaps(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if !caps.Has(want) || caps.Has(lse) != strings.Contains(in, "LSE") {
			t.Errorf("%q: cpucaps %v, want WORKAROUND_DEVICE_LOAD_ACQUIRE (%d)", in, caps.Caps(), want)
		}
	}
	var ce *CapError
	if _, err := tab.Caps.ParseCaps("ARM erratum 999999"); !errors.As(err, &ce) {
		t.Errorf("an undescribed erratum: %v", err)
	}
}
