package gdbserial

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"github.com/kboost/kboost/kernelsim"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestA64AsmMatchesGNUAs assembles the runner's instruction forms with the
// package's encoder and with aarch64-linux-gnu-as and compares the words.
func TestA64AsmMatchesGNUAs(t *testing.T) {
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (needs binutils-aarch64-linux-gnu)")
	}
	a := newA64(0x1000)
	var src []string
	add := func(s string, f func()) {
		src = append(src, s)
		n := len(a.w)
		f()
		if len(a.w) != n+1 {
			t.Fatalf("%s: %d words", s, len(a.w)-n)
		}
	}
	add("ldr x3, [x19, #168]", func() { a.ldr(3, 19, 168) })
	add("str xzr, [x19, #24]", func() { a.str(a64XZR, 19, 24) })
	add("ldr w10, [x1, #8]", func() { a.ldrw(10, 1, 8) })
	add("str w0, [x20, #792]", func() { a.strw(0, 20, 792) })
	add("ldp x10, x11, [x3, #256]", func() { a.ldp(10, 11, 3, 256) })
	add("stp x29, x30, [x0, #232]", func() { a.stp(29, 30, 0, 232) })
	add("ldp q16, q17, [x1], #32", func() { a.ldpqPost(16, 17, 1, 32) })
	add("stp q18, q19, [x0], #32", func() { a.stpqPost(18, 19, 0, 32) })
	add("add sp, x9, #0", func() { a.addImm(a64SP, 9, 0) })
	add("add x1, sp, #0", func() { a.addImm(1, a64SP, 0) })
	add("add x21, x20, #512", func() { a.addImm(21, 20, 512) })
	add("subs x9, x9, #1", func() { a.subsImm(9, 9, 1) })
	add("cmp x0, x9", func() { a.subsReg(a64XZR, 0, 9) })
	add("add x1, x20, x9", func() { a.addReg(1, 20, 9) })
	add("mov x30, x20", func() { a.mov(30, 20) })
	add("madd x20, x9, x11, x12", func() { a.madd(20, 9, 11, 12) })
	add("mrs x1, nzcv", func() { a.mrs(1, sysNZCV) })
	add("msr nzcv, x0", func() { a.msr(sysNZCV, 0) })
	add("msr fpcr, xzr", func() { a.msr(sysFPCR, a64XZR) })
	add("msr fpsr, xzr", func() { a.msr(sysFPSR, a64XZR) })
	add("msr tpidr_el0, x0", func() { a.msr(sysTPIDR0, 0) })
	add("mrs x30, tpidr_el0", func() { a.mrs(30, sysTPIDR0) })
	add("svc #0", a.svc)
	add("brk #0x100", func() { a.brk(0x100) })
	add("br x30", func() { a.br(30) })
	add("movi v7.2d, #0", func() { a.moviZero(7) })
	add("movz x1, #0x1234", func() { a.movImm(1, 0x1234) })
	got, err := a.bytes()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := filepath.Join(dir, "a.s")
	o := filepath.Join(dir, "a.o")
	bin := filepath.Join(dir, "a.bin")
	os.WriteFile(s, []byte(strings.Join(src, "\n")+"\n"), 0o644)
	if out, err := exec.Command("aarch64-linux-gnu-as", "-o", o, s).CombinedOutput(); err != nil {
		t.Fatalf("as: %v %s", err, out)
	}
	if out, err := exec.Command("aarch64-linux-gnu-objcopy", "-O", "binary", "-j", ".text", o, bin).CombinedOutput(); err != nil {
		t.Fatalf("objcopy: %v %s", err, out)
	}
	want, _ := os.ReadFile(bin)
	for i := range src {
		g, w := binary.LittleEndian.Uint32(got[4*i:]), binary.LittleEndian.Uint32(want[4*i:])
		if g != w {
			t.Errorf("%-28s kboost %08x, as %08x", src[i], g, w)
		}
	}
}

func TestA64BranchAndSlot(t *testing.T) {
	// B's imm26 counts words from the branch itself (Arm ARM C6.2.26)
	if w, ok := kernelsim.A64B(0x1000, 0x1008); !ok || w != 0x14000002 {
		t.Errorf("B +8 = %08x", w)
	}
	if w, ok := kernelsim.A64B(0x1008, 0x1000); !ok || w != 0x17fffffe {
		t.Errorf("B -8 = %08x", w)
	}
	if _, ok := kernelsim.A64B(0, 128<<20); ok {
		t.Error("B of +128 MiB accepted")
	}
	s, err := kernelsim.BuildSlotA64(0x8b020020, 0x41000800, 0x44000400, kernelsim.PathBoost)
	if err != nil || len(kernelsim.VerifySlotA64(0x8b020020, 0x41000800, 0x44000400, s)) != 0 {
		t.Errorf("boost slot % x %v", s, err)
	}
	s, _ = kernelsim.BuildSlotA64(0x8b020020, 0x41000800, 0x44000400, kernelsim.PathSingleStep)
	if binary.LittleEndian.Uint32(s[4:]) != 0xd42000c0 { // BRK #6: 0xd4200000 | 6<<5
		t.Errorf("single-step slot % x", s)
	}
	var re *kernelsim.SlotRangeError
	if _, err := kernelsim.BuildSlotA64(0x8b020020, 0, 1<<30, kernelsim.PathBoost); !errors.As(err, &re) {
		t.Errorf("slot 1 GiB away: %v", err)
	}
}

func TestSimulateA64(t *testing.T) {
	a := kernelsim.ARM64
	tr := kernelsim.Trial{Scratch: make([]byte, kernelsim.ScratchSize), Stack: make([]byte, kernelsim.StackSize)}
	tr.Regs.GPR[1] = 0
	tr.Regs.GPR[2] = 7
	tr.Regs.Flags = kernelsim.FlagZ
	const at = 0x41000800
	for _, c := range []struct {
		w      uint32
		pc     uint64
		reg    int
		val    uint64
		reason string
	}{
		{0x54000040, at + 8, -1, 0, "b.eq .+8 with Z set: taken"},
		{0x54000041, at + 4, -1, 0, "b.ne .+8 with Z set: not taken"},
		{0xb4000041, at + 8, -1, 0, "cbz x1, .+8 with x1 = 0: taken"},
		{0xb5000041, at + 4, -1, 0, "cbnz x1, .+8: not taken"},
		{0x37080062, at + 12, -1, 0, "tbnz w2, #1, .+12: bit 1 of 7 set"},
		{0x10000020, at + 4, 0, at + 4, "adr x0, .+4"},
		{0xb0000000, at + 4, 0, (at &^ 0xfff) + 0x1000, "adrp x0, .+0x1000"},
		{0x94000010, at + 64, 30, at + 4, "bl .+64: x30 = addr+4"},
		{0xd63f0040, 7, 30, at + 4, "blr x2"},
		{0xd65f0040, 7, 30, 0, "ret x2 (x30 untouched)"},
	} {
		r, err := a.SimulateA64(c.w, at, &tr)
		if err != nil {
			t.Errorf("%s: %v", c.reason, err)
			continue
		}
		if r.PC != c.pc || (c.reg >= 0 && r.GPR[c.reg] != c.val) {
			t.Errorf("%s: pc %#x, x%d %#x", c.reason, r.PC, c.reg, r.GPR[max(c.reg, 0)])
		}
	}
	// a literal in the scratch page is read from the trial
	binary.LittleEndian.PutUint64(tr.Scratch[0x10:], 0x1122334455667788)
	lat := a.Layout.Scratch - 0x100 // ldr x3, .+0x110
	lit := uint32(0x58000000 | (0x110>>2)<<5 | 3)
	if r, err := a.SimulateA64(lit, lat, &tr); err != nil || r.GPR[3] != 0x1122334455667788 || r.PC != lat+4 {
		t.Errorf("ldr x3, literal in scratch: %#x %v", r.GPR[3], err)
	}
	var ee *kernelsim.EmulateError
	if _, err := a.SimulateA64(0x58000020, at, &tr); !errors.As(err, &ee) {
		t.Errorf("literal in the code page modelled: %v", err)
	}
}

// TestA64RunnerImage checks the generated runner without running it: a
// static AArch64 ELF whose segments are the near launch tables (each entry
// "mrs x30, tpidr_el0; b <its word of the code or slot page>") and the far
// runner, which no B from the code or slot page reaches.
func TestA64RunnerImage(t *testing.T) {
	l := kernelsim.ARM64.Layout
	r, err := genA64Runner(l)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(r.elf))
	if err != nil {
		t.Fatal(err)
	}
	if f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_EXEC || len(f.Progs) != 2 {
		t.Fatalf("machine %v type %v, %d segments", f.Machine, f.Type, len(f.Progs))
	}
	near, far := f.Progs[0], f.Progs[1]
	if f.Entry != far.Vaddr || far.Vaddr != emuARM64.base {
		t.Errorf("entry %#x, far segment %#x", f.Entry, far.Vaddr)
	}
	for _, page := range []uint64{l.Orig, l.Slot} {
		if d := int64(far.Vaddr) - int64(page); d < 1<<27 && d > -(1<<27) {
			t.Errorf("the runner at %#x is within a B of %#x", far.Vaddr, page)
		}
	}
	tab := make([]byte, 4*kernelsim.PageSize)
	if _, err := near.ReadAt(tab, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2*kernelsim.PageSize/4; i++ {
		page, at := l.Orig, uint64(4*i)
		if i >= kernelsim.PageSize/4 {
			page, at = l.Slot, uint64(4*i-kernelsim.PageSize)
		}
		e := near.Vaddr + uint64(8*i)
		mrs, b := binary.LittleEndian.Uint32(tab[8*i:]), binary.LittleEndian.Uint32(tab[8*i+4:])
		// B: imm26 words from the branch (sign-extended), Arm ARM C6.2.26
		to := e + 4 + uint64(int64(int32(b<<6)>>6)*4)
		if mrs != 0xd53bd05e || b>>26 != 5 || to != page+at {
			t.Fatalf("launch entry %d at %#x: %08x %08x -> %#x, want %#x", i, e, mrs, b, to, page+at)
		}
	}
	if got := emuARM64.launch(r, l, l.Slot+0x400); got != r.launchSlot+0x800 {
		t.Errorf("launch for slot+0x400 = %#x", got)
	}
}
