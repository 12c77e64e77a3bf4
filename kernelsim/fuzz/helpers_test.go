//go:build linux

package fuzz

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kernelsim"
	"github.com/kboost/kboost/kernelsim/gdbserial"
	"github.com/kboost/kboost/kernelsim/native"
)

// testArches are the x86 sandboxes to test (KBOOST_TEST_ARCHES narrows them,
// as in kernelsim's tests).
func testArches(t testing.TB) []*kernelsim.Arch {
	var as []*kernelsim.Arch
	for _, a := range []*kernelsim.Arch{kernelsim.X86_64, kernelsim.I386} {
		if names := os.Getenv("KBOOST_TEST_ARCHES"); names == "" || slices.Contains(strings.Split(names, ","), a.Name) {
			as = append(as, a)
		}
	}
	return as
}

// sandboxFor opens a's sandbox for one test.
func sandboxFor(t *testing.T, a *kernelsim.Arch) *native.Sandbox {
	t.Helper()
	s, err := native.New(a)
	if err != nil {
		t.Fatalf("%s sandbox: %v", a.Name, err)
	}
	t.Cleanup(func() { s.Close() })
	if a == kernelsim.I386 {
		// the line vm's TestOracleIA32Refused looks for, and the path it expects
		path := map[bool]string{true: "qemu", false: "cpu"}[s.Emulator() != ""]
		if want := os.Getenv("KBOOST_EXPECT_I386_EXEC"); want != "" && want != path {
			t.Fatalf("i386 --exec auto takes the %s path here, but KBOOST_EXPECT_I386_EXEC=%s", path, want)
		}
		t.Logf("i386 --exec auto: %s %s", path, s.Emulator())
	}
	return s
}

// newTestGDB32 starts qemu-arm (oracle runs only).
func newTestGDB32(t *testing.T, o kernelsim.Options) *gdbserial.GDB {
	t.Helper()
	if os.Getenv("KBOOST_ORACLE") == "" {
		t.Skip("set KBOOST_ORACLE=1 (runs qemu-arm-static)")
	}
	g, err := gdbserial.New(kernelsim.ARM32, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func lookup(t *testing.T, name string) *boost.Policy {
	p, err := boost.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
