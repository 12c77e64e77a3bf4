package uprobe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kboost/kboost/decode"
)

func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		in, path string
		req      *Request
		bad      bool
	}{
		{"/bin/x", "/bin/x", nil, false},
		{"/bin/x:main", "/bin/x", &Request{Symbol: "main"}, false},
		{"/bin/x:main+0x10", "/bin/x", &Request{Symbol: "main", Off: 16}, false},
		{"/bin/x:main+12", "/bin/x", &Request{Symbol: "main", Off: 12}, false},
		{"/bin/x:main%return", "/bin/x", &Request{Symbol: "main", Return: true}, false},
		{"/bin/x:0x401000", "/bin/x", &Request{Addr: 0x401000, HasAddr: true}, false},
		{"/bin/x:main.work", "/bin/x", &Request{Symbol: "main.work"}, false},
		{"/bin/x:usdt/kbtest/gated", "/bin/x", &Request{USDT: "kbtest/gated"}, false},
		{"/bin/x:usdt/kbtest", "", nil, true},
		{":main", "", nil, true},
		{"/bin/x:ma in", "", nil, true},
		{"/bin/x:0xzz", "", nil, true},
		{"/bin/x:main+1%return", "", nil, true},
		{"/bin/x:main+x", "", nil, true},
	} {
		p, r, err := ParseTarget(c.in)
		if (err != nil) != c.bad || !c.bad && (p != c.path || !cmp.Equal(r, c.req)) {
			t.Errorf("%q: %q %+v %v", c.in, p, r, err)
		}
	}
}

func TestDefinition(t *testing.T) {
	d, err := Probe{Path: "/usr/bin/bash", Offset: 0x1159, RefCtrOffset: 0x4010}.Definition("kboost_u", "bash_1159")
	if err != nil || d != "p:kboost_u/bash_1159 /usr/bin/bash:0x1159(0x4010)" {
		t.Errorf("%q %v", d, err)
	}
	d, err = Probe{Path: "/x/y", Offset: 0, Return: true}.Definition("kboost", "y_0_ret")
	if err != nil || d != "r:kboost/y_0_ret /x/y:0x0" {
		t.Errorf("%q %v", d, err)
	}
	for _, p := range []string{"rel/path", "/a b", "/a:b", "/a\nb", "/a(b)", "/a;rm"} {
		if _, err := (Probe{Path: p}).Definition("kboost", "e"); err == nil {
			t.Errorf("%q accepted", p)
		}
	}
	if _, err := (Probe{Path: "/x"}).Definition("other", "e"); err == nil {
		t.Error("group outside kboost* accepted")
	}
	if n := (Probe{Path: "/usr/lib/libc.so.6", Offset: 0x2a, Return: true}).EventName(); n != "libc_so_6_2a_ret" {
		t.Errorf("event name %q", n)
	}
}

func TestReadbackJudges(t *testing.T) {
	maps := ParseMaps([]byte("55d0c0000000-55d0c0001000 r-xp 00000000 00:00 0                          [uprobes-trampoline]\n" +
		"55d0c0001000-55d0c0003000 r-xp 00001000 fe:00 99 /tmp/t\n" +
		"7fffffffe000-7ffffffff000 --xp 00000000 00:00 0                          [uprobes]\n"))
	if a, ok := siteAddr(maps, "/tmp/t", 0x1159); !ok || a != 0x55d0c0001159 {
		t.Fatalf("site %#x %v", a, ok)
	}
	var r Readback
	r.Addr = 0x55d0c0001159
	tramp, next := int64(0x55d0c0000000), int64(0x55d0c0001159+5)
	rel := uint32(int32(tramp - next))
	site := []byte{0xe8, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(site[1:], rel)
	fillReadback(&r, maps, site, []byte{0xcc})
	if !r.Call || !r.XOL || !r.Trampoline || r.Observed() != "optimized" {
		t.Errorf("%+v", r)
	}
	// 7.2's form: lea -0x80(%rsp),%rsp, then the call (5 bytes further).
	r = Readback{Addr: 0x55d0c0001159}
	site = []byte{0x48, 0x8d, 0x64, 0x24, 0x80, 0xe8, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(site[6:], uint32(int32(tramp-next-5)))
	fillReadback(&r, maps, site, []byte{0xcc})
	if !r.Call || r.CallTarget != Hex(tramp) || r.Observed() != "optimized" {
		t.Errorf("7.2 form: %+v", r)
	}
	r = Readback{Addr: 0x55d0c0001159}
	fillReadback(&r, maps[1:2], []byte{0xcc, 0x1f}, []byte{0xcc})
	if r.Observed() != "emulated" {
		t.Errorf("%+v", r)
	}
}

// redZoneUse on assembled bytes: leaf functions with data below %rsp, and
// functions that lower %rsp first.
func TestRedZoneUse(t *testing.T) {
	for _, c := range []struct {
		hex  string
		want int64 // offset of the first red-zone access, -1 none
	}{
		{"48 89 7c 24 f8 0f 1f 44 00 00 48 8b 44 24 f8 c3", 0}, // mov %rdi,-8(%rsp)
		{"48 83 ec 10 48 89 7c 24 08 48 83 c4 10 c3", -1},      // sub $16,%rsp first
		{"55 48 89 e5 89 7d fc 8b 45 fc 5d c3", 4},             // -O0 leaf: -4(%rbp) is below %rsp
		{"55 48 89 e5 48 83 ec 10 89 7d fc c9 c3", -1},         // with a frame
		{"0f 1f 44 00 00 48 8d 44 24 f8 c3", -1},               // lea is no access
		{"48 8b 44 24 08 c3", -1},                              // above %rsp
	} {
		b := hexBytes(t, c.hex)
		var insts []decode.Inst
		for off := 0; off < len(b); {
			in, err := decode.Decode(b[off:], decode.Mode64, 0x1000+uint64(off))
			if err != nil {
				t.Fatalf("%s: %v", c.hex, err)
			}
			insts = append(insts, in)
			off += in.Len
		}
		got := int64(-1)
		if r := redZoneUse(insts, decode.Mode64); r != nil {
			got = int64(r.Off)
		}
		if got != c.want {
			t.Errorf("%s: red zone at %d, want %d", c.hex, got, c.want)
		}
	}
}

func hexBytes(t *testing.T, s string) []byte {
	var b []byte
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseUint(f, 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, byte(v))
	}
	return b
}

func TestForRelease(t *testing.T) {
	for _, c := range []struct{ rel, model string }{
		{"6.18.44-fc-v857", "uprobes-6.18"}, {"7.2.0", "uprobes-7.2"}, {"7.2.13+deb14-amd64", "uprobes-7.2"}, {"8.0", "uprobes-7.2"},
		{"6.1.0-57-amd64", "uprobes-6.1"}, {"6.12.9", "uprobes-6.12"}, {"6.12.117+deb13-amd64", "uprobes-6.12"},
		{"6.15.2", "uprobes-6.12"}, {"6.19.1", "uprobes-6.18"}, {"5.10.0", "uprobes-6.1"}, {"weird", "uprobes-6.1"},
	} {
		if k, _ := ForRelease(c.rel); k.Name != c.model {
			t.Errorf("%s: %s, want %s", c.rel, k.Name, c.model)
		}
	}
	// arm64: each model's own version (6.18 simulates NOP and splits RET, which
	// 6.12 does not; 6.19 is 6.18's).
	for _, c := range []struct{ rel, policy string }{
		{"6.1.0-57-arm64", "uprobes-arm64"}, {"6.12.117+deb13-arm64", "uprobes-6.12-arm64"}, {"6.15.2", "uprobes-6.12-arm64"},
		{"6.18.4-arm64", "uprobes-6.18-arm64"}, {"6.19.1", "uprobes-6.18-arm64"}, {"7.2.13+deb14-arm64", "uprobes-7.2-arm64"},
	} {
		k, _ := ForRelease(c.rel)
		if p := k.PolicyFor(decode.ARM64); p.Name != c.policy {
			t.Errorf("%s on arm64: %s, want %s", c.rel, p.Name, c.policy)
		}
	}
}

// The USDT notes of the corpus, against readelf -n (the oracle), and the
// corpus binary's functions against nm.
func TestOracleUSDT(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (gcc, readelf, systemtap-sdt-dev)")
	}
	bin := filepath.Join(t.TempDir(), "corpus")
	if out, err := exec.Command("gcc", "-O1", "-o", bin, "testdata/corpus.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command("readelf", "-n", "--wide", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	// "Provider: kbtest\n    Name: plain\n    Location: 0x..., Base: 0x..., Semaphore: 0x...\n    Arguments: ..."
	re := regexp.MustCompile(`Provider: (\S+)\s+Name: (\S+)\s+Location: 0x([0-9a-f]+), Base: 0x[0-9a-f]+, Semaphore: 0x([0-9a-f]+)\s+Arguments: ?([^\n]*)`)
	var want []USDT
	for _, m := range re.FindAllStringSubmatch(string(out), -1) {
		a, _ := strconv.ParseUint(m[3], 16, 64)
		s, _ := strconv.ParseUint(m[4], 16, 64)
		want = append(want, USDT{Provider: m[1], Name: m[2], Addr: Hex(a), Semaphore: Hex(s), Args: m[5]})
	}
	b, err := Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.USDT()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i].SemaphoreOffset = 0
	}
	if len(want) != 3 {
		t.Fatalf("readelf shows %d probes:\n%s", len(want), out)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("USDT vs readelf -n:\n%s", d)
	}
	k, _ := Lookup("uprobes-6.18")
	s, _, err := Check(b, k, Request{USDT: "kbtest/gated"})
	if err != nil || uint64(s.Addr) != uint64(want[2].Addr) || s.RefCtrOffset == 0 || s.Path != PathEmulated {
		t.Errorf("usdt/kbtest/gated: %+v %v", s, err)
	}
}

// No input makes the ELF or note parsers panic.
func FuzzOpen(f *testing.F) {
	if exe, err := os.ReadFile("/proc/self/exe"); err == nil && len(exe) > 0 {
		f.Add(exe[:min(len(exe), 1<<16)])
	}
	f.Add([]byte("\x7fELF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := newBinary("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		b.USDT()
		for _, fn := range b.Funcs[:min(len(b.Funcs), 4)] {
			Audit(b, Kernels()[1], fn)
		}
	})
}

// Cheapest on assembled code: from a single-stepped entry to the optimized
// NOP of the same block; never to a red-zone site; not across a branch target.
func TestCheapest(t *testing.T) {
	k, _ := Lookup("uprobes-6.18")
	for _, c := range []struct {
		hex        string
		from, want uint64
	}{
		{"48 89 7c 24 f8 0f 1f 44 00 00 48 8b 44 24 f8 c3", 5, 0xa},  // from the red-zone NOP to the next safe site
		{"48 8b 07 0f 1f 44 00 00 c3", 0, 3},                         // mov (%rdi),%rax; nop5; ret
		{"48 89 7c 24 f8 0f 1f 44 00 00 48 8b 44 24 f8 c3", 0, 0},    // red zone: the nop5 is a hazard
		{"48 8b 07 55 5d c3", 0, 3},                                  // push %rbp is emulated
		{"48 8b 07 eb 00 0f 1f 44 00 00 c3", 0, 3},                   // jmp ends the block (and is emulated)
		{"48 8b 07 74 05 0f 1f 44 00 00 0f 1f 44 00 00 c3", 0, 3},    // je ends the block
		{"48 8b 07 48 8b 07 0f 1f 44 00 00 c3 48 8b 07 eb f5", 0, 0}, // the jmp at +0xf lands on the nop5: it may run more often
	} {
		code := hexBytes(t, c.hex)
		fa := auditBytes(t, k, code)
		s, _, err := Cheapest(fa, c.from)
		if err != nil {
			t.Fatal(err)
		}
		if s.Off != c.want {
			t.Errorf("%s: placed at +%#x, want +%#x", c.hex, s.Off, c.want)
		}
	}
}

// auditBytes audits code as one function of a synthetic binary.
func auditBytes(t *testing.T, k *Kernel, code []byte) *FuncAudit {
	t.Helper()
	funcs := BenchFuncsFor(k)
	img := BenchImage(funcs, 0, 1)
	base := uint64(0x400000) + BenchFuncOffset(0)
	copy(img[BenchFuncOffset(0):], make([]byte, 32*len(funcs)))
	copy(img[BenchFuncOffset(0):], code)
	b, err := newBinary("mem", bytes.NewReader(img))
	if err != nil {
		t.Fatal(err)
	}
	fa, err := Audit(b, k, Func{Name: "f", Addr: base, Size: uint64(len(code))})
	if err != nil {
		t.Fatal(err)
	}
	return fa
}

// A TrialResult survives JSON (the guest sends it to the host).
func TestTrialResultJSON(t *testing.T) {
	in := TrialResult{Readback: Readback{Addr: 0x401000, Site: Bytes{0xe8, 0, 0, 0, 0}, Call: true, CallTarget: 0x7fff0000, Trampoline: true, Hits: 7}, Done: "done 7", Hits: 7, Opened: true}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out TrialResult
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("%s: round trip differs (-in +out):\n%s", b, diff)
	}
}
