package cfi

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// x86-64's DWARF columns as readelf names them (ra: the return address).
var readelfX86_64 = []string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ra"}

// readelfRule renders a rule in readelf --debug-dump=frames-interp's notation.
func readelfRule(ru rule, names []string) string {
	name := func(r uint64) string {
		if r < uint64(len(names)) {
			return names[r]
		}
		return "r" + strconv.FormatUint(r, 10)
	}
	switch ru.kind {
	case ruleUnset, ruleUndef:
		return "u"
	case ruleSame:
		return "s"
	case ruleOffset:
		return fmt.Sprintf("c%+d", ru.off)
	case ruleValOff:
		return fmt.Sprintf("v%+d", ru.off)
	case ruleReg:
		return name(ru.reg)
	case ruleExpr:
		return "exp"
	case ruleValExpr:
		return "vexp"
	case ruleCFAReg:
		return fmt.Sprintf("%s%+d", name(ru.reg), ru.off)
	case ruleCFAExpr:
		return "exp"
	}
	return "?"
}

// i386's DWARF columns as readelf names them.
var readelfI386 = []string{"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "ra"}

// readelfA64 are AArch64's DWARF columns 0-31 as readelf names them.
var readelfA64 = func() []string {
	var n []string
	for i := 0; i <= 30; i++ {
		n = append(n, "x"+strconv.Itoa(i))
	}
	return append(n, "sp")
}()

// readelfCase is one instruction set's files, readelf and column names.
type readelfCase struct {
	arch    *decode.Arch
	readelf string
	files   []string
	names   []string
}

// TestReadelfRows: every row readelf --debug-dump=frames-interp (binutils,
// its own DWARF reader) prints for the C library and the dynamic loader is
// the row Step uses at that address, found through .eh_frame_hdr and
// through the sorted index alike: x86-64's (the machine's, and its vDSO,
// read from this process's memory), i386's (gcc-multilib's libc6-i386) and
// arm64's (Debian's libc6-arm64-cross, read by aarch64-linux-gnu-readelf).
// 32-bit ARM unwinds through .ARM.exidx (EHABI), not .eh_frame:
// TestReadelfExidx.
func TestReadelfRows(t *testing.T) {
	x64 := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	if v := ownVDSO(t); v != "" {
		x64 = append(x64, v)
	}
	for _, c := range []readelfCase{
		{decode.X86_64, "readelf", x64, readelfX86_64},
		{decode.I386, "readelf", []string{"/usr/lib32/libc.so.6", "/usr/lib32/ld-linux.so.2"}, readelfI386},
		{decode.ARM64, "aarch64-linux-gnu-readelf", []string{"/usr/aarch64-linux-gnu/lib/libc.so.6", "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1"}, readelfA64},
	} {
		t.Run(c.arch.Name, func(t *testing.T) { readelfRows(t, c) })
	}
}

func readelfRows(t *testing.T, c readelfCase) {
	re, err := exec.LookPath(c.readelf)
	if err != nil {
		t.Fatalf("%s: %v (binutils, binutils-aarch64-linux-gnu: scripts/setup.sh)", c.readelf, err)
	}
	a := For(c.arch)
	if a == nil {
		t.Fatalf("no DWARF columns for %s", c.arch.Name)
	}
	for _, path := range c.files {
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatalf("%s: %v (libc6-arm64-cross, gcc-multilib: scripts/setup.sh)", path, err)
		}
		hdrTab, err := FromELF(ef)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fr := ef.Section(".eh_frame")
		data, _ := fr.Data()
		scanTab, err := New(Section{Data: data, Addr: fr.Addr}, Section{}, a.PtrSize)
		ef.Close()
		if err != nil {
			t.Fatalf("%s without .eh_frame_hdr: %v", path, err)
		}
		if hdrTab.hdr == nil {
			t.Errorf("%s: .eh_frame_hdr's table not used", path)
		}
		// readelf exits 1 on some libraries without saying why (it prints
		// their tables in full): an empty output is the failure.
		out, err := exec.Command(re, "--debug-dump=frames-interp", path).Output()
		if len(out) == 0 {
			t.Fatalf("readelf %s: %v", path, err)
		}
		rows, bad, fdes, steps := 0, 0, 0, 0
		cieRA := map[string]int{}  // CIEs by return address column
		cieCol := map[string]int{} // a CIE's return address column, by offset
		raCol := a.PC
		var cols []string
		inFDE := false
		var fdeEnd uint64 // the FDE's end: readelf prints a row advanced to it (i386's C library has some), one no address uses
		pastEnd := 0
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 0:
				inFDE = false
			case len(f) >= 4 && f[3] == "FDE":
				inFDE = true
				cols = nil
				fdes++
				raCol = a.PC
				if n, ok := cieCol[strings.TrimPrefix(f[4], "cie=")]; ok {
					raCol = n
				}
				fdeEnd = ^uint64(0)
				if _, hi, ok := strings.Cut(f[len(f)-1], ".."); ok && strings.HasPrefix(f[len(f)-1], "pc=") {
					if v, err := strconv.ParseUint(hi, 16, 64); err == nil {
						fdeEnd = v
					}
				}
			case len(f) >= 4 && f[3] == "CIE":
				if ra, ok := strings.CutPrefix(f[len(f)-1], "ra="); ok {
					cieRA[ra]++
					cieCol[f[0]], _ = strconv.Atoi(ra)
				}
			case inFDE && f[0] == "LOC":
				cols = f[1:]
			case inFDE && cols != nil && len(f) == len(cols)+1:
				loc, err := strconv.ParseUint(f[0], 16, 64)
				if err != nil {
					t.Fatalf("readelf row %q", sc.Text())
				}
				if loc >= fdeEnd {
					pastEnd++
					continue
				}
				rows++
				if stepped, ok := stepRow(t, a, hdrTab, loc, raCol, cols, f[1:], c.names); ok {
					steps++
				} else if stepped {
					bad++
				}
				for _, tab := range []*Table{hdrTab, scanTab} {
					rw, err := tab.rowAt(loc)
					if err != nil {
						t.Errorf("%s 0x%x: %v", path, loc, err)
						bad++
						continue
					}
					for i, col := range cols {
						var got string
						if col == "CFA" {
							got = readelfRule(rw.cfa, c.names)
						} else {
							n := -1
							for k, name := range c.names {
								if name == col {
									n = k
								}
							}
							if col == "ra" {
								n = int(rw.ra)
							}
							if n < 0 || n >= NumRegs {
								continue // a column kboost does not track (vector registers)
							}
							got = readelfRule(rw.regs[n], c.names)
						}
						if got != f[i+1] {
							bad++
							if bad <= 20 {
								t.Errorf("%s 0x%x %s: %s, readelf %s", path, loc, col, got, f[i+1])
							}
						}
					}
				}
			}
		}
		t.Logf("%s: %d FDEs, %d rows as readelf prints them (%d stepped; %d more at an FDE's end), %d differences; CIEs by return address column %v", path, fdes, rows, steps, pastEnd, bad, cieRA)
		if steps == 0 {
			t.Errorf("%s: no row was stepped", path)
		}
		// Compilers name the arch's column (x86-64 rip 16, AArch64 x30);
		// hand-written CIEs may name another.
		if pc := strconv.Itoa(a.PC); cieRA[pc] == 0 {
			t.Errorf("%s: no CIE names Arch.PC (%d) as its return address column: %v", path, a.PC, cieRA)
		}
		if rows == 0 {
			t.Errorf("%s: readelf printed no rows", path)
		}
	}
}

// stepRow unwinds one frame with Step at loc, where readelf's row (cols,
// vals) has the CFA at the stack pointer plus a constant and the return
// address saved at CFA+k, and compares the caller's pc, stack pointer and
// frame pointer with what that row says (the memory is a function of the
// address, the registers known values; raCol is the FDE's CIE's return
// address column). stepped says the row was of that
// form; ok that Step agreed.
func stepRow(t *testing.T, a *Arch, tab *Table, loc uint64, raCol int, cols, vals []string, names []string) (stepped, ok bool) {
	rule := map[string]string{}
	for i, c := range cols {
		rule[c] = vals[i]
	}
	var cfaOff int64
	if n, err := fmt.Sscanf(rule["CFA"], names[a.SP]+"%d", &cfaOff); n != 1 || err != nil {
		return false, false
	}
	mask := ^uint64(0)
	sp := uint64(0x7ff0_0000_0000)
	if a.PtrSize == 4 {
		mask, sp = 0xffffffff, 0x7ff0_0000
	}
	mem := func(addr uint64) (uint64, bool) { return (addr*0x9e3779b97f4a7c15 + 1) & mask, true }
	cfa := (sp + uint64(cfaOff)) & mask
	// saved: the value a "c+k" rule gives, or the register's own for "u"
	// (unset: unchanged; a leaf's return address is still in its column).
	saved := func(r string, col int) (uint64, bool) {
		if r == "" || r == "u" {
			return 0x1000 + uint64(col), true
		}
		var k int64
		if n, err := fmt.Sscanf(r, "c%d", &k); n == 1 && err == nil {
			v, _ := mem(cfa + uint64(k))
			return v, true
		}
		return 0, false
	}
	want, ok := saved(rule["ra"], raCol)
	if !ok {
		return false, false
	}
	undef := rule["ra"] == "u" // readelf prints undefined (the outermost frame) and not yet set alike
	wantFP, checkFP := saved(rule[names[a.FP]], a.FP)
	var r Regs
	for col := 0; col < a.Regs; col++ {
		r.Set(col, 0x1000+uint64(col))
	}
	r.Set(a.SP, sp)
	pc, _, end, err := tab.Step(a, loc, &r, mem)
	gotSP, _ := r.Get(a.SP)
	gotFP, _ := r.Get(a.FP)
	if end && undef && err == nil {
		return true, true
	}
	if err != nil || end || pc != want || gotSP != cfa || checkFP && gotFP != wantFP {
		t.Errorf("0x%x: Step gave pc 0x%x sp 0x%x fp 0x%x (end %v, %v); readelf's row (CFA %s, ra %s, fp %q) gives pc 0x%x sp 0x%x fp 0x%x",
			loc, pc, gotSP, gotFP, end, err, rule["CFA"], rule["ra"], rule[names[a.FP]], want, cfa, wantFP)
		return true, false
	}
	return true, true
}

// ownVDSO writes this process's vDSO image (an ELF file with .eh_frame,
// mapped by the kernel and in no file) to a file and returns its path; ""
// where /proc has no [vdso] mapping.
func ownVDSO(t *testing.T) string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(maps), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[5] != "[vdso]" {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			t.Fatalf("maps line %q", l)
		}
		mem, err := os.Open("/proc/self/mem")
		if err != nil {
			t.Fatal(err)
		}
		defer mem.Close()
		img := make([]byte, end-start)
		if _, err := mem.ReadAt(img, int64(start)); err != nil {
			t.Fatalf("reading the vDSO: %v", err)
		}
		p := filepath.Join(t.TempDir(), "vdso.so")
		if err := os.WriteFile(p, img, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return ""
}
