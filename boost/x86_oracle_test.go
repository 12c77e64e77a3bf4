package boost

// Oracle tests (KBOOST_ORACLE=1): the Linux 6.1 source itself is the oracle.
// They need Debian's linux-source-6.1 (/usr/src/linux-source-6.1.tar.xz), tar,
// xz, awk, gcc and binutils (as, objcopy, objdump).

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/kernelref"
	"github.com/kboost/kboost/kimage"
)

func oracleGate(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 (needs linux-source-6.1 and -6.12, gcc, binutils)")
	}
}

var (
	ksrcMu   sync.Mutex
	ksrcDirs = map[string]string{}
)

// kernelSource extracts the few files the oracle tests read from Debian's
// linux-source-V (V "6.1" or "6.12") into a cache directory (once) and returns
// the tree's root.
func kernelSource(t *testing.T, v string) string {
	t.Helper()
	ksrcMu.Lock()
	defer ksrcMu.Unlock()
	if d, ok := ksrcDirs[v]; ok {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	top := "linux-source-" + v
	tarball, err := kernelref.SourceTarball(kernelref.Options{}, v)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, "kboost", "boost-oracle-"+v)
	root := filepath.Join(dir, top)
	files := []string{
		top + "/arch/x86/kernel/kprobes/core.c",
		top + "/arch/x86/kernel/uprobes.c",
		top + "/arch/x86/tools/gen-insn-attr-x86.awk",
		top + "/tools/arch/x86/lib",
		top + "/tools/arch/x86/include",
		top + "/tools/include",
	}
	if _, err := os.Stat(filepath.Join(root, "tools/arch/x86/lib/insn.c")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("tar", append([]string{"-xJf", tarball, "-C", dir}, files...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("extracting %s (apt-get install %s): %v: %s", tarball, top, err, out)
		}
	}
	ksrcDirs[v] = root
	return root
}

// parseW reads a kernel W(row, b0..bf) bitmap named name from src.
func parseW(t *testing.T, src, name string) bitmap256 {
	t.Helper()
	i := strings.Index(src, name+"[256 / 32] = {")
	if i < 0 {
		t.Fatalf("table %s not found", name)
	}
	body := src[i : i+strings.Index(src[i:], "};")]
	re := regexp.MustCompile(`W\(0x([0-9a-f])0,((?:\s*[01]\s*,?){16})\)`)
	var m bitmap256
	n := 0
	for _, g := range re.FindAllStringSubmatch(body, -1) {
		row, _ := strconv.ParseUint(g[1], 16, 8)
		bits := strings.FieldsFunc(g[2], func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		for j, b := range bits {
			if b == "1" {
				m[row] |= 1 << j
			}
		}
		n++
	}
	if n != 16 {
		t.Fatalf("table %s: %d rows", name, n)
	}
	return m
}

// TestOracleKernelTables compares the bitmaps and opcode lists transcribed in
// this package with the 6.1 source text.
func TestOracleKernelTables(t *testing.T) {
	oracleGate(t)
	root := kernelSource(t, "6.1")
	core, err := os.ReadFile(filepath.Join(root, "arch/x86/kernel/kprobes/core.c"))
	if err != nil {
		t.Fatal(err)
	}
	up, err := os.ReadFile(filepath.Join(root, "arch/x86/kernel/uprobes.c"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src, name string
		mine      bitmap256
	}{
		{string(core), "twobyte_is_boostable", twobyteBoostable61},
		{string(up), "good_insns_32", goodInsns32},
		{string(up), "good_insns_64", goodInsns64},
		{string(up), "good_2byte_insns", good2Byte},
	} {
		if k := parseW(t, c.src, c.name); k != c.mine {
			t.Errorf("%s differs from the kernel's:\nkernel %04x\nmine   %04x", c.name, k, c.mine)
		}
	}
	// can_boost()'s "not boostable" case labels.
	s := string(core)
	i := strings.Index(s, "\nint can_boost(")
	body := s[i : i+strings.Index(s[i:], "\n}\n")]
	body = body[strings.Index(body, "switch (opcode)"):strings.Index(body, "return 0;\n\tcase 0xff")]
	var kernel [256]bool
	re := regexp.MustCompile(`case 0x([0-9a-f]{2})(?:\s*\.\.\.\s*0x([0-9a-f]{2}))?:`)
	for _, g := range re.FindAllStringSubmatch(body, -1) {
		lo, _ := strconv.ParseUint(g[1], 16, 8)
		hi := lo
		if g[2] != "" {
			hi, _ = strconv.ParseUint(g[2], 16, 8)
		}
		for o := lo; o <= hi; o++ {
			kernel[o] = true
		}
	}
	if kernel != notBoostable61 {
		for o := 0; o < 256; o++ {
			if kernel[o] != notBoostable61[o] {
				t.Errorf("can_boost list: opcode %02x kernel %v mine %v", o, kernel[o], notBoostable61[o])
			}
		}
	}
}

// kernelDecoder builds the instruction decoder (tools/arch/x86/lib/insn.c) of
// Debian's linux-source-V as a filter: "<bits> <hex>" in, one line of fields out.
func kernelDecoder(t *testing.T, v string) string {
	t.Helper()
	root := kernelSource(t, v)
	dir := t.TempDir()
	tables, err := exec.Command("awk", "-f", filepath.Join(root, "arch/x86/tools/gen-insn-attr-x86.awk"),
		filepath.Join(root, "tools/arch/x86/lib/x86-opcode-map.txt")).Output()
	if err != nil {
		t.Fatalf("gen-insn-attr-x86.awk: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "inat-tables.c"), tables, 0o644); err != nil {
		t.Fatal(err)
	}
	prog := `#include <stdio.h>
#include <asm/insn.h>
#include "` + filepath.Join(root, "tools/arch/x86/lib/insn.c") + `"
#include "` + filepath.Join(root, "tools/arch/x86/lib/inat.c") + `"
int main(void) {
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
		int bits, n = 0; char hx[200]; unsigned char buf[32]; struct insn insn;
		if (sscanf(line, "%d %199s", &bits, hx) != 2) return 1;
		for (int i = 0; hx[2*i] && hx[2*i+1] && n < 32; i++) { unsigned v; sscanf(hx + 2*i, "%2x", &v); buf[n++] = v; }
		int ret = insn_decode(&insn, buf, n, bits == 64 ? INSN_MODE_64 : INSN_MODE_32);
		printf("%d %d %d %x %x %d %d %d %d %d\n", ret, insn.length, insn.opcode.nbytes, insn.opcode.bytes[0],
			insn.opcode.bytes[1], insn.modrm.nbytes ? insn.modrm.bytes[0] : -1,
			insn.emulate_prefix_size, ret == 0 ? insn_rip_relative(&insn) : 0,
			insn.immediate.nbytes, insn.immediate2.nbytes);
	}
	return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "kdec.c"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "kdec")
	cmd := exec.Command("gcc", "-O1", "-w", "-I", filepath.Join(root, "tools/arch/x86/include"),
		"-I", filepath.Join(root, "tools/include"), "-I", filepath.Join(root, "tools/arch/x86/lib"),
		"-I", dir, "-o", bin, filepath.Join(dir, "kdec.c"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc (apt-get install gcc): %v\n%s", err, out)
	}
	return bin
}

// TestOracleKernelDecoder checks the kernel view (kdecode: success, length,
// opcode bytes, ModRM, emulate prefix, RIP-relative) against the kernel's own
// decoder over every one-byte opcode with prefix patterns, emulate prefixes,
// every 0F / 0F 38 / 0F 3A / VEX opcode with several ModRM forms, and random
// bytes. The one class not modelled (VEX after legacy/REX prefixes) is counted.
func TestOracleKernelDecoder(t *testing.T) {
	oracleGate(t)
	for _, kd := range []*kdecoder{kdec61, kdec612, kdec72} {
		t.Run(kd.name, func(t *testing.T) { testKernelDecoder(t, kd) })
	}
}

func testKernelDecoder(t *testing.T, kd *kdecoder) {
	bin := kernelDecoder(t, kd.name)
	type input struct {
		mode   decode.Mode
		b      []byte
		strict bool
	}
	var ins []input
	pad := []byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee}
	add := func(m decode.Mode, strict bool, parts ...[]byte) {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		b = append(b, pad...)
		ins = append(ins, input{m, b[:15], strict})
	}
	suffixes := [][]byte{{}, {0xc0}, {0x00}, {0x05}, {0x44, 0x24, 0x08}, {0x84, 0x24, 0, 1, 0, 0}, {0xc8}, {0xf8}, {0x38}}
	prefixes := [][]byte{{}, {0x66}, {0x67}, {0xf2}, {0xf3}, {0xf0}, {0x2e}, {0x3e}, {0x48}, {0x41}, {0x66, 0x48},
		{0x26, 0x2e, 0x36, 0x3e}, {0x26, 0x2e, 0x36, 0x3e, 0x64}, {0x26, 0x26, 0x26, 0x26, 0x26}, {0x48, 0x66}, {0x40, 0x48}}
	for _, m := range []decode.Mode{decode.Mode64, decode.Mode32} {
		for o := 0; o < 256; o++ {
			if o == 0x0f || o == 0xc4 || o == 0xc5 || o == 0x62 || o == 0x8f {
				continue // escapes, VEX/EVEX/XOP: not the one-byte map
			}
			for _, s := range suffixes {
				add(m, true, []byte{byte(o)}, s)
			}
			for _, p := range prefixes {
				add(m, true, p, []byte{byte(o)}, []byte{0xc0})
			}
			add(m, true, xenPrefix[:], []byte{byte(o)}, []byte{0x05})
			add(m, true, kvmPrefix[:], []byte{byte(o)}, []byte{0x80})
			for _, s := range suffixes {
				add(m, false, []byte{0x0f, byte(o)}, s)
				add(m, false, []byte{0x0f, 0x38, byte(o)}, s)
				add(m, false, []byte{0x0f, 0x3a, byte(o)}, s)
				add(m, false, []byte{0xc5, 0xf8, byte(o)}, s)
				// REX2 (map 0 and 1, with W), EVEX map 4 (W=0/1, pp none/66), VEX map 7.
				add(m, false, []byte{0xd5, 0x00, byte(o)}, s)
				add(m, false, []byte{0xd5, 0x88, byte(o)}, s)
				add(m, false, []byte{0x66, 0xd5, 0x08, byte(o)}, s)
				add(m, false, []byte{0x62, 0xf4, 0x7c, 0x08, byte(o)}, s)
				add(m, false, []byte{0x62, 0xf4, 0xfd, 0x08, byte(o)}, s)
				add(m, false, []byte{0x62, 0xf4, 0x7d, 0x08, byte(o)}, s)
				add(m, false, []byte{0xc4, 0xe7, 0x7b, byte(o)}, s)
			}
		}
		r := rand.New(rand.NewSource(61))
		nrand := 20000
		if v, err := strconv.Atoi(os.Getenv("KBOOST_ORACLE_N")); err == nil {
			nrand = v
		}
		for i := 0; i < nrand; i++ {
			b := make([]byte, 15)
			r.Read(b)
			ins = append(ins, input{m, b, false})
		}
	}
	var stdin bytes.Buffer
	for _, x := range ins {
		fmt.Fprintf(&stdin, "%v %s\n", x.mode, hex.EncodeToString(x.b))
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &stdin
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	strictBad, looseBad, n := 0, map[string]int{}, 0
	for i := 0; sc.Scan(); i++ {
		x := ins[i]
		n++
		var ret, ln, nb, modrm, emu, rip int
		var o0, o1 uint
		fmt.Sscanf(sc.Text(), "%d %d %d %x %x %d %d %d", &ret, &ln, &nb, &o0, &o1, &modrm, &emu, &rip)
		var k kinsn
		var kin decode.Inst
		kerr := kdecode(kd, &k, &kin, x.b, x.mode, 0xffffffff81000000)
		why := ""
		switch {
		case (ret == 0) != (kerr == nil):
			why = fmt.Sprintf("kernel ret %d, kboost err %v", ret, kerr)
		case ret != 0:
		case ln != k.length:
			why = fmt.Sprintf("length kernel %d kboost %d", ln, k.length)
		case nb != k.nop || byte(o0) != k.op[0] || (nb > 1 && byte(o1) != k.op[1]):
			why = fmt.Sprintf("opcode kernel %d:%02x %02x kboost %d:% x", nb, o0, o1, k.nop, k.op)
		case (modrm >= 0) != k.hasMod || (modrm >= 0 && byte(modrm) != k.modrm):
			why = fmt.Sprintf("modrm kernel %d kboost %v/%02x", modrm, k.hasMod, k.modrm)
		case emu != k.emu:
			why = "emulate prefix"
		case (rip == 1) != k.ripRel():
			why = "rip-relative"
		}
		// Everything is modelled except VEX/EVEX after legacy or REX prefixes
		// (the kernel decodes them, the CPU and package decode refuse them).
		strict := !(kerr != nil && strings.Contains(kerr.Error(), "with a 66/F2/F3/F0/REX prefix"))
		if why == "" {
			continue
		}
		if strict {
			strictBad++
			if strictBad <= 20 {
				t.Errorf("%v %s: %s", x.mode, hex.EncodeToString(x.b), why)
			}
		} else {
			looseBad[strings.Fields(why)[0]]++
			if os.Getenv("KBOOST_ORACLE_V") != "" {
				t.Logf("loose %v %s: %s", x.mode, hex.EncodeToString(x.b), why)
			}
		}
	}
	if n != len(ins) {
		t.Fatalf("kernel decoder answered %d of %d inputs", n, len(ins))
	}
	t.Logf("%d inputs; outside the modelled classes: %v", n, looseBad)
	if strictBad > 0 {
		t.Errorf("%d disagreements with the kernel decoder in modelled classes", strictBad)
	}
}

// runKernelDecoder feeds inputs to the kernel decoder filter and returns its
// output lines.
func runKernelDecoder(t *testing.T, bin string, modes []decode.Mode, inputs [][]byte) []string {
	t.Helper()
	var stdin bytes.Buffer
	for i, b := range inputs {
		fmt.Fprintf(&stdin, "%v %s\n", modes[i], hex.EncodeToString(b))
	}
	cmd := exec.Command(bin)
	cmd.Stdin = &stdin
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("kernel decoder answered %d of %d", len(lines), len(inputs))
	}
	return lines
}

// deriveKernelMaps asks the kernel decoder, opcode by opcode, what its tables
// say (see x86_kmap.go): for legacy escape-map encodings and for REX2 encodings per
// last-prefix id, and for VEX/EVEX encodings per map and pp; ModRM presence and
// immediate bytes per ModRM.reg, and whether the encoding decodes at all.
func deriveKernelMaps(t *testing.T, bin string) (esc, avx, rex2, xop []uint64, inv64 []bool) {
	var inputs [][]byte
	pfxByte := []byte{0, 0x66, 0xf3, 0xf2}
	pad := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	// kind: 0 legacy escape, 1 VEX, 2 EVEX, 3 EVEX with W=1 (scalable test), 4 REX2,
	// 5 VEX and 6 EVEX after a legacy 66 prefix (Iz test).
	type key struct{ kind, m, pf, op, reg int }
	var keys []key
	withPfx := func(pf int, b ...byte) []byte {
		var out []byte
		if pf > 0 {
			out = append(out, pfxByte[pf])
		}
		return append(append(out, b...), pad...)
	}
	for pf := 0; pf < 4; pf++ {
		for op := 0; op < 256; op++ {
			for reg := 0; reg < 8; reg++ {
				modrm := byte(0xc0 | reg<<3)
				for m := 0; m < 3; m++ {
					escb := [][]byte{{0x0f}, {0x0f, 0x38}, {0x0f, 0x3a}}[m]
					inputs = append(inputs, withPfx(pf, append(append([]byte{}, escb...), byte(op), modrm)...))
					keys = append(keys, key{0, m, pf, op, reg})
				}
				for m := 0; m < 2; m++ {
					inputs = append(inputs, withPfx(pf, 0xd5, byte(m<<7), byte(op), modrm))
					keys = append(keys, key{4, m, pf, op, reg})
				}
			}
		}
	}
	for mm := 1; mm <= 7; mm++ {
		for pp := 0; pp < 4; pp++ {
			for op := 0; op < 256; op++ {
				for reg := 0; reg < 8; reg++ {
					modrm := byte(0xc0 | reg<<3)
					inputs = append(inputs,
						append([]byte{0xc4, byte(0xe0 | mm), byte(0x78 | pp), byte(op), modrm}, pad...),
						append([]byte{0x62, byte(0xf0 | mm&7), byte(0x7c | pp), 0x08, byte(op), modrm}, pad...),
						append([]byte{0x62, byte(0xf0 | mm&7), byte(0xfc | pp), 0x08, byte(op), modrm}, pad...),
						append([]byte{0x66, 0xc4, byte(0xe0 | mm), byte(0x78 | pp), byte(op), modrm}, pad...),
						append([]byte{0x66, 0x62, byte(0xf0 | mm&7), byte(0x7c | pp), 0x08, byte(op), modrm}, pad...))
					keys = append(keys, key{1, mm - 1, pp, op, reg}, key{2, mm - 1, pp, op, reg}, key{3, mm - 1, pp, op, reg},
						key{5, mm - 1, pp, op, reg}, key{6, mm - 1, pp, op, reg})
				}
			}
		}
	}
	// kind 7: XOP maps 8-A; kind 8: one-byte opcodes in 64-bit and (kind 9) 32-bit mode.
	for m := 8; m <= 10; m++ {
		for op := 0; op < 256; op++ {
			for reg := 0; reg < 8; reg++ {
				inputs = append(inputs, append([]byte{0x8f, byte(0xe0 | m), 0x78, byte(op), byte(0xc0 | reg<<3)}, pad...))
				keys = append(keys, key{7, m - 8, 0, op, reg})
			}
		}
	}
	for op := 0; op < 256; op++ {
		inputs = append(inputs, append([]byte{byte(op), 0x45, 0x08}, pad...), append([]byte{byte(op), 0x45, 0x08}, pad...))
		keys = append(keys, key{8, 0, 0, op, 0}, key{9, 0, 0, op, 0})
	}
	modes := make([]decode.Mode, len(inputs))
	for i := range modes {
		modes[i] = decode.Mode64
		if keys[i].kind == 9 {
			modes[i] = decode.Mode32
		}
	}
	lines := runKernelDecoder(t, bin, modes, inputs)
	esc = make([]uint64, 3*4*256)
	avx = make([]uint64, 7*4*256)
	rex2 = make([]uint64, 2*4*256)
	xop = make([]uint64, 3*256)
	inv64 = make([]bool, 256)
	len64 := map[int]int{}
	immCode := map[int]uint64{0: 0, 1: 1, 2: 2, 4: 3}
	avxImm := map[key]int{} // VEX and EVEX immediates, to compare kinds 3, 5 and 6 with
	for i, k := range keys {
		var f [10]int
		var o0, o1 uint
		fmt.Sscanf(lines[i], "%d %d %d %x %x %d %d %d %d %d", &f[0], &f[1], &f[2], &o0, &o1, &f[5], &f[6], &f[7], &f[8], &f[9])
		ok, hasMod, n := f[0] == 0, f[5] >= 0, f[8]+f[9]
		idx := (k.m*4+k.pf)*256 + k.op
		if _, small := immCode[n]; k.kind == 4 && !small {
			if k.reg == 0 {
				rex2[idx] |= uint64(n) << kmImmAllShift
			}
			n = 0
		}
		switch k.kind {
		case 8:
			if ok {
				len64[k.op] = f[1]
			}
			continue
		case 9:
			inv64[k.op] = ok && len64[k.op] == 1 && f[1] > 1
			continue
		}
		c, known := immCode[n]
		if !known {
			t.Fatalf("%+v: %d immediate bytes", k, n)
		}
		switch k.kind {
		case 7:
			e := &xop[k.m*256+k.op]
			if ok {
				if hasMod {
					*e |= kmModRM
				}
				*e |= c<<(kmImmShift+2*k.reg) | 1<<(kmVEXShift+k.reg)
			}
		case 0, 4:
			e := &esc[idx]
			if k.kind == 4 {
				e = &rex2[idx]
			}
			if k.reg == 0 {
				if !ok {
					*e |= kmLegacyErr
				}
				if hasMod {
					*e |= kmModRM
				}
			}
			*e |= c << (kmImmShift + 2*k.reg)
		case 1, 2:
			e := &avx[idx]
			if ok {
				// VEX and EVEX share the table entry: ModRM and immediate agree.
				if hasMod {
					*e |= kmModRM
				}
				*e &^= 3 << (kmImmShift + 2*k.reg)
				*e |= c << (kmImmShift + 2*k.reg)
				shift := kmVEXShift
				if k.kind == 2 {
					shift = kmEVEXShift
				}
				avxImm[k] = n
				*e |= 1 << (shift + k.reg)
			}
		case 3, 5, 6:
			k0 := k
			k0.kind = map[int]int{3: 2, 5: 1, 6: 2}[k.kind]
			if base, seen := avxImm[k0]; ok && seen && base != n {
				if base+n != 6 {
					t.Fatalf("%+v: the immediate changes from %d to %d bytes", k, base, n)
				}
				avx[idx] |= kmOpndImm
				if k.kind == 3 {
					avx[idx] |= kmScalable
				}
			}
		}
	}
	return esc, avx, rex2, xop, inv64
}

func goTable(b *strings.Builder, name, size string, tab []uint64) {
	fmt.Fprintf(b, "var %s = [%s]uint64{", name, size)
	for i, e := range tab {
		if i%8 == 0 {
			b.WriteString("\n\t")
		} else {
			b.WriteString(" ")
		}
		fmt.Fprintf(b, "%#x,", e)
	}
	b.WriteString("\n}\n")
}

// TestOracleKernelEscMap checks x86_kmap_table.go (6.1) and x86_kmap612_table.go
// (6.12) against the kernel decoders built from those sources; with
// KBOOST_REGEN=1 it rewrites the files.
func TestOracleKernelEscMap(t *testing.T) {
	oracleGate(t)
	for _, kd := range []*kdecoder{kdec61, kdec612, kdec72} {
		t.Run(kd.name, func(t *testing.T) {
			esc, avx, rex2, xop, inv64 := deriveKernelMaps(t, kernelDecoder(t, kd.name))
			if kd.inv64 == nil {
				for op, stop := range inv64 {
					if stop {
						t.Errorf("the %s decoder stops at opcode %02x in 64-bit mode; kboost's model does not", kd.name, op)
					}
				}
			}
			suffix, file := "", "x86_kmap_table.go"
			if kd != kdec61 {
				suffix = strings.ReplaceAll(kd.name, ".", "")
				file = "x86_kmap" + suffix + "_table.go"
			}
			if os.Getenv("KBOOST_REGEN") == "1" {
				var b strings.Builder
				fmt.Fprintf(&b, "// Code generated by TestOracleKernelEscMap (KBOOST_ORACLE=1 KBOOST_REGEN=1) from the Linux %s\n", kd.name)
				b.WriteString("// instruction decoder (tools/arch/x86/lib/insn.c + x86-opcode-map.txt); DO NOT EDIT.\n\n")
				b.WriteString("package boost\n\n// See x86_kmap.go for the layout.\n\n")
				goTable(&b, "kernelEscMap"+suffix, "3 * 4 * 256", esc)
				b.WriteString("\n")
				goTable(&b, "kernelAVXMap"+suffix, "7 * 4 * 256", avx)
				if kd.rex2 != nil {
					b.WriteString("\n")
					goTable(&b, "kernelREX2Map"+suffix, "2 * 4 * 256", rex2)
				}
				if kd.xop != nil {
					b.WriteString("\n")
					goTable(&b, "kernelXOPMap"+suffix, "3 * 256", xop)
					var ops []string
					for op, stop := range inv64 {
						if stop {
							ops = append(ops, fmt.Sprintf("%#02x: true", op))
						}
					}
					fmt.Fprintf(&b, "\nvar kernelInv64Map%s = [256]bool{%s}\n", suffix, strings.Join(ops, ", "))
				}
				if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			bad := 0
			for i, e := range esc {
				if kd.esc[i] != e {
					bad++
				}
			}
			for i, e := range avx {
				if kd.avx[i] != e {
					bad++
				}
			}
			for i, e := range rex2 {
				if kd.rex2 != nil && kd.rex2[i] != e {
					bad++
				}
			}
			for i, e := range xop {
				if kd.xop != nil && kd.xop[i] != e {
					bad++
				}
			}
			for i, e := range inv64 {
				if kd.inv64 != nil && kd.inv64[i] != e {
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d stale entries: regenerate with KBOOST_ORACLE=1 KBOOST_REGEN=1 go test -run TestOracleKernelEscMap ./boost", file, bad)
			}
		})
	}
}

// TestOracleAssembledFunc assembles testFuncSrc with GNU as and checks the
// hand-written bytes and the boundaries AuditFunc finds against objdump.
func TestOracleAssembledFunc(t *testing.T) {
	oracleGate(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "f.s")
	if err := os.WriteFile(src, []byte(".text\n.globl f\nf:"+testFuncSrc), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "f.o")
	if out, err := exec.Command("as", "--64", "-o", obj, src).CombinedOutput(); err != nil {
		t.Fatalf("as (apt-get install binutils): %v %s", err, out)
	}
	bin := filepath.Join(dir, "f.bin")
	if out, err := exec.Command("objcopy", "-O", "binary", "-j", ".text", obj, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, out)
	}
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, testFuncBytes) {
		t.Fatalf("as produced % x\nwant        % x", got, testFuncBytes)
	}
	out, err := exec.Command("objdump", "-d", obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	var offs []uint64
	re := regexp.MustCompile(`^\s+([0-9a-f]+):\t`)
	for _, line := range strings.Split(string(out), "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseUint(m[1], 16, 64)
			offs = append(offs, v)
		}
	}
	p, _ := Lookup("linux-6.1")
	a, err := p.AuditFunc(Func{Name: "f", Addr: 0, Bytes: got}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mine []uint64
	for _, e := range a.Entries {
		mine = append(mine, e.Off)
	}
	if fmt.Sprint(offs) != fmt.Sprint(mine) {
		t.Errorf("objdump boundaries %x, AuditFunc %x", offs, mine)
	}
}

// TestOracleDebianConfig reads Debian's own 6.1 and 6.12 amd64 configurations
// (linux-config-6.1, linux-config-6.12) with kimage's .config parser and
// ConfigFromFunc; the expected values
// are those files' lines, and the policies' defaults claim to be them.
func TestOracleDebianConfig(t *testing.T) {
	oracleGate(t)
	for _, v := range []string{"6.1", "6.12"} {
		path := "/usr/src/linux-config-" + v + "/config.amd64_none_amd64.xz"
		out, err := exec.Command("xz", "-dc", path).Output()
		if err != nil {
			t.Fatalf("%s (apt-get install linux-config-%s): %v", path, v, err)
		}
		text := string(out)
		kc, err := kimage.ParseKConfig(out)
		if err != nil {
			t.Fatal(err)
		}
		cfg := ConfigFromFunc(kc.Value)
		set := func(n string) bool { return strings.Contains(text, "\n"+n+"=y\n") }
		want := Config{Preemption: set("CONFIG_PREEMPTION"),
			Retpoline: set("CONFIG_RETPOLINE") || set("CONFIG_MITIGATION_RETPOLINE"),
			IBT:       set("CONFIG_X86_KERNEL_IBT"), Optprobes: set("CONFIG_OPTPROBES"),
			KprobesOnFtrace: set("CONFIG_KPROBES_ON_FTRACE"), DynamicFtrace: set("CONFIG_DYNAMIC_FTRACE"),
			KprobeEventsOnNotrace: set("CONFIG_KPROBE_EVENTS_ON_NOTRACE"), SMP: set("CONFIG_SMP")}
		if cfg != want {
			t.Errorf("%s: ConfigFromFunc %+v, file says %+v", v, cfg, want)
		}
		if p, _ := Lookup("linux-" + v); p.Defaults != cfg {
			t.Errorf("linux-%s defaults %+v differ from Debian's config %+v", v, p.Defaults, cfg)
		}
	}
}
