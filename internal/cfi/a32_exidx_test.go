package cfi

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

var (
	exidxEntryRe = regexp.MustCompile(`^0x([0-9a-f]+)(?: <[^>]*>)?: (.*)$`)
	exidxOpRe    = regexp.MustCompile(`^  ((?:0x[0-9a-f]{2} ?)+)\s+(.*)$`)
	exidxPopRe   = regexp.MustCompile(`^pop \{(.*)\}$`)
	exidxVFPRe   = regexp.MustCompile(`^D(\d+)(?:-D(\d+))?$`)
)

// TestReadelfExidx: every entry of an ARM exception index that binutils'
// readelf -u (its own EHABI decoder) decodes is unwound by Step as
// readelf's text says: with known registers and a stack whose every word
// is distinct, the registers popped, the stack pointer and the caller's pc
// (the popped r15, else r14) are those readelf's operations give;
// [cantunwind] is ErrNoFDE (no unwind information), "refuse to unwind" the
// outermost frame. The files:
// Debian's armhf C library and loader (libc6-armhf-cross) and a static
// clang build of a C program with a cleanup handler (its C library and
// libgcc objects; readelf names __gcc_personality_v0 there and decodes the
// generic model's opcodes, which it cannot in the stripped libraries).
func TestReadelfExidx(t *testing.T) {
	re, err := exec.LookPath("arm-linux-gnueabi-readelf")
	if err != nil {
		t.Fatalf("arm-linux-gnueabi-readelf: %v (binutils-arm-linux-gnueabi: scripts/setup.sh)", err)
	}
	files := []string{"/usr/arm-linux-gnueabihf/lib/libc.so.6", "/usr/arm-linux-gnueabihf/lib/ld-linux-armhf.so.3"}
	if _, err := exec.LookPath("clang"); err != nil {
		t.Fatalf("clang: %v (scripts/setup.sh)", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "cleanup.c")
	prog := `#include <stdio.h>
static void done(int *p) { printf("done %d\n", *p); }
int main(int argc, char **argv) {
	int x __attribute__((cleanup(done))) = argc;
	printf("%s\n", argv[0]);
	return x - 1;
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cleanup")
	if out, err := exec.Command("clang", "--target=arm-linux-gnueabihf", "-O1", "-fexceptions", "-funwind-tables",
		"-static", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("clang --target=arm-linux-gnueabihf: %v\n%s(libc6-dev-armhf-cross, libgcc-12-dev-armhf-cross, binutils-arm-linux-gnueabihf: scripts/setup.sh)", err, out)
	}
	files = append(files, bin)
	a := For(decode.ARM)
	for _, path := range files {
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatalf("%s: %v (libc6-armhf-cross: scripts/setup.sh)", path, err)
		}
		tab, err := FromELF(ef)
		ef.Close()
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if tab.step == nil {
			t.Fatalf("%s: read as .eh_frame, not .ARM.exidx", path)
		}
		out, err := exec.Command(re, "-u", path).Output()
		if err != nil {
			t.Fatalf("readelf -u %s: %v", path, err)
		}
		entries, compared, generic := exidxCompare(t, path, tab, a, out)
		t.Logf("%s: %d entries, %d compared with readelf, %d of them generic-model", path, entries, compared, generic)
		if compared < entries*3/4 || compared < 20 {
			t.Errorf("%s: only %d of %d entries compared", path, compared, entries)
		}
	}
}

// exidxCompare checks each entry readelf prints in out.
func exidxCompare(t *testing.T, path string, tab *Table, a *Arch, out []byte) (entries, compared, generic int) {
	const sp0 = 0x100000
	mem := func(addr uint64) (uint64, bool) { return 0x40000000 + addr*2, true }
	var (
		start   uint64
		lines   []string
		inEntry bool
	)
	flush := func() {
		if !inEntry {
			return
		}
		inEntry = false
		entries++
		ok, gen := exidxCheck(t, path, tab, a, start, lines, mem, sp0)
		if ok {
			compared++
			if gen {
				generic++
			}
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if m := exidxEntryRe.FindStringSubmatch(l); m != nil {
			flush()
			start, _ = strconv.ParseUint(m[1], 16, 64)
			lines, inEntry = []string{m[2]}, true
			continue
		}
		if inEntry && strings.HasPrefix(l, "  ") {
			lines = append(lines, l)
		}
	}
	flush()
	return entries, compared, generic
}

// exidxCheck unwinds one entry (its function's start, readelf's lines:
// the entry word first) and compares; false: readelf did not decode it.
func exidxCheck(t *testing.T, path string, tab *Table, a *Arch, start uint64, lines []string, mem Memory, sp0 uint64) (ok, generic bool) {
	var r Regs
	for i := 0; i < 16; i++ {
		r.Set(i, 0x1000+uint64(i)*0x10)
	}
	r.Set(a.SP, sp0)
	want := r
	pc, _, end, err := tab.Step(a, start, &r, mem)
	if strings.HasSuffix(lines[0], "[cantunwind]") {
		if !errors.Is(err, ErrNoFDE) {
			t.Errorf("%s 0x%x: [cantunwind]: Step end %v, err %v; want ErrNoFDE", path, start, end, err)
		}
		return true, false
	}
	vsp, popped := sp0, false
	decoded, refuse := false, false
ops:
	for _, l := range lines[1:] {
		if strings.Contains(l, "Personality routine:") {
			generic = true
			continue
		}
		m := exidxOpRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		decoded = true
		ob := strings.Fields(m[1])
		op, _ := strconv.ParseUint(strings.TrimPrefix(ob[0], "0x"), 16, 8)
		text := m[2]
		switch {
		case text == "finish":
			break ops
		case text == "refuse to unwind":
			refuse = true
			break ops
		case strings.HasPrefix(text, "vsp = vsp + "):
			n, _ := strconv.ParseUint(strings.TrimPrefix(text, "vsp = vsp + "), 10, 64)
			vsp += n
		case strings.HasPrefix(text, "vsp = vsp - "):
			n, _ := strconv.ParseUint(strings.TrimPrefix(text, "vsp = vsp - "), 10, 64)
			vsp -= n
		case strings.HasPrefix(text, "vsp = r"):
			n, _ := strconv.Atoi(strings.TrimPrefix(text, "vsp = r"))
			vsp, _ = want.Get(n)
		case exidxPopRe.MatchString(text):
			list := exidxPopRe.FindStringSubmatch(text)[1]
			for _, reg := range strings.Split(list, ", ") {
				if vm := exidxVFPRe.FindStringSubmatch(reg); vm != nil {
					lo, _ := strconv.Atoi(vm[1])
					hi := lo
					if vm[2] != "" {
						hi, _ = strconv.Atoi(vm[2])
					}
					vsp += 8 * uint64(hi-lo+1)
					if op == 0xb3 || op&0xf8 == 0xb8 { // FSTMFDX: a pad word
						vsp += 4
					}
					continue
				}
				n, err := strconv.Atoi(strings.TrimPrefix(reg, "r"))
				if err != nil || !strings.HasPrefix(reg, "r") {
					t.Errorf("%s 0x%x: readelf's %q: not understood", path, start, l)
					return false, generic
				}
				v, _ := mem(vsp)
				want.Set(n, v&0xffffffff)
				popped = popped || n == 15
				vsp += 4
			}
			if sp, ok := want.Get(a.SP); ok && sp != sp0 { // popped r13: the new vsp (EHABI)
				vsp = sp
				want.Set(a.SP, sp0)
			}
		default:
			t.Errorf("%s 0x%x: readelf's %q: not understood", path, start, l)
			return false, generic
		}
	}
	if !decoded {
		return false, generic // a personality routine readelf cannot name: no opcodes printed
	}
	if refuse {
		if err != nil || !end {
			t.Errorf("%s 0x%x: refuse to unwind: Step end %v, err %v", path, start, end, err)
		}
		return true, generic
	}
	if !popped {
		lr, _ := want.Get(14)
		want.Set(15, lr)
	}
	want.Set(a.SP, vsp&0xffffffff)
	wpc, _ := want.Get(15)
	if err != nil || end || pc != wpc&^1 || r.V != want.V {
		t.Errorf("%s 0x%x %q: Step pc 0x%x end %v err %v regs %x; readelf's: pc 0x%x regs %x", path, start, lines, pc, end, err, r.V[:16], wpc&^1, want.V[:16])
	}
	return true, generic
}
