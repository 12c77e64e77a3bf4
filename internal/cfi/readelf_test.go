package cfi

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
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

// TestReadelfRows: every row readelf --debug-dump=frames-interp (binutils,
// its own DWARF reader) prints for the C library and the dynamic loader is
// the row Step uses at that address, found through .eh_frame_hdr and
// through the sorted index alike.
func TestReadelfRows(t *testing.T) {
	re, err := exec.LookPath("readelf")
	if err != nil {
		t.Fatalf("readelf: %v (binutils: scripts/setup.sh)", err)
	}
	files := []string{"/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"}
	for _, path := range files {
		ef, err := elf.Open(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		hdrTab, err := FromELF(ef)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fr := ef.Section(".eh_frame")
		data, _ := fr.Data()
		scanTab, err := New(Section{Data: data, Addr: fr.Addr}, Section{}, 8)
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
		rows, bad := 0, 0
		var cols []string
		inFDE := false
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 0:
				inFDE = false
			case len(f) >= 4 && f[3] == "FDE":
				inFDE = true
				cols = nil
			case inFDE && f[0] == "LOC":
				cols = f[1:]
			case inFDE && cols != nil && len(f) == len(cols)+1:
				loc, err := strconv.ParseUint(f[0], 16, 64)
				if err != nil {
					t.Fatalf("readelf row %q", sc.Text())
				}
				rows++
				for _, tab := range []*Table{hdrTab, scanTab} {
					rw, err := tab.rowAt(loc)
					if err != nil {
						t.Errorf("%s 0x%x: %v", path, loc, err)
						bad++
						continue
					}
					for i, c := range cols {
						var got string
						if c == "CFA" {
							got = readelfRule(rw.cfa, readelfX86_64)
						} else {
							col := -1
							for n, name := range readelfX86_64 {
								if name == c {
									col = n
								}
							}
							if c == "ra" {
								col = int(rw.ra)
							}
							if col < 0 || col >= NumRegs {
								continue // a column kboost does not track
							}
							got = readelfRule(rw.regs[col], readelfX86_64)
						}
						if got != f[i+1] {
							bad++
							if bad <= 20 {
								t.Errorf("%s 0x%x %s: %s, readelf %s", path, loc, c, got, f[i+1])
							}
						}
					}
				}
			}
		}
		t.Logf("%s: %d rows as readelf prints them, %d differences", path, rows, bad)
		if rows == 0 {
			t.Errorf("%s: readelf printed no rows", path)
		}
	}
}
