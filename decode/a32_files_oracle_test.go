package decode_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
	"github.com/kboost/kboost/internal/objdump"
	"github.com/kboost/kboost/kimage"
)

// a32Piece is one line of an ARM ELF disassembly: an instruction in one
// instruction set, or data (Arch nil).
type a32Piece struct {
	addr  uint64
	n     int
	arch  *decode.Arch
	trunc bool // cut short by the next symbol or the section end (objdump: "out of bounds"; n unknown)
}

func (p a32Piece) String() string {
	k := "data"
	if p.arch != nil {
		k = p.arch.Name
	}
	if p.trunc {
		return fmt.Sprintf("%#x truncated", p.addr)
	}
	return fmt.Sprintf("%#x+%d %s", p.addr, p.n, k)
}

// kboostARMSweep is what `kboost decode FILE` decodes in every executable
// section of an EM_ARM file: kimage's spans and symbol starts swept by
// decode.SweepSpans, per section name.
func kboostARMSweep(t *testing.T, f *kimage.File) map[string][]a32Piece {
	t.Helper()
	out := map[string][]a32Piece{}
	for _, sec := range f.ExecSections() {
		data, err := sec.Data()
		if err != nil {
			t.Fatal(err)
		}
		var ps []a32Piece
		decode.SweepSpans(data, sec.Addr, f.SymbolStarts(sec), f.CodeSpans(sec), func(inst *decode.Inst, arch *decode.Arch, err error) bool {
			p := a32Piece{addr: inst.Addr, n: inst.Len, arch: arch}
			if errors.Is(err, decode.ErrTruncated) {
				p = a32Piece{addr: inst.Addr, trunc: true}
			}
			ps = append(ps, p)
			return true
		})
		out[sec.Name] = ps
	}
	return out
}

var (
	a32SectionLine = regexp.MustCompile(`^Disassembly of section (.*):$`)
	a32ByteLine    = regexp.MustCompile(`^ *([0-9a-f]+):\t([0-9a-f]{2}) +\t\.byte\t`)
	a32OutOfBounds = regexp.MustCompile(`^ *([0-9a-f]+):\tAddress 0x[0-9a-f]+ is out of bounds\.`)
)

// compareARMFile compares kboost's sweep of an EM_ARM ELF file with
// `objdump -d -w -z FILE` (mapping symbols and function symbols deciding
// ARM, Thumb or data on objdump's side as on kboost's): every line must
// start where kboost's piece starts, have its length and its instruction
// set, and kboost must have nothing objdump does not print. Instructions are
// also checked as TestOracleARM32Userland checks them (tl). It returns the
// counts.
func compareARMFile(t *testing.T, tl *arm32Tally, path string) a32Counts {
	t.Helper()
	f, err := kimage.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != "EM_ARM" {
		t.Fatalf("%s: machine %s, want EM_ARM", path, f.Machine)
	}
	ours := kboostARMSweep(t, f)
	var sec string
	var ps []a32Piece
	k := 0
	var inst decode.Inst
	var it decode.ITState
	var rec arm32Rec
	var thumb, arm, data, truncated int
	mismatches := 0
	report := func(format string, args ...any) {
		if mismatches++; mismatches <= 20 {
			t.Errorf("%s %s: "+format, append([]any{filepath.Base(path), sec}, args...)...)
		}
	}
	bytesAt := func(addr uint64) []byte {
		for _, s := range f.ExecSections() {
			if addr >= s.Addr && addr < s.Addr+s.Size && s.Name == sec {
				d, _ := s.Data()
				return d[addr-s.Addr:]
			}
		}
		return nil
	}
	flush := func() {
		for ; k < len(ps); k++ {
			report("kboost has %s, objdump nothing", ps[k])
		}
	}
	err = runObjdumpLines(context.Background(), []string{"-d", "-w", "-z", path}, func(line string) error {
		if m := a32SectionLine.FindStringSubmatch(line); m != nil {
			flush()
			sec, ps, k = m[1], ours[m[1]], 0
			it.Reset()
			return nil
		}
		var theirs a32Piece
		switch {
		case parseARM32Line(line, &rec):
			theirs = a32Piece{addr: rec.addr, n: rec.n, arch: decode.ARM}
			if rec.hw {
				theirs.arch = decode.Thumb
			}
			if strings.HasPrefix(rec.text, ".word") || strings.HasPrefix(rec.text, ".short") || strings.HasPrefix(rec.text, ".byte") {
				theirs.arch = nil
			}
		case a32OutOfBounds.MatchString(line):
			a, _ := strconv.ParseUint(a32OutOfBounds.FindStringSubmatch(line)[1], 16, 64)
			theirs = a32Piece{addr: a, trunc: true}
		default:
			m := a32ByteLine.FindStringSubmatch(line)
			if m == nil {
				return nil
			}
			a, _ := strconv.ParseUint(m[1], 16, 64)
			theirs = a32Piece{addr: a, n: 1}
		}
		for k < len(ps) && ps[k].addr < theirs.addr {
			report("kboost has %s, objdump nothing", ps[k])
			k++
		}
		if k == len(ps) || ps[k] != theirs {
			report("objdump has %s, kboost %v", theirs, ps[k:min(k+1, len(ps))])
			if k < len(ps) && ps[k].addr == theirs.addr {
				k++
			}
			return nil
		}
		k++
		switch {
		case theirs.trunc:
			truncated++
			it.Reset()
			return nil
		case theirs.arch == nil:
			data++
			it.Reset()
			return nil
		case theirs.arch == decode.Thumb:
			thumb++
		default:
			arm++
			it.Reset()
		}
		derr := theirs.arch.Decode(&inst, bytesAt(theirs.addr), theirs.addr)
		c, in := decode.Cond(0), false
		if theirs.arch == decode.Thumb {
			c, in = it.Next(&inst)
		}
		tl.check(&inst, derr, c, in, &rec)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	flush()
	return a32Counts{arm: arm, thumb: thumb, data: data, truncated: truncated, mismatches: mismatches}
}

// a32Counts are what compareARMFile compared.
type a32Counts struct{ arm, thumb, data, truncated, mismatches int }

func (c *a32Counts) add(d a32Counts) {
	c.arm, c.thumb, c.data, c.truncated, c.mismatches = c.arm+d.arm, c.thumb+d.thumb, c.data+d.data, c.truncated+d.truncated, c.mismatches+d.mismatches
}

func (c a32Counts) String() string {
	return fmt.Sprintf("%d ARM and %d Thumb instructions, %d data pieces, %d instructions cut by a symbol or section end; %d boundary mismatches",
		c.arm, c.thumb, c.data, c.truncated, c.mismatches)
}

// runObjdumpLines runs arm-linux-gnueabi-objdump with args and calls fn
// for every output line.
func runObjdumpLines(ctx context.Context, args []string, fn func(line string) error) error {
	return objdump.RunLines(ctx, objdump.Config{Objdump: arm32Objdump}, args, func(b []byte) error { return fn(string(b)) })
}

// armmpModule returns a module of Debian's linux-image-armmp package
// (relocatable, with mapping symbols), unpacked into a temporary directory.
func armmpModule(t *testing.T, rel string) string {
	t.Helper()
	deb, err := kimage.FetchDebianKernel(context.Background(), "linux-image-armmp")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cmd := exec.Command("sh", "-c", `dpkg-deb --fsys-tarfile "$1" | tar -x -C "$2" --wildcards "./lib/modules/*/kernel/$3"`, "sh", deb, tmp, rel)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s from %s: %v: %s", rel, deb, err, out)
	}
	m, _ := filepath.Glob(filepath.Join(tmp, "lib", "modules", "*", "kernel", rel))
	if len(m) != 1 {
		t.Fatalf("%s not in %s", rel, deb)
	}
	return m[0]
}

// goARMBinary builds a small Go program for GOARCH=arm (ARM code, literal
// pools, no mapping symbols) in a temporary directory.
func goARMBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n)\n\nfunc main() {\n\tfmt.Println(strings.ToUpper(\"hello\"), len(os.Args))\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "hello-arm")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm", "GOARM=7", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build GOARCH=arm: %v: %s", err, b)
	}
	return out
}

// libcObjects extracts the members of libc6-dev:armhf's libc.a (relocatable
// objects with $t, $a and $d mapping symbols) with ar into a temporary
// directory.
func libcObjects(t *testing.T) []string {
	t.Helper()
	a := armhfPackageFile(t, "libc6-dev", "usr/lib/arm-linux-gnueabihf/libc.a")
	dir := t.TempDir()
	cmd := exec.Command("ar", "x", a)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ar x %s: %v: %s", a, err, out)
	}
	objs, _ := filepath.Glob(filepath.Join(dir, "*.o"))
	if len(objs) < 1000 {
		t.Fatalf("%d objects in %s", len(objs), a)
	}
	return objs
}

// TestOracleARM32Files sweeps whole EM_ARM ELF files as `kboost decode FILE`
// does and compares every boundary and instruction set with objdump's
// disassembly of the same file: Debian armhf's libc.so.6 and coreutils' ls
// (stripped: their dynamic symbols' Thumb bits decide, as in objdump), a
// GOARCH=arm Go build, a module of the armmp kernel and the objects of
// libc6-dev's libc.a (mapping symbols decide).
func TestOracleARM32Files(t *testing.T) {
	oracleGateARM32(t)
	files := []struct {
		name  string
		paths []string
	}{
		{"libc6:armhf libc.so.6", []string{libcArmhf(t)}},
		{"coreutils:armhf ls", []string{armhfPackageFile(t, "coreutils", "bin/ls")}},
		{"GOARCH=arm Go build", []string{goARMBinary(t)}},
		{"armmp module btrfs.ko", []string{armmpModule(t, "fs/btrfs/btrfs.ko")}},
		{"libc6-dev:armhf libc.a objects", libcObjects(t)},
	}
	for _, fl := range files {
		t.Run(strings.Fields(fl.name)[0], func(t *testing.T) {
			tl := newARM32Tally(fl.name)
			var c a32Counts
			for _, p := range fl.paths {
				c.add(compareARMFile(t, tl, p))
			}
			t.Logf("%s (%d files): %s", fl.name, len(fl.paths), c)
			if c.arm+c.thumb == 0 {
				t.Errorf("%s: objdump printed no instruction", fl.name)
			}
			if c.mismatches > 0 {
				t.Errorf("%s: %d boundary mismatches", fl.name, c.mismatches)
			}
			tl.report(&reportOnly{t})
		})
	}
}
