package decode_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

// TestVendorBranches checks the one vendor difference against objdump, whose
// default (AMD64) and -M intel64 modes disagree on 66-prefixed near branches
// in 64-bit mode.
func TestVendorBranches(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Fatal("objdump is needed (apt-get install binutils)")
	}
	cases := [][]byte{
		{0x66, 0xe8, 0x10, 0x00, 0x00, 0x00},
		{0x66, 0xe9, 0x10, 0x00, 0x00, 0x00},
		{0x66, 0x0f, 0x85, 0x10, 0x00, 0x00, 0x00},
		{0x66, 0x48, 0xe8, 0x10, 0x00, 0x00, 0x00},
	}
	for _, tc := range []struct {
		v     decode.Vendor
		flags []string
	}{{decode.VendorIntel, []string{"-M", "intel64"}}, {decode.VendorAMD, nil}} {
		for _, b := range cases {
			var inst decode.Inst
			if err := decode.DecodeVendor(&inst, b, decode.Mode64, 0, tc.v); err != nil {
				t.Fatalf("%v % x: %v", tc.v, b, err)
			}
			want := objdumpLen(t, b, tc.flags)
			if inst.Len != want {
				t.Errorf("%v % x: kboost %d, objdump %v %d", tc.v, b, inst.Len, tc.flags, want)
			}
		}
	}
}

// objdumpLen returns the length objdump gives the first instruction of b.
func objdumpLen(t *testing.T, b []byte, flags []string) int {
	t.Helper()
	f := filepath.Join(t.TempDir(), "b.bin")
	if err := os.WriteFile(f, append(append([]byte(nil), b...), 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-D", "-w", "-b", "binary", "-m", "i386:x86-64"}, flags...)
	out, err := exec.Command("objdump", append(args, f)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		parts := strings.Split(l, "\t")
		if len(parts) >= 2 && strings.TrimSpace(parts[0]) == "0:" {
			return len(strings.Fields(parts[1]))
		}
	}
	t.Fatalf("no first instruction in objdump output:\n%s", out)
	return 0
}
