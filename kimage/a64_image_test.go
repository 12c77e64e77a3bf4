package kimage

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/kboost/kboost/decode"
	"golang.org/x/arch/arm64/arm64asm"
)

// A synthetic arm64 Image laid out as Linux 6.1 lays out Debian's: header and
// PE/COFF header, _stext at 64 KiB, init text, then data holding the tables,
// .rela.dyn, and the kallsyms text that names only functions and text markers.
// The expected tables are the ones the builder wrote.

const (
	synBase     = 0xffff800008000000
	synStext    = 0x10000
	synEtext    = 0x20000
	synSinit    = 0x20000
	synEinit    = 0x21000
	synExTab    = 0x22000
	synJumpTab  = 0x23000
	synBugTab   = 0x24000
	synMcount   = 0x25000
	synBlack    = 0x26000
	synRela     = 0x30000
	synKeys     = 0x3f000
	synFileSize = 0x40000
	synMemSize  = 0x41000
)

type synImage struct {
	b       []byte
	syms    []string // kallsyms lines
	relas   [][2]uint64
	ex      []uint64 // expected sites
	jump    []uint64
	bug     []uint64
	ftrace  []uint64 // ftrace records (entry + 4)
	black   []string // NOKPROBE functions
	nfuncs  int
	decoyAt uint64
}

func (s *synImage) put32(off uint64, w uint32) { binary.LittleEndian.PutUint32(s.b[off:], w) }

func (s *synImage) sym(off uint64, typ, name string) {
	s.syms = append(s.syms, fmt.Sprintf("%016x %s %s", synBase+off, typ, name))
}

// a64ADRP encodes ADRP Xd at pc to target's page.
func a64ADRP(d uint32, pc, target uint64) uint32 {
	imm := uint32((int64(target&^0xFFF) - int64(pc&^0xFFF)) >> 12)
	return 0x90000000 | (imm&3)<<29 | ((imm>>2)&0x7FFFF)<<5 | d
}

// a64ADDImm encodes ADD Xd, Xn, #imm12.
func a64ADDImm(d, n, imm uint32) uint32 { return 0x91000000 | (imm&0xFFF)<<10 | n<<5 | d }

// anchor writes a function at off that forms start and stop (and a decoy)
// with ADRP+ADD pairs, as the kernel's table walkers do.
func (s *synImage) anchor(off uint64, name string, start, stop uint64) {
	s.sym(off, "T", name)
	ws := []uint32{0xD503201F, 0xD503201F, 0xD503233F, // nop, nop, paciasp
		a64ADRP(1, synBase+off+12, synBase+start), a64ADRP(3, synBase+off+16, synBase+stop),
		a64ADDImm(1, 1, uint32(start&0xFFF)), a64ADDImm(3, 3, uint32(stop&0xFFF)),
		a64ADRP(0, synBase+off+28, synBase+s.decoyAt), a64ADDImm(0, 0, uint32(s.decoyAt&0xFFF)),
		0xD65F03C0}
	for i, w := range ws {
		s.put32(off+uint64(4*i), w)
	}
}

func newSynImage() *synImage {
	s := &synImage{b: make([]byte, synFileSize), decoyAt: 0x3e010}
	b := s.b
	copy(b, "MZ")
	binary.LittleEndian.PutUint64(b[a64HdrImageSize:], synMemSize)
	copy(b[arm64ImageMagicOff:], "ARMd")
	binary.LittleEndian.PutUint32(b[a64HdrPEOffset:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	binary.LittleEndian.PutUint16(b[0x44:], 0xaa64)
	binary.LittleEndian.PutUint16(b[0x46:], 1) // one section
	copy(b[0x40+24:], ".text")
	binary.LittleEndian.PutUint32(b[0x40+24+12:], synStext)

	s.sym(synStext, "T", "_stext")
	// Functions of 0x40 bytes: traced ones start with the two patchable NOPs.
	for i := 0; i < 32; i++ {
		off := uint64(synStext + 0x40*i)
		name := fmt.Sprintf("fn%d", i)
		s.sym(off, "t", name)
		traced := i%4 != 3
		for k := uint64(0); k < 0x40; k += 4 {
			s.put32(off+k, 0xAA0103E0) // mov x0, x1
		}
		if traced {
			s.put32(off, 0xD503201F)
			s.put32(off+4, 0xD503201F)
			s.ftrace = append(s.ftrace, synBase+off+4)
		}
		if i%5 == 1 {
			s.put32(off+0x10, 0xD503201F) // a jump-label NOP
			s.jump = append(s.jump, synBase+off+0x10)
		}
		if i%7 == 2 {
			s.put32(off+0x20, a64BugBRK)
			s.bug = append(s.bug, synBase+off+0x20)
		}
		if i%3 == 0 {
			s.ex = append(s.ex, synBase+off+0x18)
		}
		if i == 5 || i == 9 {
			s.black = append(s.black, name)
		}
		s.nfuncs++
	}
	s.anchor(0x11000, "search_kernel_exception_table", synExTab, synExTab+uint64(a64ExEntry*len(s.ex)))
	s.anchor(0x11100, "find_bug", synBugTab, synBugTab+uint64(12*len(s.bug)))
	s.sym(0x11200, "t", "after_anchors")
	s.sym(0x1f000, "T", "__kprobes_text_start")
	s.sym(0x1f040, "T", "__kprobes_text_end")
	s.sym(synEtext, "D", "_etext")
	s.sym(synSinit, "T", "_sinittext")
	s.anchor(synSinit, "jump_label_init", synJumpTab, synJumpTab+uint64(a64JumpEntry*len(s.jump)))
	s.anchor(synSinit+0x100, "ftrace_init", synMcount, synMcount+uint64(8*len(s.ftrace)))
	s.anchor(synSinit+0x200, "init_kprobes", synBlack, synBlack+uint64(8*len(s.black)))
	s.sym(synSinit+0x300, "t", "init_last")
	s.sym(synEinit, "T", "_einittext")

	// The tables.
	rel := func(field, target uint64) { s.put32(field, uint32(int32(int64(target)-int64(synBase+field)))) }
	for i, a := range s.ex {
		e := uint64(synExTab + a64ExEntry*i)
		rel(e, a)
		rel(e+4, synBase+0x11200)                     // fixup
		binary.LittleEndian.PutUint16(b[e+8:], 3)     // EX_TYPE_KACCESS_ERR_ZERO
		binary.LittleEndian.PutUint16(b[e+10:], 0x21) // data
	}
	for i, a := range s.jump {
		e := uint64(synJumpTab + a64JumpEntry*i)
		rel(e, a)
		rel(e+4, a+8)
		binary.LittleEndian.PutUint64(b[e+8:], uint64(int64(synKeys+16*i)-int64(e+8))|1)
	}
	for i, a := range s.bug {
		e := uint64(synBugTab + 12*i)
		rel(e, a)
		rel(e+4, synBase+synKeys) // file name
		binary.LittleEndian.PutUint16(b[e+8:], uint16(100+i))
	}
	for i, r := range s.ftrace {
		s.relas = append(s.relas, [2]uint64{synBase + synMcount + uint64(8*i), r - 4})
	}
	for i, name := range s.black {
		var fn uint64
		fmt.Sscanf(strings.TrimPrefix(name, "fn"), "%d", &fn)
		s.relas = append(s.relas, [2]uint64{synBase + synBlack + uint64(8*i), synBase + synStext + 0x40*fn})
	}
	for i := 0; i < 20; i++ { // other pointers in the data
		s.relas = append(s.relas, [2]uint64{synBase + 0x38000 + uint64(8*i), synBase + synKeys})
	}
	for i, r := range s.relas {
		e := uint64(synRela + a64RelaEntry*i)
		binary.LittleEndian.PutUint64(b[e:], r[0])
		binary.LittleEndian.PutUint64(b[e+8:], a64RRelative)
		binary.LittleEndian.PutUint64(b[e+16:], r[1])
	}
	return s
}

func (s *synImage) symtab(t testing.TB, shift int64) *SymTab {
	t.Helper()
	var lines []string
	for _, l := range s.syms {
		var a uint64
		var rest string
		fmt.Sscanf(l, "%x", &a)
		rest = l[17:]
		lines = append(lines, fmt.Sprintf("%016x %s", a+uint64(shift), rest))
	}
	st, err := ParseSymbolMap(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (s *synImage) open(t testing.TB) *File {
	t.Helper()
	f, err := OpenBytes(s.b)
	if err != nil {
		t.Fatal(err)
	}
	f.SetSymbols(s.symtab(t, 0))
	return f
}

func TestOpenARM64Image(t *testing.T) {
	s := newSynImage()
	f, err := OpenBytes(s.b)
	if err != nil {
		t.Fatal(err)
	}
	if f.Kind != KindARM64Image || f.Arch != decode.ARM64 || f.Machine != "EM_AARCH64" {
		t.Fatalf("Kind %v Arch %v Machine %s", f.Kind, f.Arch, f.Machine)
	}
	if base, from, ok := f.ARM64Base(); !ok || base != synBase {
		t.Fatalf("base %#x (%s) %v, want %#x from the relocations", base, from, ok, uint64(synBase))
	}
	if len(f.ExecSections()) != 0 {
		t.Errorf("executable sections before symbols: %v", f.ExecSections())
	}
	if slide := f.SetSymbols(s.symtab(t, 0)); slide != 0 {
		t.Errorf("slide %d for link-address symbols", slide)
	}
	want := map[string][2]uint64{".text": {synStext, synEtext}, ".init.text": {synSinit, synEinit}, ".head.text": {0, synStext}}
	for _, sec := range f.ExecSections() {
		w, ok := want[sec.Name]
		if !ok || sec.Addr != synBase+w[0] || sec.Size != w[1]-w[0] {
			t.Errorf("section %s %#x+%#x, want %v", sec.Name, sec.Addr, sec.Size, w)
		}
		delete(want, sec.Name)
	}
	if len(want) > 0 {
		t.Errorf("missing sections %v", want)
	}
	b, err := f.ReadAt(synBase+synStext+0x40, 8)
	if err != nil || !bytes.Equal(b, s.b[synStext+0x40:synStext+0x48]) {
		t.Errorf("ReadAt(fn1) = % x, %v", b, err)
	}
	if sec, ok := f.SectionAt(synBase + synFileSize + 16); ok {
		t.Errorf("bss address readable in %s", sec.Name)
	}
}

func TestOpenGzipARM64Image(t *testing.T) {
	s := newSynImage()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(s.b)
	zw.Close()
	if !IsGzipARM64Image(buf.Bytes()) {
		t.Fatal("IsGzipARM64Image false for a gzip'ed Image")
	}
	f, err := OpenBytes(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if f.Arch != decode.ARM64 || !bytes.Equal(f.Image(), s.b) {
		t.Fatalf("Arch %v, image %d bytes", f.Arch, len(f.Image()))
	}
}

func TestARM64ImageKASLR(t *testing.T) {
	s := newSynImage()
	f, err := OpenBytes(s.b)
	if err != nil {
		t.Fatal(err)
	}
	const kaslr = 0x1a3e00000
	if slide := f.SetSymbols(s.symtab(t, kaslr)); slide != -kaslr {
		t.Fatalf("slide %#x, want %#x", slide, -kaslr)
	}
	if sym, ok := f.Symbols.ByName("fn3"); !ok || sym.Addr != synBase+synStext+3*0x40 {
		t.Fatalf("fn3 at %#x after the shift", sym.Addr)
	}
	tabs, err := KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	if got := tabs.Ftrace.Addrs.Addrs(); len(got) != len(s.ftrace) {
		t.Errorf("ftrace records %d, want %d", len(got), len(s.ftrace))
	}
}

func TestARM64KernelTables(t *testing.T) {
	s := newSynImage()
	f := s.open(t)
	tabs, err := KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	check := func(tb *Table, want []uint64) {
		t.Helper()
		if tb.Source != SourceCode {
			t.Errorf("%s: %s", tb.Name, tb)
			return
		}
		got := tb.Addrs.Addrs()
		if fmt.Sprint(got) != fmt.Sprint(NewAddrSet(want).Addrs()) {
			t.Errorf("%s: got %x, want %x", tb.Name, got, want)
		}
	}
	check(&tabs.ExTable, s.ex)
	check(&tabs.JumpLabel, s.jump)
	check(&tabs.Bug, s.bug)
	check(&tabs.Ftrace, s.ftrace)
	if tabs.KprobeBlacklist.Source != SourceCode {
		t.Fatalf("blacklist: %s", &tabs.KprobeBlacklist)
	}
	var names []string
	for _, r := range tabs.KprobeBlacklist.Ranges.Ranges() {
		names = append(names, r.Name)
		if r.End-r.Start != 0x40 {
			t.Errorf("blacklist range %s %#x-%#x: want the whole 0x40-byte function", r.Name, r.Start, r.End)
		}
	}
	if strings.Join(names, " ") != strings.Join(s.black, " ") {
		t.Errorf("blacklist %v, want %v", names, s.black)
	}
	if !tabs.StaticCall.Known() || tabs.StaticCall.Len() != 0 {
		t.Errorf("static calls: %s", &tabs.StaticCall)
	}
	kp := tabs.KprobesText.Ranges.Ranges()
	if len(kp) != 1 || kp[0].Start != synBase+0x1f000 || kp[0].End != synBase+0x1f040 {
		t.Errorf(".kprobes.text %v", kp)
	}
	found := false
	for _, r := range tabs.Refused {
		found = found || r == &tabs.KprobesText
	}
	if !found || len(tabs.Refused) == 0 {
		t.Errorf("Refused does not list .kprobes.text")
	}
	// Without symbols the tables cannot be located: missing, with a note.
	g, _ := OpenBytes(s.b)
	tabs, err = KernelTables(g)
	if err != nil {
		t.Fatal(err)
	}
	if tabs.ExTable.Known() || !strings.Contains(tabs.ExTable.Note, "--symbols") {
		t.Errorf("no symbols: %s", &tabs.ExTable)
	}
}

// A corrupted entry makes the table missing rather than wrong.
func TestARM64KernelTablesRejectMalformed(t *testing.T) {
	s := newSynImage()
	binary.LittleEndian.PutUint16(s.b[synExTab+a64ExEntry+8:], 9) // no such EX_TYPE
	s.put32(s.bug[0]-synBase, 0xD503201F)                         // not BRK #0x800 any more
	f := s.open(t)
	tabs, err := KernelTables(f)
	if err != nil {
		t.Fatal(err)
	}
	if tabs.ExTable.Known() || tabs.Bug.Known() {
		t.Errorf("malformed tables accepted: %s; %s", &tabs.ExTable, &tabs.Bug)
	}
	if !tabs.JumpLabel.Known() {
		t.Errorf("jump labels: %s", &tabs.JumpLabel)
	}
}

// A64AddrRefs agrees with golang.org/x/arch's decoding of ADRP and ADD.
func TestA64AddrRefsMatchesXArch(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 2000; i++ {
		pc := uint64(0xffff800008000000) + uint64(r.Intn(1<<26))*4
		target := pc + uint64(int64(r.Intn(1<<30))-1<<29)
		d, n := uint32(r.Intn(31)), uint32(r.Intn(31))
		adrp := a64ADRP(d, pc, target)
		add := a64ADDImm(n, d, uint32(target&0xFFF))
		var code [8]byte
		binary.LittleEndian.PutUint32(code[:], adrp)
		binary.LittleEndian.PutUint32(code[4:], add)
		// x/arch: ADRP's PCRel is relative to the page of pc; ADD's immediate.
		in1, err1 := arm64asm.Decode(code[:4])
		in2, err2 := arm64asm.Decode(code[4:])
		if err1 != nil || err2 != nil || in1.Op != arm64asm.ADRP || in2.Op != arm64asm.ADD {
			t.Fatalf("x/arch: %v %v / %v %v", in1, err1, in2, err2)
		}
		page := (pc &^ 0xFFF) + uint64(int64(in1.Args[1].(arm64asm.PCRel)))
		var imm uint64
		fmt.Sscanf(strings.TrimPrefix(in2.Args[2].String(), "#"), "%v", &imm)
		want := page + imm
		got := A64AddrRefs(code[:], pc)
		if len(got) != 1 || got[0] != want || want != target {
			t.Fatalf("pc %#x target %#x: A64AddrRefs %x, x/arch %#x (%v; %v)", pc, target, got, want, in1, in2)
		}
	}
}

// The fuzz targets: no input makes the arm64 readers panic.

// synSymtab is the synthetic Image's symbol table, built once: SetSymbols
// only reads it (a shift makes a new table), and building the Image for
// every fuzz input cost most of each execution.
var synSymtab = sync.OnceValue(func() *SymTab {
	st, err := ParseSymbolMap(strings.NewReader(strings.Join(newSynImage().syms, "\n")))
	if err != nil {
		panic(err)
	}
	return st
})

func fuzzTables(t *testing.T, b []byte) {
	f, err := OpenBytes(b)
	if err != nil || f.Arch == nil {
		return
	}
	f.SetSymbols(synSymtab())
	tabs, err := KernelTables(f)
	if err == nil {
		for _, x := range tabs.All() {
			_ = x.String()
		}
	}
}

func fuzzRegion(f *testing.F, off uint64, name string) {
	s := newSynImage()
	f.Add(append([]byte(nil), s.b[off:off+256]...))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		img := append([]byte(nil), s.b...)
		copy(img[off:min(uint64(len(img)), off+0x1000)], data)
		fuzzTables(t, img)
	})
}

func FuzzArm64ExTable(f *testing.F)   { fuzzRegion(f, synExTab, "ex") }
func FuzzArm64JumpTable(f *testing.F) { fuzzRegion(f, synJumpTab, "jump") }
func FuzzArm64BugTable(f *testing.F)  { fuzzRegion(f, synBugTab, "bug") }
func FuzzArm64Rela(f *testing.F)      { fuzzRegion(f, synRela, "rela") }
func FuzzArm64Anchors(f *testing.F)   { fuzzRegion(f, 0x11000, "code") }

func FuzzARM64Image(f *testing.F) {
	s := newSynImage()
	f.Add(s.b[:0x200])
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(s.b[:0x1000])
	zw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0x40 {
			copy(data[arm64ImageMagicOff:], "ARMd")
		}
		_, _ = ParseARM64Image(data)
		_ = IsGzipARM64Image(data)
		fuzzTables(t, data)
	})
}

func FuzzA64AddrRefs(f *testing.F) {
	s := newSynImage()
	f.Add(s.b[0x11000:0x11040], uint64(synBase+0x11000))
	f.Fuzz(func(t *testing.T, code []byte, pc uint64) {
		_ = A64AddrRefs(code, pc)
	})
}
