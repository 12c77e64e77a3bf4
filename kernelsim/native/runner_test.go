package native

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kboost/kboost/kernelsim"
)

// oracle skips unless KBOOST_ORACLE=1.
func oracle(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") != "1" {
		t.Skip("set KBOOST_ORACLE=1 to run oracle tests")
	}
}

// objdumpInsns disassembles raw code at vma and returns instruction offsets
// and text.
func objdumpInsns(t *testing.T, code []byte, vma uint64, machine string, opts ...string) ([]int, []string) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "code.bin")
	if err := os.WriteFile(p, code, 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-D", "-b", "binary", "-m", machine, "-w", fmt.Sprintf("--adjust-vma=%#x", vma)}, opts...)
	out, err := exec.Command("objdump", append(args, p)...).CombinedOutput()
	if err != nil {
		t.Fatalf("objdump: %v\n%s", err, out)
	}
	re := regexp.MustCompile(`^\s*([0-9a-f]+):\t([0-9a-f ]+)\t(.*)$`)
	var offs []int
	var text []string
	for _, ln := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		a, _ := strconv.ParseUint(m[1], 16, 64)
		offs = append(offs, int(a-vma))
		text = append(text, m[3])
	}
	return offs, text
}

// TestRunnerObjdump checks the hand-assembled runner against objdump: every
// instruction boundary the assembler recorded is one objdump finds, nothing
// decodes as (bad), and the ELF wrapper is what debug/elf and objdump expect.
func TestRunnerObjdump(t *testing.T) {
	oracle(t)
	for _, v := range []struct {
		a   *kernelsim.Arch
		emu bool
	}{{kernelsim.X86_64, false}, {kernelsim.I386, false}, {kernelsim.X86_64, true}, {kernelsim.I386, true}} {
		a := v.a
		name := a.Name
		if v.emu {
			name += "-emu"
		}
		t.Run(name, func(t *testing.T) {
			tg := targets[a]
			rc, img := tg.runnerImage(a.Layout, v.emu)
			machine := "i386:x86-64"
			if !tg.is64 {
				machine = "i386"
			}
			offs, text := objdumpInsns(t, rc.code, rc.entry, machine)
			if len(offs) != len(rc.starts) {
				t.Errorf("objdump found %d instructions, assembler emitted %d", len(offs), len(rc.starts))
			}
			for i := range min(len(offs), len(rc.starts)) {
				if offs[i] != rc.starts[i] {
					t.Fatalf("instruction %d: objdump at +%#x (%s), assembler at +%#x", i, offs[i], text[i], rc.starts[i])
				}
			}
			for i, s := range text {
				if strings.Contains(s, "(bad)") {
					t.Errorf("+%#x: %s", offs[i], s)
				}
			}
			// the return stub is an indirect jump through hDonePtr
			stub := tg.returnStub(rc.done)
			so, st := objdumpInsns(t, stub, 0, machine)
			want := fmt.Sprintf("jmp    *0x%x", tg.dataBase+hDonePtr)
			if tg.is64 {
				want = "jmp    *0x0(%rip)"
				if binary.LittleEndian.Uint64(stub[6:]) != rc.done {
					t.Errorf("stub target %x, want %#x", stub[6:], rc.done)
				}
			}
			if len(so) < 1 || !strings.Contains(st[0], want) || len(stub) > kernelsim.StubSize {
				t.Errorf("return stub disassembles as %q, want %q", st, want)
			}
			f, err := elf.NewFile(bytes.NewReader(img))
			if err != nil {
				t.Fatal(err)
			}
			if f.Entry != rc.entry || len(f.Progs) != 1 || f.Progs[0].Type != elf.PT_LOAD || f.Progs[0].Flags != elf.PF_R|elf.PF_X {
				t.Errorf("ELF: entry %#x progs %+v", f.Entry, f.Progs)
			}
			wantM := elf.EM_X86_64
			if !tg.is64 {
				wantM = elf.EM_386
			}
			if f.Machine != wantM {
				t.Errorf("ELF machine %v, want %v", f.Machine, wantM)
			}
			dir := t.TempDir()
			p := filepath.Join(dir, "runner")
			os.WriteFile(p, img, 0o755)
			out, err := exec.Command("objdump", "-p", p).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "LOAD") || !strings.Contains(string(out), fmt.Sprintf("%016x", tg.codeBase)[16-8:]) {
				t.Errorf("objdump -p: %v\n%s", err, out)
			}
			if testing.Verbose() {
				for i := range text {
					if i < 12 {
						t.Logf("%#x: %s", rc.entry+uint64(offs[i]), text[i])
					}
				}
			}
		})
	}
}

// TestReservedRange: the range kernelsim.Layout.Check keeps case pages out
// of is the one the runner maps (its code page, then its shared data).
func TestReservedRange(t *testing.T) {
	for a, tg := range targets {
		if want := [2]uint64{tg.codeBase, tg.dataBase + dataLen}; a.Reserved != want {
			t.Errorf("%s: Arch.Reserved %#x, the runner occupies %#x", a.Name, a.Reserved, want)
		}
	}
}
