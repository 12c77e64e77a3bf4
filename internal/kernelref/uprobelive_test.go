package kernelref

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kboost/kboost/decode"
)

func rootGate(t *testing.T) {
	t.Helper()
	if os.Getenv("KBOOST_ROOT") == "" {
		t.Skip("set KBOOST_ROOT=1 (as root) to probe the running kernel's uprobes")
	}
}

// A few instructions whose fate the reference notes measured on the host.
func TestHostUprobesSmoke(t *testing.T) {
	rootGate(t)
	insns := [][]byte{{0x90}, {0xF4}, {0xC3}, {0x0F, 0x05}, {0xF0, 0xFF, 0x00}, {0xC5, 0xFD, 0x6F, 0x00}, {0xCC}, {0x55}}
	want := []string{"", "ENOTSUPP", "", "", "ENOTSUPP", "ENOTSUPP", "ENOTSUPP", ""}
	for _, bits := range []int{64, 32} {
		got, err := HostUprobes(bits, insns, t.TempDir())
		if bits == 32 && errors.Is(err, decode.ErrNotSupported) {
			t.Logf("32-bit processes: %v", err) // e.g. ia32 emulation off at boot
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range insns {
			if bits == 64 && got[i] != want[i] {
				t.Errorf("%d-bit % x: host says %q, measured %q", bits, insns[i], got[i], want[i])
			}
		}
		t.Logf("%d-bit: %q", bits, got)
	}
}

// The checked-in live table matches the running kernel (when it is the kernel
// that made it; another kernel is another oracle, and its differences are only
// logged). A deterministic sample of the rows, as each registration costs the
// kernel ~50 ms (go run ./scripts/kernelref -uprobes-host redoes all).
func TestHostUprobesTable(t *testing.T) {
	rootGate(t)
	f, err := os.Open("../../boost/testdata/uprobes-x86-host.golden")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := ReadTable(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := KernelRelease()
	if err != nil {
		t.Fatal(err)
	}
	same := len(tab.Header) > 0 && strings.HasSuffix(strings.TrimSuffix(tab.Header[0], "."), "release "+rel)
	var rows []Row
	var insns [][]byte
	for i, r := range tab.Rows {
		if r.Bits == 64 && (i%8 == 0 || !strings.HasPrefix(r.Note, "one-byte") && !strings.HasPrefix(r.Note, "0f ") &&
			!strings.HasPrefix(r.Note, "vex") && !strings.HasPrefix(r.Note, "evex") && i%3 == 0) {
			rows = append(rows, r)
			insns = append(insns, append(append([]byte{}, r.Insn...), r.Rest...))
		}
	}
	got, err := HostUprobes(64, insns, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i, r := range rows {
		w := "accept"
		if got[i] != "" {
			w = "reject " + got[i]
		}
		if want := r.Want.String(); w != want {
			bad++
			if same {
				t.Errorf("line %d: %s: the running kernel says %s", r.Line, r.String(), w)
			} else {
				t.Logf("line %d: %s: kernel %s says %s", r.Line, r.String(), rel, w)
			}
		}
	}
	t.Logf("%d rows probed on %s (table from %q): %d differ", len(rows), rel, tab.Header[0], bad)
}
