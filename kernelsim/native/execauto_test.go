//go:build linux && amd64

package native

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kboost/kboost/kernelsim"
)

// TestExecAuto: --exec auto runs i386 cases on the CPU exactly where the
// kernel runs 32-bit executables, else under qemu-i386-static; either way
// mov %ecx,%eax (89 c8) copies ecx. KBOOST_EXPECT_I386_EXEC (cpu or qemu)
// states what the host is known to allow: the vm oracle boots a kernel with
// ia32_emulation=0 and sets it to qemu.
func TestExecAuto(t *testing.T) {
	s, err := NewWithOptions(kernelsim.I386, kernelsim.Options{Exec: kernelsim.ExecAuto})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	native := NativeExec(kernelsim.I386)
	got := "cpu"
	if s.Emulator() != "" {
		got = "qemu"
		if filepath.Base(s.Emulator()) != "qemu-i386-static" {
			t.Errorf("emulator %q, want qemu-i386-static", s.Emulator())
		}
	}
	t.Logf("i386 --exec auto: %s (%s); native probe: %v", got, s.Emulator(), native)
	if (native == nil) != (got == "cpu") {
		t.Errorf("auto chose %s, but the native probe says %v", got, native)
	}
	if want := os.Getenv("KBOOST_EXPECT_I386_EXEC"); want != "" && want != got {
		t.Errorf("auto chose %s, want %s (KBOOST_EXPECT_I386_EXEC)", got, want)
	}
	regs := baseRegs(kernelsim.I386, 7)
	r := run1(t, s, kernelsim.Case{Code: []byte{0x89, 0xC8}, Regs: regs})
	if r.Outcome != kernelsim.Completed || r.Regs.GPR[rAX] != regs.GPR[rCX]&0xffffffff || r.Regs.GPR[rCX] != regs.GPR[rCX] {
		t.Errorf("mov %%ecx,%%eax: %v eax=%#x ecx=%#x, want eax=%#x", r.Outcome, r.Regs.GPR[rAX], r.Regs.GPR[rCX], regs.GPR[rCX]&0xffffffff)
	}
}
